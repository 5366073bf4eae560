"""Spark's Kafka source, configured from a worker and a connector config: the stream and bounded re-reads.

:func:`read_kafka_stream` is called by :class:`connect_spark.streaming.query.QueryGenerations` for each
query generation; :func:`read_kafka_range` by the executor processor
(:mod:`connect_spark.runtime.processors.executor_tasks`) to re-deliver ``[committed, position)``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.streaming.raw_batch import HEADERS_SQL_TYPE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "kafka_source_options",
    "kafka_batch_options",
    "read_kafka_stream",
    "read_kafka_range",
    "starting_offsets_json",
    "raw_columns",
    "client_options",
    "STREAM_FETCH_MAX_WAIT_MS",
]

log = logging.getLogger(__name__)

#: How long the broker may hold a fetch of Spark's consumers when there is nothing new to return (Kafka's
#: ``fetch.max.wait.ms``, default 500 ms), unless ``consumer.fetch.max.wait.ms`` /
#: ``consumer.override.fetch.max.wait.ms`` says otherwise. A cached consumer keeps a fetch in flight at
#: the log's end after each poll; when production pauses, the next task that reads the partition waits
#: for it to come back empty. With Kafka's default the batch after a pause took ~0.9 s longer on 2 cores
#: (two waves of tasks, ~0.5 s each): the FileStreamSink's p99 latency at 1k rec/s went from 2.2 s to 1.5 s
#: with 100 ms (docs/performance.md). Spark's consumers only poll inside tasks, so a shorter hold adds no
#: idle fetch traffic.
STREAM_FETCH_MAX_WAIT_MS = 100

# Consumer settings Spark's Kafka source manages itself and rejects as ``kafka.*`` options.
_SPARK_MANAGED = {
    "auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer", "interceptor.classes",
    "group.id",
}


def starting_offsets_json(positions: Mapping[TopicPartition, int]) -> str:
    """Spark's ``startingOffsets`` JSON (next offsets to read, the same meaning as Connect's)."""
    by_topic: dict[str, dict[str, int]] = {}
    for tp, offset in sorted(positions.items()):
        by_topic.setdefault(tp.topic, {})[str(tp.partition)] = int(offset)
    return json.dumps(by_topic)


def kafka_source_options(
    client_config: Mapping[str, Any],
    topics: list[str] | None,
    topics_regex: str | None,
    positions: Mapping[TopicPartition, int],
    max_offsets_per_trigger: int | None,
    include_headers: bool = True,
) -> dict[str, str]:
    """Options for ``readStream.format("kafka")``.

    Args:
        client_config: Kafka client settings with Kafka's names (``bootstrap.servers``, security keys,
            the worker's ``consumer.*`` and the connector's ``consumer.override.*``), passed as ``kafka.*``.
        topics, topics_regex: exactly one is set (``subscribe`` or ``subscribePattern``).
        positions: where every known partition starts (concrete offsets, never earliest/latest).
        max_offsets_per_trigger: bound on records per micro-batch, or None.
        include_headers: read record headers (see :mod:`connect_spark.runtime.conversion.header_reads`).

    ``kafka.fetch.max.wait.ms`` is :data:`STREAM_FETCH_MAX_WAIT_MS` unless ``client_config`` sets it.
    """
    options: dict[str, str] = {
        "includeHeaders": str(include_headers).lower(),
        # Connect's consumer resets out-of-range offsets per auto.offset.reset instead of failing.
        "failOnDataLoss": "false",
        "startingOffsets": starting_offsets_json(positions),
    }
    if topics:
        options["subscribe"] = ",".join(topics)
    else:
        options["subscribePattern"] = str(topics_regex)
    if max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(max_offsets_per_trigger)
    options["kafka.fetch.max.wait.ms"] = str(STREAM_FETCH_MAX_WAIT_MS)  # unless the client settings say
    options.update(client_options(client_config))
    return options


def client_options(client_config: Mapping[str, Any]) -> dict[str, str]:
    """Kafka client settings as the source's ``kafka.*`` options (settings Spark manages left out)."""
    options: dict[str, str] = {}
    for key, value in client_config.items():
        if value is None or key in _SPARK_MANAGED:
            continue
        options[key if key.startswith("kafka.") else f"kafka.{key}"] = str(getattr(value, "value", value))
    return options


def kafka_batch_options(
    client_config: Mapping[str, Any], ranges: Mapping[TopicPartition, tuple[int, int]],
    include_headers: bool = True,
) -> dict[str, str]:
    """Options for a bounded ``read.format("kafka")`` of ``[start, end)`` per partition (re-deliveries).

    Args:
        client_config: Kafka client settings (Kafka's names, or ``kafka.*`` options as given to the stream).
        ranges: the first offset to read and the offset after the last, per partition.
        include_headers: read record headers, as the stream does.
    """
    assign: dict[str, list[int]] = {}
    for tp in sorted(ranges):
        assign.setdefault(tp.topic, []).append(tp.partition)
    ends = {tp: end for tp, (_, end) in ranges.items()}
    return {
        "includeHeaders": str(include_headers).lower(),
        "failOnDataLoss": "false",
        "assign": json.dumps(assign),
        "startingOffsets": starting_offsets_json({tp: start for tp, (start, _) in ranges.items()}),
        "endingOffsets": starting_offsets_json(ends),
        **client_options(client_config),
    }


def read_kafka_stream(spark: "SparkSession", options: Mapping[str, str]) -> "DataFrame":
    reader = spark.readStream.format("kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def read_kafka_range(
    spark: "SparkSession", client_config: Mapping[str, Any], ranges: Mapping[TopicPartition, tuple[int, int]],
    include_headers: bool = True,
) -> "DataFrame":
    """A bounded batch read of ``[start, end)`` per partition, with :func:`raw_columns`."""
    reader = spark.read.format("kafka")
    for key, value in kafka_batch_options(client_config, ranges, include_headers=include_headers).items():
        reader = reader.option(key, value)
    return raw_columns(reader.load())


def raw_columns(df: "DataFrame") -> "DataFrame":
    """The Kafka source's columns as the conversion path reads them (timestamps in epoch millis).

    A record without headers has an empty ``headers`` list, never null (Connect's headers are never null
    either), also when the source was read without ``includeHeaders``. Spark's Arrow writer spends ~10 µs of
    JVM CPU a row on a null list of structs against ~1 µs on an empty one (300k cached rows handed to
    ``mapInArrow``: 14 against 3.5 µs a row in all), which every path that hands rows to Python pays.
    """
    from pyspark.sql import functions as F

    empty = F.expr(f"cast(array() as {HEADERS_SQL_TYPE})")
    headers = F.coalesce(F.col("headers"), empty).alias("headers") if "headers" in df.columns else empty.alias("headers")
    return df.select(
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("timestamp_ms"),
        F.col("timestampType").alias("timestamp_type"),
        "key",
        "value",
        headers,
    )
