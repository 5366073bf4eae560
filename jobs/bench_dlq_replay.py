"""Benchmark: a dead letter replay's driver memory and speed, by backlog size (a local broker, real Spark).

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_dlq_replay.py [--letters 100000,1000000]
        [--chunk-size 10000]

For each backlog size, a dead letter topic of its own is filled with that many letters as Kafka Connect's
dead letter queue writes them (the failed record's key and ~200-byte JSON value, the ``__connect.errors.*``
context headers naming an original topic, partition and offset), then replayed once through a
FileStreamSink connector (driver execution, JSON without schemas) by ``replay_dead_letters`` in this process.
The letters are produced by a child process, so that this process holds only what the replay needs. A
sampling thread records the peak resident memory of this Python process and of Spark's driver JVM during the
replay. Prints, per size, letters replayed, seconds, letters/s and both peaks side by side, and the
ratio of the largest backlog's peaks to the smallest's: flat memory is a ratio near 1. Not a test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import threading
import time
from pathlib import Path


def _fill(bootstrap: str, dlq_topic: str, letters: int) -> None:
    """``letters`` dead letters in ``dlq_topic`` (one partition), for original records of ``orders`` [0..3]."""
    from connect_spark.testing.kafka import create_topic, produce

    create_topic(bootstrap, dlq_topic, 1)

    def records():
        for i in range(letters):
            value = json.dumps({"id": i, "user": f"user-{i % 1000:04d}", "amount": round(i * 0.37, 2),
                                "note": "x" * 120}).encode()
            headers = [("__connect.errors.topic", b"orders"), ("__connect.errors.partition", str(i % 4).encode()),
                       ("__connect.errors.offset", str(i // 4).encode()), ("__connect.errors.stage", b"TASK_PUT"),
                       ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException")]
            yield 0, str(i).encode(), value, headers, 1_700_000_000_000 + i

    produce(bootstrap, dlq_topic, records(), linger_ms=50)


class _PeakRss:
    """Samples the resident memory of this process and of ``jvm_pid`` every 50 ms until stopped."""

    def __init__(self, jvm_pid: int | None) -> None:
        import psutil

        self.python, self.jvm = psutil.Process(), psutil.Process(jvm_pid) if jvm_pid else None
        self.peaks = [0, 0]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peaks[0] = max(self.peaks[0], self.python.memory_info().rss)
            if self.jvm is not None:
                self.peaks[1] = max(self.peaks[1], self.jvm.memory_info().rss)

    def __enter__(self) -> "_PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _jvm_pid(spark) -> int | None:
    try:
        return int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    except Exception:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--letters", default="100000,1000000", help="comma-separated backlog sizes")
    parser.add_argument("--chunk-size", type=int, default=10_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.letters.split(",") if s]

    from connect_spark.config.validation import validate_configs
    from connect_spark.dlq_replay import replay_dead_letters
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.harness import worker_properties

    work = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    broker = LocalKafkaBroker(work / "kafka").start()
    rows = []
    try:
        bootstrap = broker.bootstrap_servers
        worker_props = worker_properties(bootstrap, work)
        spark = None
        for size in sizes:
            name = f"replay-{size}"
            connector_props = {
                "name": name, "connector.class": "FileStreamSink", "topics": "orders",
                "file": str(work / f"{name}.out"), "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": f"{name}-dlq",
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true"}
            started = time.monotonic()
            # in a process of its own: producing a million records leaves the producer's memory behind
            filler = multiprocessing.get_context("spawn").Process(target=_fill, args=(bootstrap, f"{name}-dlq", size))
            filler.start()
            filler.join()
            if filler.exitcode:
                raise SystemExit(f"filling {name}-dlq failed (exit code {filler.exitcode})")
            print(f"{size:,} letters written in {time.monotonic() - started:.1f} s", flush=True)
            worker, (connector,) = validate_configs(worker_props, [connector_props])
            if spark is None:
                spark = get_or_create_session(None, app_name="bench-dlq-replay", conf=worker.spark_conf(), ui=False)
            with _PeakRss(_jvm_pid(spark)) as peak:
                started = time.monotonic()
                result = replay_dead_letters(spark, worker, connector, chunk_size=args.chunk_size)
                seconds = time.monotonic() - started
            written = sum(1 for _ in open(work / f"{name}.out"))
            rows.append((size, result.replayed, written, seconds, peak.peaks[0] / 2**20, peak.peaks[1] / 2**20))
            print(f"{size:,} letters: {result.replayed:,} replayed, {written:,} lines written, {seconds:.1f} s, "
                  f"peak RSS Python {peak.peaks[0] / 2**20:.0f} MB, JVM {peak.peaks[1] / 2**20:.0f} MB", flush=True)
    finally:
        broker.stop()
    print(f"\nchunk size {args.chunk_size:,}; load average {os.getloadavg()[0]:.1f}")
    print("| letters | replayed | lines written | seconds | letters/s | peak RSS Python MB | peak RSS JVM MB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size, replayed, written, seconds, python_mb, jvm_mb in rows:
        print(f"| {size:,} | {replayed:,} | {written:,} | {seconds:.1f} | {replayed / seconds:,.0f} | {python_mb:.0f} "
              f"| {jvm_mb:.0f} |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"\n{last[0]:,} ÷ {first[0]:,} letters: peak RSS Python {last[4] / first[4]:.2f}×, "
              f"JVM {last[5] / first[5]:.2f}×")


if __name__ == "__main__":
    main()
