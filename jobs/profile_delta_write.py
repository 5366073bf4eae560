"""Profile: where one batch of the harness's topic spends its CPU, for plain Spark (arm a) and the plan (arm b).

    /work/main/.venv/bin/python jobs/profile_delta_write.py [--records 1000000] [--reps 5] [--cached]

Starts a local broker, fills a 4-partition topic with the harness's records (:mod:`jobs.bench.records`), then
reads the whole topic as one batch (``spark.read.format("kafka")``) in one session, over and over, in these
variants, each written to Spark's ``noop`` sink (every row computed, nothing stored) and where it converts, to a
Delta table (overwritten each time):

* ``read``: the Kafka source's raw columns as the runtime selects them;
* ``cast``: the value cast to a string (what both conversions start from);
* ``from_json``: arm a's conversion (``from_json`` into the records' schema, its fields as columns);
* ``plan``: the Delta sink's (the plan a DataFrame task compiles for schemaless JSON, the value's fields as
  columns, as the sink writes them).

With ``--cached`` the topic is read once into Spark's cache and every variant reads the cache (the conversions'
own cost, without the Kafka source's); only the ``noop`` sink is used then.

Prints the CPU-seconds of this process tree (the broker's excluded) and the wall time of every run, then the
median of the runs after the first (the JIT's warm-up) per variant and sink. The session is the runtime's
default (``local[*]``). Not a test: figures only.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout

TOPIC = "profile"
PARTITIONS = 4


def _tree_cpu(skip: set[int]) -> float:
    """User + system CPU-seconds of this process and its children, except the processes in ``skip``."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        if process.pid in skip:
            continue
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _variants(spark, bootstrap: str, work: Path, cached: bool = False):
    """Each variant's name and a function building its frame."""
    from pyspark.sql import functions as F

    from connect_spark.columnar.plan import compile_plan
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.streaming.source import raw_columns
    from jobs.bench.records import SPARK_SCHEMA_DDL

    converters = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false"}
    worker = WorkerConfig({"bootstrap.servers": bootstrap, "offset.storage.file.filename": str(work / "offsets"),
                           **converters})
    connector = ConnectorConfig({"name": "profile", "connector.class": "DeltaSink", "topics": TOPIC,
                                 "delta.table.path": str(work / "t"), **converters})
    plan = compile_plan(connector, worker, frame_task=True)
    assert plan is not None

    def read():
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
                .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())

    if cached:
        batch = read().cache()
        batch.count()
        source = lambda: batch  # noqa: E731
    else:
        source = read

    return {
        "read": lambda: raw_columns(source()),
        "cast": lambda: source().select(F.col("value").cast("string").alias("value")),
        "from_json": lambda: source().select(
            F.from_json(F.col("value").cast("string"), SPARK_SCHEMA_DDL).alias("v")).select("v.*"),
        "plan": lambda: plan.apply(raw_columns(source())).good.select("value.*"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profile_delta_write")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cached", action="store_true", help="read the topic once into the cache, noop sink only")
    args = parser.parse_args(argv)

    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic
    from jobs.bench.producing import prefill

    work = Path(tempfile.mkdtemp(prefix="profile-delta-write-"))
    broker = LocalKafkaBroker(work / "kafka", heap="1g").start()
    try:
        create_topic(broker.bootstrap_servers, TOPIC, PARTITIONS)
        filled = prefill(broker.bootstrap_servers, TOPIC, PARTITIONS, args.records)
        print(f"topic: {filled.records} records, {filled.payload_bytes / 1e6:.1f} MB", flush=True)
        spark = get_or_create_session(app_name="profile-delta-write", conf={})
        variants = _variants(spark, broker.bootstrap_servers, work, args.cached)
        cpu: dict[tuple[str, str], list[float]] = {}
        wall: dict[tuple[str, str], list[float]] = {}
        for rep in range(args.reps):
            for name, frame in variants.items():
                for sink in ("noop", "delta") if name in ("from_json", "plan") and not args.cached else ("noop",):
                    started, used = time.monotonic(), _tree_cpu({broker.pid})
                    writer = frame().write.mode("overwrite")
                    if sink == "delta":
                        writer.format("delta").save(str(work / f"table-{name}"))
                    else:
                        writer.format("noop").save()
                    seconds, cpu_seconds = time.monotonic() - started, _tree_cpu({broker.pid}) - used
                    print(f"run {rep} {name:9s} → {sink:5s} wall {seconds:6.2f} s  CPU {cpu_seconds:6.2f} s",
                          flush=True)
                    if rep:
                        cpu.setdefault((name, sink), []).append(cpu_seconds)
                        wall.setdefault((name, sink), []).append(seconds)
        per_million = 1e6 / args.records
        print(f"\nmedians of runs 1..{args.reps - 1} (CPU-s and wall s per million records):")
        for (name, sink), values in cpu.items():
            print(f"  {name:9s} → {sink:5s} CPU {statistics.median(values) * per_million:6.2f}"
                  f"  wall {statistics.median(wall[(name, sink)]) * per_million:6.2f}")
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
