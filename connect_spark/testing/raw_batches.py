"""Raw micro-batches for tests: Arrow tables shaped as Spark's Kafka source delivers them to a processor.

The columns and types are the runtime's own (:data:`connect_spark.streaming.raw_batch.RAW_ARROW_SCHEMA`),
so a test that feeds a processor, a converter or the columnar plan directly builds exactly what a
running query would hand it.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pyarrow as pa

from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA

__all__ = ["raw_table", "raw_record_batch", "Header"]

Header = tuple[str, "bytes | None"]


def raw_table(values: Sequence[bytes | None], *, topic: str | Sequence[str] = "t",
              partitions: int | Sequence[int] = 0, offsets: Sequence[int] | None = None,
              keys: bytes | None | Sequence[bytes | None] = None, timestamps: Sequence[int] | None = None,
              timestamp_types: int | Sequence[int] = 0,
              headers: Sequence[Iterable[Header]] | None = None) -> pa.Table:
    """A raw batch holding one record per value.

    Args:
        values: each record's value bytes (``None``: a tombstone).
        topic, partitions, keys, timestamp_types: one value for every record, or one per record.
        offsets: each record's offset (default ``0, 1, 2, ...``).
        timestamps: epoch milliseconds (default ``1_700_000_000_000 + offset``).
        headers: each record's headers as ``(key, value bytes)`` pairs (default none).
    """
    n = len(values)

    def each(value, kinds: tuple[type, ...]) -> list:
        return [value] * n if value is None or isinstance(value, kinds) else list(value)

    offsets = list(range(n)) if offsets is None else list(offsets)
    return pa.table({
        "topic": each(topic, (str,)), "partition": each(partitions, (int,)), "offset": offsets,
        "timestamp_ms": [1_700_000_000_000 + o for o in offsets] if timestamps is None else list(timestamps),
        "timestamp_type": each(timestamp_types, (int,)), "key": each(keys, (bytes,)), "value": list(values),
        "headers": [[{"key": k, "value": v} for k, v in h] for h in headers] if headers is not None else [[]] * n,
    }, schema=RAW_ARROW_SCHEMA)


def raw_record_batch(values: Sequence[bytes | None], **columns) -> pa.RecordBatch:
    """:func:`raw_table` as one record batch (what ``mapInArrow`` hands a task); same arguments."""
    table = raw_table(values, **columns)
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=RAW_ARROW_SCHEMA)
