"""The raw micro-batch: the columns every processor reads from Spark's Kafka source, declared once.

:func:`connect_spark.streaming.source.raw_columns` selects these columns from the source (timestamps in
epoch milliseconds, headers an empty list rather than null); the processors, the columnar plan, the batch
sampler and the dead letter replay read or build batches of exactly this shape. ``connect_spark.testing``
builds them for tests (:func:`connect_spark.testing.raw_batches.raw_table`).
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["RAW_COLUMNS", "RAW_ARROW_SCHEMA", "RAW_DDL", "HEADERS_ARROW_TYPE", "HEADERS_SQL_TYPE"]

#: The ``headers`` column: Connect's headers as (key, raw value bytes) pairs, in record order.
HEADERS_ARROW_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

#: The same type in Spark SQL's notation.
HEADERS_SQL_TYPE = "array<struct<key:string,value:binary>>"

#: The raw batch's columns as Arrow types, as Spark hands them to Python (headers never null).
RAW_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp_ms", pa.int64()),
    ("timestamp_type", pa.int32()), ("key", pa.binary()), ("value", pa.binary()),
    pa.field("headers", HEADERS_ARROW_TYPE, nullable=False),
])

#: The raw batch's column names, in order.
RAW_COLUMNS: tuple[str, ...] = tuple(RAW_ARROW_SCHEMA.names)

#: The raw batch's schema in Spark SQL's DDL notation (for ``createDataFrame``).
RAW_DDL = ("topic string, partition int, offset long, timestamp_ms long, timestamp_type int, key binary, "
           f"value binary, headers {HEADERS_SQL_TYPE}")
