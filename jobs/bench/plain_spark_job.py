"""Arm a: plain Spark, the baseline: ``readStream.format("kafka") → from_json(schema) → writeStream.format("delta")``.

    python -m jobs.bench.plain_spark_job --bootstrap 127.0.0.1:9092 --topic bench --table /tmp/t \
        --checkpoint /tmp/cp [--available-now | --trigger-ms 1000] [--max-offsets-per-trigger N] \
        [--conf spark.key=value ...]

Started as a child process by :mod:`jobs.bench.arms`. The session comes from
``connect_spark.spark_session.get_or_create_session`` with the same ``--conf`` settings the connect_spark
arms get through their worker's ``spark.*`` keys, so both run on the same jars and Spark settings.
SIGTERM stops the query between batches and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plain_spark_job")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--trigger-ms", type=int, default=1000)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=0)
    parser.add_argument("--conf", action="append", default=[], help="spark.key=value")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from pyspark.sql import functions as F

    from connect_spark.spark_session import get_or_create_session
    from jobs.bench.records import SPARK_SCHEMA_DDL

    conf = dict(item.split("=", 1) for item in args.conf)
    spark = get_or_create_session(app_name="bench-plain-spark", conf=conf, ui=conf.get("spark.ui.enabled") == "true")
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic)
              .option("startingOffsets", "earliest")
              .option("failOnDataLoss", "false"))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    parsed = reader.load().select(F.from_json(F.col("value").cast("string"), SPARK_SCHEMA_DDL).alias("v")).select("v.*")
    writer = parsed.writeStream.format("delta").option("checkpointLocation", args.checkpoint)
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(
        processingTime=f"{args.trigger_ms} milliseconds")
    query = writer.start(args.table)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while query.isActive and not stop.is_set():
        stop.wait(0.2)
    if query.isActive:
        query.stop()
    failure = query.exception()
    spark.stop()
    if failure is not None:
        print(f"plain Spark query failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
