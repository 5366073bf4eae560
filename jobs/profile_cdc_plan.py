"""Profile: what converting Debezium's change events costs the Delta sink's plan, beside the hand-written job's parse.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/profile_cdc_plan.py [--events 100000] [--reps 10]

Renders ``--events`` change events of ``jobs/bench/cdc_events.py`` (the CDC benchmark's stream: 80 % updates,
10 % deletes each followed by its tombstone, 10 % inserts) into one raw batch held in Spark's cache (no broker,
no Kafka source: the conversions' own cost), then writes each variant of it to Spark's ``noop`` sink (every row
computed, nothing stored), over and over, in one ``local[2]`` session:

* ``hand``: the hand-written job's conversion (``from_json`` of key and envelope, ``jobs/bench/cdc_arms.py``);
* ``sink``: the Delta sink's (``conf/cdc-delta-sink.properties``' settings: JsonConverter with schemas,
  ``ExtractNewRecordState``), the frame the sink writes in one pass (``PlanOutput.guarded``);
* ``sink proof``: the plan's ok flag alone (the text proof and the guards, with the parse they read);
* ``sink values``: the plan's converted key and value alone (the parse, ``ExtractNewRecordState``, the
  Decimals and Debezium's semantic types);
* ``payload parse``: ``from_json`` of the payload the plan cuts out of the envelope, alone.

Prints wall and CPU seconds (this process and Spark's JVM with its Python workers) of every run, then per
variant the medians of the second half of the runs (the JIT warm by then) per million change events. Not a
test: figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout


def _raw_batch(spark, events: int):
    """The change events (and a tombstone after each delete) as one cached raw batch (``RAW_COLUMNS``)."""
    import pyarrow as pa

    from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_DDL
    from jobs.bench.cdc_events import ChangeStream, ChangeTable, render

    table = ChangeTable("orders")
    templates = table.templates()
    keys, values = [], []
    for change in ChangeStream(events, events, max(1, events // 10)):
        key, value = render(table, templates, change)
        keys.append(key)
        values.append(value)
        if change.op == "d":
            keys.append(key)
            values.append(None)
    n = len(values)
    arrow = pa.table({"topic": [table.topic] * n, "partition": [0] * n, "offset": list(range(n)),
                      "timestamp_ms": [0] * n, "timestamp_type": [0] * n, "key": keys, "value": values,
                      "headers": [[] for _ in range(n)]}, schema=RAW_ARROW_SCHEMA)
    batch = spark.createDataFrame(arrow.to_pandas(), schema=RAW_DDL).repartition(2).cache()
    batch.count()
    return table, batch


def _variants(spark, table, raw, work: Path):
    """Each variant's name and a function building its frame."""
    from pyspark.sql import functions as F

    from connect_spark.columnar.json_columns import envelope_prefix
    from connect_spark.columnar.plan import compile_plan
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from jobs.bench.cdc_arms import ENVELOPE_DDL, KEY_DDL, sink_connector

    connector = sink_connector("profile", table.topic, work / "t")
    worker = WorkerConfig({"bootstrap.servers": "127.0.0.1:9", "offset.storage.file.filename": str(work / "offsets"),
                           "key.converter": connector["key.converter"],
                           "value.converter": connector["value.converter"]})
    plan = compile_plan(ConnectorConfig(connector), worker)
    assert plan is not None, "the sink's settings have no vectorized plan"
    first = bytes(raw.where(F.col("value").isNotNull()).first()["value"]).decode()
    start = len(envelope_prefix(first)[0].encode()) + 1
    payload = F.expr(f"cast(substr(value, {start}, octet_length(value) - {start}) as string)")
    payload_type = spark.createDataFrame([], ENVELOPE_DDL).schema["payload"].dataType
    return {
        "hand": lambda: raw.where(F.col("value").isNotNull()).select(
            "partition", "offset", F.from_json(F.col("key").cast("string"), KEY_DDL)["payload"]["id"].alias("id"),
            F.from_json(F.col("value").cast("string"), ENVELOPE_DDL)["payload"].alias("e")),
        "sink": lambda: plan.apply(raw).guarded,
        "sink proof": lambda: plan.apply(raw).staged.select("offset", "__columnar_ok"),
        "sink values": lambda: plan.apply(raw).staged.select("offset", "__key", "__value"),
        "payload parse": lambda: raw.select(F.from_json(payload, payload_type, {"mode": "PERMISSIVE"}).alias("p")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profile_cdc_plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="change events (tombstones not counted)")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args(argv)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.spark_session import get_or_create_session
    from jobs.bench.cdc_arms import CpuMeter

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="profile-cdc-plan-"))
    spark = get_or_create_session(app_name="profile-cdc-plan", ui=False, conf={
        "spark.master": "local[2]", "spark.driver.memory": "3g", "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC"})
    table, raw = _raw_batch(spark, args.events)
    print(f"batch: {args.events:,} change events, {raw.count():,} records, cached", flush=True)
    variants = _variants(spark, table, raw, work)
    runs: dict[str, list[tuple[float, float]]] = {}
    for rep in range(args.reps):
        for name, frame in variants.items():
            started, meter = time.monotonic(), CpuMeter().start()
            frame().write.format("noop").mode("overwrite").save()
            seconds, cpu_seconds = time.monotonic() - started, meter.stop()
            runs.setdefault(name, []).append((seconds, cpu_seconds))
            print(f"run {rep} {name:13s} wall {seconds:6.2f} s  CPU {cpu_seconds:6.2f} s", flush=True)
    per_million = 1e6 / args.events
    print(f"\nmedians of runs {args.reps // 2}..{args.reps - 1}, per million change events:")
    hand = None
    for name, values in runs.items():
        warm = values[args.reps // 2:]
        wall = statistics.median(w for w, _ in warm) * per_million
        cpu = statistics.median(c for _, c in warm) * per_million
        hand = hand or (wall, cpu)
        print(f"  {name:13s} wall {wall:6.2f} s  CPU {cpu:6.2f} s   (÷ hand: wall {wall / hand[0]:.2f}, "
              f"CPU {cpu / hand[1]:.2f})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
