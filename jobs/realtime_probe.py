"""What Spark 4.2's real-time mode gives a Python sink: end-to-end latency per record, or Spark's refusal.

    .venv-spark-4.2/bin/python jobs/realtime_probe.py --rate 1000 --seconds 25 --batch "10 seconds"
    .venv-spark-4.2/bin/python jobs/realtime_probe.py --batch "1 second" --commit-ms 200 \
        --conf spark.sql.streaming.realTimeMode.minBatchDuration=1000 --conf spark.buffer.size=1024
    .venv-spark-4.2/bin/python jobs/realtime_probe.py --shape mapInArrow         # records Spark's refusal
    .venv-spark-4.2/bin/python jobs/realtime_probe.py --shape kafka              # JVM-only control
    .venv-spark-4.2/bin/python jobs/realtime_probe.py --shape mapInArrow --unchecked \\
        --conf spark.sql.execution.arrow.maxRecordsPerBatch=10                   # outside Spark's allowlist

Needs pyspark >= 4.2 (``trigger(realTime=...)``): the ``.ci/setup`` environment of
``.ci/constraints/spark-4.2.txt``. Starts a local KRaft broker (unless ``--bootstrap``), creates a topic of
``--partitions`` partitions, starts one real-time query in this process reading it with Spark's Kafka source,
waits until the query delivers a first record per partition, then produces ``--rate`` records/s for
``--seconds`` from a child process (kafka-python; each record's Kafka timestamp is its send time), waits until
every record arrived, stops, and prints one JSON document (also written to ``--out``).

Shapes (``--shape``), all reading ``partition``, ``offset`` and ``unix_millis(timestamp)`` from the source:

* ``foreach`` — a Python ``ForeachWriter`` (the sink shape Spark's real-time allowlist admits for Python);
  ``process`` appends the row and its arrival time to a file per task, ``open`` notes when the task began.
  With ``--commit-ms N`` it also commits, every N ms from a thread of the writer, the offset after the last row
  it received to a consumer group (Kafka's admin API, as connect_spark mirrors its commits), and once more in
  ``close``; the probe then also times each record to the first poll (100 ms) that shows it committed, as the
  benchmark harness times its arms (``committed`` in the output): what commits from the executor would add;
* ``kafka`` — no Python at all: Spark's Kafka sink copies each record's timestamp to an output topic whose
  broker stamps the append time (``LogAppendTime``); the latency of the engine itself;
* ``foreachBatch``, ``mapInArrow``, ``udf`` — shapes outside the allowlist: the probe records Spark's refusal.
  With ``--unchecked`` (``spark.sql.streaming.realTimeMode.allowlistCheck=false``, not supported by Spark)
  ``mapInArrow`` and ``udf`` run and record arrivals inside the Python function, writing nothing to a Kafka
  sink, to show where a Python step's batching puts the latency.

Figures (milliseconds, arrival time minus the record's Kafka timestamp): ``all``; ``inside`` — records produced
after the task that delivered them began (inside a long batch), with ``inside_by_age`` splitting them by how
long that task had been running when the record was produced; ``boundary`` — records produced before the task
that delivered them began (they waited through a batch boundary). For ``mapInArrow``/``udf`` a task's begin is
the first arrival it saw. This is delivery to the sink's code, not a commit: a lower bound of what a sink
could commit (``committed``, with ``--commit-ms``, is the commit). Not a test; run it on an idle machine (``load`` in the output is the 1-minute load average
before and after).
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout

SHAPES = ("foreach", "kafka", "foreachBatch", "mapInArrow", "udf")
AGE_EDGES_S = (0, 1, 2, 4, 8, 16, 32, 64)


class ArrivalLog:
    """One line-buffered file of ``partition offset ts_ms arrival_ms`` lines per task, in the executor's
    Python worker; its first line is ``# open <ms> <epoch>``. Picklable: it holds only the folder."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.file = None

    def begin(self, partition: int, epoch: int) -> None:
        name = f"arrivals-{partition}-{epoch}-{os.getpid()}-{uuid.uuid4().hex[:6]}.tsv"
        self.file = open(os.path.join(self.folder, name), "w", buffering=1)
        self.file.write(f"# open {time.time() * 1000:.1f} {epoch}\n")

    def add(self, partition: int, offset: int, ts_ms: int) -> None:
        self.file.write(f"{partition}\t{offset}\t{ts_ms}\t{time.time() * 1000:.1f}\n")

    def end(self) -> None:
        if self.file is not None:
            self.file.write(f"# close {time.time() * 1000:.1f}\n")
            self.file.close()
            self.file = None


