"""Benchmark: records/s of no-op tasks in driver mode, executor mode and the Arrow bulk path; driver RSS.

    .venv/bin/python jobs/bench_task_modes.py [--records 1000000] [--rss-records 5000000]

Starts a local broker, fills a 4-partition topic with ~215-byte JSON records (ByteArray converters: the
figures are the runtime's, not a decoder's), starts one SparkSession (local[*]) that every arm shares,
then drains the topic with ``available-now`` through:

  a. a no-op record task in driver mode,
  b. the same task in executor mode,
  c. a no-op ArrowSinkTask in executor mode,

and prints records/s per arm (Spark start-up excluded: the session is warm). Then the driver's peak RSS
(the Python driver process, and the JVM) while executor mode drains ``--rss-records`` records in one
batch of 0.1M versus one batch of all of them. Not a test: figures only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import psutil

ARMS = {
    "a. no-op record task, driver mode": ("connect_spark.testing.noop.NoopSinkConnector", "driver"),
    "b. no-op record task, executor mode": ("connect_spark.testing.noop.NoopSinkConnector", "executor"),
    "c. no-op Arrow bulk task, executor mode": ("connect_spark.testing.noop.NoopArrowSinkConnector", "executor"),
}


def _record(i: int) -> bytes:
    return json.dumps({
        "id": i, "user": f"user-{i % 1000:04d}", "amount": round(i * 0.37, 2), "currency": "EUR",
        "status": "paid", "country": "DE", "device": "mobile", "ts": 1_700_000_000_000 + i,
        "campaign": "autumn-sale-2026", "score": (i % 97) / 97, "note": "x" * 24,
    }).encode()


class PeakRss:
    """Samples the RSS of this process and of its JVM child every 100 ms."""

    def __init__(self) -> None:
        self.python = self.jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            self.python = max(self.python, me.memory_info().rss)
            jvm = 0
            for child in me.children(recursive=True):
                try:
                    if "java" in child.name():
                        jvm += child.memory_info().rss
                except psutil.NoSuchProcess:  # a child that just ended
                    continue
            self.jvm = max(self.jvm, jvm)
            time.sleep(0.1)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _drain(spark, bootstrap, work, topic, name, connector_class, mode, max_offsets):
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties

    worker = worker_properties(bootstrap, work / name, task_execution_mode=mode, max_offsets_per_trigger=max_offsets,
                               offset_flush_interval_ms=10_000)
    connector = {"name": name, "connector.class": connector_class, "topics": topic, "tasks.max": "2"}
    started = time.monotonic()
    code = run_standalone(worker, [connector], available_now=True, spark=spark)
    return time.monotonic() - started, code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rss-records", type=int, default=5_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic, produce

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench-modes-"))
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "bench", 4)
        started = time.monotonic()
        produce(bootstrap, "bench", ((None, None, _record(i), []) for i in range(args.records)))
        print(f"produced {args.records:,} records in {time.monotonic() - started:.1f} s")
        spark = get_or_create_session(app_name="bench-modes", ui=False,
                                      conf={"spark.master": "local[*]", "spark.driver.memory": "4g"})
        _drain(spark, bootstrap, work, "bench", "warm-up", *ARMS["b. no-op record task, executor mode"], 100_000)
        results = {}
        for label, (connector_class, mode) in ARMS.items():
            elapsed, code = _drain(spark, bootstrap, work, "bench", label.split(".")[0] + "-arm", connector_class,
                                   mode, 100_000 if mode == "driver" else 1_000_000)
            results[label] = args.records / elapsed
            print(f"{label}: {args.records:,} records in {elapsed:.1f} s = {results[label]:,.0f} records/s (exit {code})")
        if args.rss_records:
            create_topic(bootstrap, "bench-rss", 4)
            produce(bootstrap, "bench-rss", ((None, None, _record(i), []) for i in range(args.rss_records)))
            for batch in (100_000, args.rss_records):
                before = psutil.Process().memory_info().rss
                with PeakRss() as peak:
                    elapsed, code = _drain(spark, bootstrap, work, "bench-rss", f"rss-{batch}",
                                           ARMS["c. no-op Arrow bulk task, executor mode"][0], "executor", batch)
                print(f"driver RSS, executor mode, batches of {batch:,} ({args.rss_records:,} records, {elapsed:.1f} s):"
                      f" python peak {peak.python / 2**20:,.0f} MiB (+{(peak.python - before) / 2**20:,.0f} MiB),"
                      f" JVM peak {peak.jvm / 2**20:,.0f} MiB (exit {code})")
        spark.stop()
    print(json.dumps({k: round(v) for k, v in results.items()}))
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
