"""What the benchmark's hand-written Spark jobs share: their arguments, the Kafka stream, running the query.

Used by :mod:`jobs.bench.plain_spark_job` (arm a) and :mod:`jobs.bench.ceiling_job` (arm s), each a child
process started by :mod:`jobs.bench.arms`. The session comes from
``connect_spark.spark_session.get_or_create_session`` with the same ``--conf`` settings the connect_spark
arms get through their worker's ``spark.*`` keys, so every arm runs on the same jars and Spark settings. Their
driver JVM starts without connect_spark's class data sharing archive (:mod:`connect_spark.jvm.class_archive`),
as a job written by hand would.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

__all__ = ["job_arguments", "session_and_stream", "run_query"]


def job_arguments(prog: str) -> argparse.ArgumentParser:
    """The arguments every job takes; a job adds its own before parsing."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--trigger-ms", type=int, default=1000)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=0)
    parser.add_argument("--conf", action="append", default=[], help="spark.key=value")
    return parser


def session_and_stream(args: argparse.Namespace, app_name: str) -> tuple["SparkSession", "DataFrame"]:
    """The session and Spark's Kafka source on ``--topic`` from its earliest offsets (``--max-offsets-per-trigger``
    applied when set)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    from connect_spark.spark_session import CLASS_ARCHIVE_KEY, get_or_create_session

    conf = {CLASS_ARCHIVE_KEY: "off", **dict(item.split("=", 1) for item in args.conf)}
    spark = get_or_create_session(app_name=app_name, conf=conf, ui=conf.get("spark.ui.enabled") == "true")
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic)
              .option("startingOffsets", "earliest")
              .option("failOnDataLoss", "false"))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    return spark, reader.load()


def run_query(spark: "SparkSession", writer: "DataStreamWriter", args: argparse.Namespace,
              start: Callable[["DataStreamWriter"], "StreamingQuery"], what: str) -> int:
    """Start the query with the job's trigger and checkpoint, run it until it ends (AvailableNow) or SIGTERM /
    SIGINT stops it between batches, stop the session; the exit code (1 when the query failed)."""
    writer = writer.option("checkpointLocation", args.checkpoint)
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(
        processingTime=f"{args.trigger_ms} milliseconds")
    query = start(writer)

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
        print(f"{what} failed: {failure}", file=sys.stderr)
        return 1
    return 0