class ArrivalWriter(ArrivalLog):
    """The ``foreach`` shape's ``ForeachWriter``: Spark calls ``open`` when a task (one Kafka partition for one
    long batch) starts, ``process`` per row as the Python foreach writer hands it over, ``close`` at the end."""

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.begin(partition_id, epoch_id)
        return True

    def process(self, row) -> None:
        self.add(row.partition, row.offset, row.ts_ms)

    def close(self, error) -> None:
        self.end()


class CommittingArrivalWriter(ArrivalWriter):
    """:class:`ArrivalWriter` that also commits the offset after the last row it received to ``group`` every
    ``commit_ms`` (a thread of its own) and in ``close``; the stand-in for a sink's flush + pre_commit + commit."""

    def __init__(self, folder: str, bootstrap: str, group: str, topic: str, commit_ms: int) -> None:
        super().__init__(folder)
        self.bootstrap, self.group, self.topic, self.commit_ms = bootstrap, group, topic, commit_ms

    def open(self, partition_id: int, epoch_id: int) -> bool:
        super().open(partition_id, epoch_id)
        self.partition = self.next_offset = self.committed = None
        self.stopping = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)
        self.ticker.start()
        return True

    def process(self, row) -> None:
        super().process(row)
        self.partition, self.next_offset = row.partition, row.offset + 1

    def close(self, error) -> None:
        self.stopping.set()
        self.ticker.join()
        self._commit()
        super().close(error)

    def _tick(self) -> None:
        while not self.stopping.wait(self.commit_ms / 1000):
            self._commit()

    def _commit(self) -> None:
        """Commit the offset after the last row received; retries the group coordinator's transient errors
        (a fresh broker creates its offsets topic on the first commit) for up to 10 s."""
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata, TopicPartition

        partition, offset = self.partition, self.next_offset
        if offset is None or offset == self.committed:
            return
        deadline = time.monotonic() + 10
        while True:
            try:
                _group_admin(self.bootstrap).alter_group_offsets(
                    self.group, {TopicPartition(self.topic, partition): OffsetAndMetadata(offset, "", -1)})
                break
            except KafkaError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.committed = offset


_ADMINS: dict = {}


def _group_admin(bootstrap: str):
    """One admin client per Python worker process, kept across tasks (the worker is reused)."""
    if bootstrap not in _ADMINS:
        from kafka import KafkaAdminClient

        _ADMINS[bootstrap] = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="realtime-probe")
    return _ADMINS[bootstrap]


_WORKER_LOGS: dict[tuple[str, int, int], ArrivalLog] = {}


def _worker_log(folder: str) -> ArrivalLog:
    """The ``mapInArrow``/``udf`` shapes' log of the current task, opened at its first arrival."""
    from pyspark import TaskContext

    context = TaskContext.get()
    key = (folder, context.stageId(), context.partitionId())
    if key not in _WORKER_LOGS:
        log = ArrivalLog(folder)
        log.begin(context.partitionId(), context.stageId())
        _WORKER_LOGS[key] = log
    return _WORKER_LOGS[key]


def _produce(bootstrap: str, topic: str, partitions: int, rate: int, seconds: float) -> None:
    from jobs.bench.producing import produce_at_rate

    produce_at_rate(bootstrap, topic, partitions, rate, seconds, start=partitions)


