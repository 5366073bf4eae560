"""Rows of a real-time query as raw batches, and a partition's records re-read straight from Kafka.

Called by :class:`connect_spark.runtime.realtime.partition_task.PartitionTask` in the executor's Python worker:
:func:`raw_batch` turns the rows its writer buffered (Spark ``Row`` objects, or tuples of the same
:data:`~connect_spark.streaming.raw_batch.RAW_COLUMNS`) into the Arrow batch the conversion path reads;
:func:`read_range` re-reads ``[start, end)`` of one partition with a plain consumer, for an attempt whose
partition is committed below where Spark's batch starts (a ``pre_commit`` that lagged at the last batch end,
or a task that seeks back in ``open``). Nothing here touches Spark.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA

__all__ = ["raw_batch", "read_range"]

log = logging.getLogger(__name__)

#: How long a re-read may go without a record before it gives up (the records exist: Spark read past them).
READ_RANGE_STALL_S = 30.0


def raw_batch(rows: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """An Arrow batch of :data:`~connect_spark.streaming.raw_batch.RAW_ARROW_SCHEMA` from rows in that column order
    (``headers`` a list of ``(key, value)`` pairs)."""
    width = len(RAW_ARROW_SCHEMA.names)
    columns: list[Any] = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(width)]
    columns[width - 1] = [[{"key": h[0], "value": h[1]} for h in headers] if headers else []
                          for headers in columns[width - 1]]
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, RAW_ARROW_SCHEMA)],
                                      schema=RAW_ARROW_SCHEMA)


def read_range(client_kwargs: Mapping[str, Any], tp: TopicPartition, start: int, end: int) -> list[tuple]:
    """The records of ``tp`` in ``[start, end)`` as raw rows (records deleted by retention are simply absent).

    Raises:
        ConnectException: no record came for :data:`READ_RANGE_STALL_S` before ``end`` was reached.
    """
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition as KafkaTopicPartition

    kafka_tp = KafkaTopicPartition(tp.topic, tp.partition)
    consumer = KafkaConsumer(**{**client_kwargs, "group_id": None, "enable_auto_commit": False,
                                "auto_offset_reset": "earliest", "client_id": "connect-spark-realtime-reread"})
    rows: list[tuple] = []
    try:
        consumer.assign([kafka_tp])
        consumer.seek(kafka_tp, start)
        last_progress = time.monotonic()
        while consumer.position(kafka_tp) < end:
            if time.monotonic() - last_progress > READ_RANGE_STALL_S:
                raise ConnectException(f"Re-reading {tp.topic}[{tp.partition}] from {start} to {end} stalled at "
                                       f"{consumer.position(kafka_tp)}")
            for record in consumer.poll(timeout_ms=500).get(kafka_tp, ()):
                last_progress = time.monotonic()
                if record.offset < end:
                    rows.append(_row(record))
    finally:
        consumer.close()
    log.info("%s[%d]: re-read %d record(s) of %d..%d", tp.topic, tp.partition, len(rows), start, end)
    return rows


def _row(record: Any) -> tuple:
    headers: Iterable = record.headers or ()
    return (record.topic, record.partition, record.offset, record.timestamp, record.timestamp_type,
            record.key, record.value, [(k, v) for k, v in headers])
