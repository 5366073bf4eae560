"""Arm s: the ceiling of a Python record path on this machine: Spark's Kafka source → ``mapInArrow`` (no-op).

    python -m jobs.bench.ceiling_job --bootstrap 127.0.0.1:9092 --topic bench --checkpoint /tmp/cp \
        [--available-now | --trigger-ms 1000] [--max-offsets-per-trigger N] [--conf spark.key=value ...]

Started as a child process by :mod:`jobs.bench.arms`. Every micro-batch of Spark's Kafka source (its own
columns, no headers: what connect_spark reads for a task that does not read headers) crosses into
Spark's Python workers as Arrow batches, where a function counts the rows and yields nothing; Spark's
``noop`` sink ends the plan. That is everything a Python sink task cannot avoid (Kafka read, Arrow
serialization, the Python worker boundary, one Spark job per micro-batch) and nothing else, so the
per-record arms (c, d2) are reported as a share of it. Same session (``get_or_create_session``), Spark
settings, batch bound and trigger as arms a, c and d2. SIGTERM stops the query between batches, exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Iterator


def count_rows(batches: Iterator) -> Iterator:
    """The no-op ``mapInArrow`` function: touches every Arrow batch, yields nothing."""
    rows = 0
    for batch in batches:
        rows += batch.num_rows
    return iter(())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ceiling_job")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--trigger-ms", type=int, default=1000)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=0)
    parser.add_argument("--conf", action="append", default=[], help="spark.key=value")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from connect_spark.spark_session import get_or_create_session

    conf = dict(item.split("=", 1) for item in args.conf)
    spark = get_or_create_session(app_name="bench-ceiling", conf=conf, ui=conf.get("spark.ui.enabled") == "true")
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic)
              .option("startingOffsets", "earliest")
              .option("failOnDataLoss", "false"))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    crossed = reader.load().mapInArrow(count_rows, "rows long")
    writer = crossed.writeStream.format("noop").option("checkpointLocation", args.checkpoint)
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(
        processingTime=f"{args.trigger_ms} milliseconds")
    query = writer.start()

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
        print(f"ceiling query failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