def _start_query(spark, args, topic: str, folder: str, out_topic: str, group: str):
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for item in args.source_option:
        key, value = item.split("=", 1)
        reader = reader.option(key, value)
    rows = reader.load().select("partition", "offset", F.unix_millis("timestamp").alias("ts_ms"))
    shape = args.shape
    if shape == "mapInArrow":
        def record(batches):
            import pyarrow as pa
            for batch in batches:
                log = _worker_log(folder)
                for p, o, t in zip(*(batch.column(i).to_pylist() for i in range(3))):
                    log.add(p, o, t)
                yield pa.RecordBatch.from_pylist([], schema=pa.schema([("value", pa.string())]))
        rows = rows.mapInArrow(record, "value string")
    elif shape == "udf":
        @F.udf("long")
        def record_row(p, o, t):
            _worker_log(folder).add(p, o, t)
            return -1
        rows = rows.select(F.col("offset").cast("string").alias("value"),
                           record_row("partition", "offset", "ts_ms").alias("r")).where("r >= 0").select("value")
    elif shape == "kafka":
        rows = rows.select(F.col("ts_ms").cast("string").alias("value"))
    writer = rows.writeStream.outputMode("update").option("checkpointLocation", os.path.join(folder, "checkpoint"))
    if shape == "foreach" and args.commit_ms:
        writer = writer.foreach(CommittingArrivalWriter(folder, args.bootstrap, group, topic, args.commit_ms))
    elif shape == "foreach":
        writer = writer.foreach(ArrivalWriter(folder))
    elif shape == "foreachBatch":
        writer = writer.foreachBatch(lambda frame, batch_id: None)
    else:
        writer = (writer.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
                  .option("topic", out_topic))
    return writer.trigger(realTime=args.batch).start()


def _read_arrivals(folder: str) -> list[tuple[int, int, int, float, float]]:
    """``(partition, offset, ts_ms, arrival_ms, task_open_ms)`` of every arrival logged so far."""
    found = []
    for path in glob.glob(os.path.join(folder, "arrivals-*.tsv")):
        opened = None
        with open(path) as f:
            for line in f:
                if line.startswith("# open"):
                    opened = float(line.split()[2])
                elif not line.startswith("#") and line.endswith("\n"):
                    p, o, t, a = line.split("\t")
                    found.append((int(p), int(o), int(t), float(a), opened))
    return found


