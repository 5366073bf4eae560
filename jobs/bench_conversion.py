"""Benchmark: per-record conversion vs the vectorized plan, on 1M JSON records (no broker).

    .venv/bin/python jobs/bench_conversion.py [--records 1000000] [--per-record-records 200000]
        [--connector-props jobs/bench_field_chain.properties]

Generates ~215-byte JSON records with 11 fields in Spark (schemaless, and in the schemas.enable=true
envelope), caches them as parquet under the temp dir, and times on the raw layout:
(a) RecordConverter over Arrow batches (on ``--per-record-records`` rows; the rate is per record),
(b) ``ColumnarPlan.apply`` + ``good.toArrow()``, (c) (b) + ``frame_to_records``. Prints records/s.
``--connector-props`` merges a properties file into the benchmark connector's config, e.g. a transform
chain (``jobs/bench_field_chain.properties``: InsertField, MaskField, Cast, ValueToKey). Not a test.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

ENVELOPE_SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False}, {"field": "user", "type": "string", "optional": False},
    {"field": "amount", "type": "double", "optional": False}, {"field": "currency", "type": "string", "optional": False},
    {"field": "status", "type": "string", "optional": False}, {"field": "country", "type": "string", "optional": False},
    {"field": "device", "type": "string", "optional": False}, {"field": "ts", "type": "int64", "optional": False},
    {"field": "campaign", "type": "string", "optional": False}, {"field": "score", "type": "double", "optional": False},
    {"field": "note", "type": "string", "optional": False}]}


def _generate(spark, records: int, envelope: bool, path: Path):
    from pyspark.sql import functions as F

    if not path.exists():
        i = F.col("id")
        payload = F.to_json(F.struct(
            i.alias("id"), F.format_string("user-%04d", i % 1000).alias("user"),
            (F.round(i * 0.37, 2) + F.lit(0.01)).alias("amount"), F.lit("EUR").alias("currency"),
            F.lit("paid").alias("status"), F.lit("DE").alias("country"), F.lit("mobile").alias("device"),
            (F.lit(1_700_000_000_000) + i).alias("ts"), F.lit("autumn-sale-2026").alias("campaign"),
            ((i % 97) / 97 + F.lit(0.001)).alias("score"), F.lit("x" * 24).alias("note")))
        if envelope:
            payload = F.concat(F.lit('{"schema":' + json.dumps(ENVELOPE_SCHEMA, separators=(",", ":"))
                                     + ',"payload":'), payload, F.lit("}"))
        raw = spark.range(records).select(
            F.lit("orders").alias("topic"), (i % 4).cast("int").alias("partition"), i.alias("offset"),
            (F.lit(1_700_000_000_000) + i).alias("timestamp_ms"), F.lit(0).alias("timestamp_type"),
            F.col("id").cast("string").cast("binary").alias("key"), payload.cast("binary").alias("value"),
            F.expr("cast(array() as array<struct<key:string,value:binary>>)").alias("headers"))
        raw.write.parquet(str(path))
    return spark.read.parquet(str(path))


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>12,.0f} rec/s ({n:,} in {seconds:.1f}s)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-record-records", type=int, default=200_000)
    parser.add_argument("--connector-props", help="a .properties file merged into the connector config "
                                                  "(e.g. transforms.*)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.columnar.plan import compile_plan
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.properties import load_properties
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.jvm import ensure_resolved
    from connect_spark.runtime.conversion.sink_records import raw_records
    from connect_spark.runtime.tasks.builder import build_task_plugins
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.harness import worker_properties

    extra = load_properties(args.connector_props) if args.connector_props else {}
    ensure_resolved()
    work = Path(tempfile.gettempdir()) / "connect-spark-bench-conversion"
    spark = get_or_create_session(master="local[2]", app_name="bench-conversion", ui=False,
                                  conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "3g"})
    try:
        for envelope in (False, True):
            label = "schemas.enable=" + str(envelope).lower()
            raw = _generate(spark, args.records, envelope, work / f"{label}-{args.records}")
            size = raw.selectExpr("avg(length(value))").first()[0]
            worker = WorkerConfig(worker_properties("127.0.0.1:9", tempfile.mkdtemp()))
            connector = ConnectorConfig({
                "name": "bench", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector",
                "topics": "orders", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": str(envelope).lower(), **extra})
            chain = f", transforms={extra['transforms']}" if "transforms" in extra else ""
            print(f"\n== JsonConverter {label}{chain}: {args.records:,} records, value {size:.0f} bytes avg")

            sample = raw.limit(args.per_record_records).toArrow()
            converter = build_task_plugins(connector, worker, 0).converter
            start = time.perf_counter()
            converted = 0
            for batch in sample.to_batches(max_chunksize=10_000):
                converted += len(converter.convert(raw_records(batch)).records)
            per_record = time.perf_counter() - start
            print(f"(a) per-record RecordConverter : {_rate(sample.num_rows, per_record)}")

            plan = compile_plan(connector, worker)
            if plan is None:
                raise SystemExit("this connector config has no vectorized plan (see the INFO log)")
            start = time.perf_counter()
            out = plan.apply(raw)
            table = out.good.toArrow()
            vectorized = time.perf_counter() - start
            print(f"(b) vectorized plan → Arrow    : {_rate(table.num_rows, vectorized)}"
                  f"  fallback rows: {out.fallback.count()}")
            start = time.perf_counter()
            records = out.to_records(table)
            to_records = time.perf_counter() - start
            print(f"(c) (b) + frame_to_records     : {_rate(len(records), vectorized + to_records)}"
                  f"  (frame_to_records alone {_rate(len(records), to_records)})")
            a = sample.num_rows / per_record
            print(f"ratio b/a = {table.num_rows / vectorized / a:.1f}x, c/a = "
                  f"{len(records) / (vectorized + to_records) / a:.1f}x")
            del records, table
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