def _read_kafka_arrivals(bootstrap: str, out_topic: str) -> list[tuple[int, int, int, float, float]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(out_topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        return [(r.partition, r.offset, int(r.value), float(r.timestamp), float("nan")) for r in consumer]
    finally:
        consumer.close()


def _percentiles(values) -> dict:
    import numpy as np

    if not len(values):
        return {"records": 0}
    p50, p99 = np.percentile(values, [50, 99])
    return {"records": len(values), "p50_ms": round(float(p50), 1), "p99_ms": round(float(p99), 1),
            "max_ms": round(float(max(values)), 1)}


def summarize(arrivals: list[tuple[int, int, int, float, float]], first_ts_ms: int) -> dict:
    """The figures of the records produced at the fixed rate (Kafka timestamp ≥ ``first_ts_ms``)."""
    measured = [a for a in arrivals if a[2] >= first_ts_ms]
    latency = [a[3] - a[2] for a in measured]
    result = {"all": _percentiles(latency)}
    timed = [a for a in measured if a[4] == a[4]]  # tasks with a known begin
    if timed:
        inside = [a for a in timed if a[2] >= a[4]]
        result["inside"] = _percentiles([a[3] - a[2] for a in inside])
        result["boundary"] = _percentiles([a[3] - a[2] for a in timed if a[2] < a[4]])
        by_age = {}
        for low, high in zip(AGE_EDGES_S, AGE_EDGES_S[1:]):
            chosen = [a[3] - a[2] for a in inside if low * 1000 <= a[2] - a[4] < high * 1000]
            if chosen:
                by_age[f"{low}-{high}s"] = _percentiles(chosen)
        result["inside_by_age"] = by_age
    return result


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="realtime_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=SHAPES, default="foreach")
    parser.add_argument("--rate", type=int, default=1000, help="records/s (default 1000)")
    parser.add_argument("--seconds", type=float, default=25.0, help="how long to produce (default 25)")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", default="10 seconds", help='the real-time batch duration (default "10 seconds")')
    parser.add_argument("--master", default="local[4]")
    parser.add_argument("--unchecked", action="store_true",
                        help="spark.sql.streaming.realTimeMode.allowlistCheck=false (outside what Spark supports)")
    parser.add_argument("--conf", action="append", default=[], help="spark.key=value")
    parser.add_argument("--source-option", action="append", default=[], help="Kafka source option, key=value")
    parser.add_argument("--commit-ms", type=int, default=0,
                        help="foreach: also commit received offsets to a consumer group every N ms (default 0: no)")
    parser.add_argument("--first-record-timeout", type=float, default=180.0,
                        help="seconds to wait for the query's first record per partition (default 180)")
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--out", help="also write the JSON result here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the query, the session and the broker

    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import CLASS_ARCHIVE_KEY, get_or_create_session
    from connect_spark.testing.kafka import create_topic, end_offsets, produce

    work = Path(tempfile.mkdtemp(prefix="realtime-probe-"))
    folder = str(work / "arrivals")
    os.makedirs(folder)
    broker = None
    result: dict = {"shape": args.shape, "rate": args.rate, "seconds": args.seconds, "batch": args.batch,
                    "master": args.master, "partitions": args.partitions, "conf": args.conf,
                    "source_options": args.source_option, "unchecked": args.unchecked, "commit_ms": args.commit_ms,
                    "load_before": _load()}
    spark = query = watcher = None
    try:
        if not args.bootstrap:
            broker = LocalKafkaBroker(work / "kafka", heap="1g").start()
            args.bootstrap = broker.bootstrap_servers
        topic, out_topic = f"probe-{uuid.uuid4().hex[:6]}", f"probe-out-{uuid.uuid4().hex[:6]}"
        create_topic(args.bootstrap, topic, args.partitions)
        create_topic(args.bootstrap, out_topic, args.partitions, {"message.timestamp.type": "LogAppendTime"})
        produce(args.bootstrap, topic, [(p, b"warm-up", b"0", []) for p in range(args.partitions)])

        conf = {CLASS_ARCHIVE_KEY: "off", "spark.ui.enabled": "false", **dict(c.split("=", 1) for c in args.conf)}
        if args.unchecked:
            conf["spark.sql.streaming.realTimeMode.allowlistCheck"] = "false"
        spark = get_or_create_session(master=args.master, app_name="realtime-probe", conf=conf, ui=False)
        spark.sparkContext.setLogLevel("ERROR")
        try:
            group = f"probe-group-{uuid.uuid4().hex[:6]}"
            query = _start_query(spark, args, topic, folder, out_topic, group)
        except Exception as refusal:  # Spark refused the shape when the query was defined or started
            result["refused"] = f"{type(refusal).__name__}: {refusal}"
            return _finish(result, args)

        def arrivals():
            if args.shape == "kafka":
                return _read_kafka_arrivals(args.bootstrap, out_topic)
            return _read_arrivals(folder)

        deadline = time.monotonic() + args.first_record_timeout
        while len(arrivals()) < args.partitions:
            if not query.isActive or time.monotonic() > deadline:
                failure = query.exception()
                result["refused" if failure else "error"] = (
                    f"{type(failure).__name__}: {failure}" if failure
                    else f"no first record per partition within {args.first_record_timeout:.0f} s")
                return _finish(result, args)
            time.sleep(0.5)
        first_ts_ms = int(time.time() * 1000)
        if args.commit_ms:
            from jobs.bench.watchers import ConsumerGroupWatcher

            watcher = ConsumerGroupWatcher(args.bootstrap, group, topic).start()
        producer = multiprocessing.get_context("spawn").Process(
            target=_produce, args=(args.bootstrap, topic, args.partitions, args.rate, args.seconds))
        began = time.monotonic()
        producer.start()
        producer.join()
        result["achieved_rate"] = round(args.rate * args.seconds / (time.monotonic() - began), 1)
        wanted = sum(end_offsets(args.bootstrap, topic).values())
        deadline = time.monotonic() + 120
        while len(found := arrivals()) < wanted and query.isActive and time.monotonic() < deadline:
            time.sleep(1.0)
        result["produced"], result["arrived"] = wanted, len(found)
        result["batches_seen"] = len({a[4] for a in found if a[4] == a[4]})
        result.update(summarize(found, first_ts_ms))
        if watcher is not None:
            from jobs.bench.latency import summarize as summarize_commits
            from jobs.bench.producing import read_timestamps

            watcher.wait_for(end_offsets(args.bootstrap, topic), 60)
            stamps = read_timestamps(args.bootstrap, topic, args.partitions, {p: 1 for p in range(args.partitions)})
            result["committed"] = summarize_commits(stamps, watcher.timeline).as_dict()
        if query.exception():
            result["error"] = str(query.exception())
    finally:
        if watcher is not None:
            watcher.stop()
        if query is not None and query.isActive:
            query.stop()
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return _finish(result, args)


def _finish(result: dict, args: argparse.Namespace) -> int:
    result["load_after"] = _load()
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main())
