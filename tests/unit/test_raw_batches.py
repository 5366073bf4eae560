"""The raw batch's shape is declared once, and the test helper builds exactly that shape."""

from __future__ import annotations

import pyarrow as pa

from connect_spark.runtime.conversion.sink_records import raw_records
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_COLUMNS, RAW_DDL
from connect_spark.testing.raw_batches import raw_record_batch, raw_table


def test_the_ddl_names_the_arrow_schema_columns_in_order():
    assert [part.split()[0] for part in RAW_DDL.replace("array<struct<key:string,value:binary>>", "h").split(", ")] \
        == list(RAW_COLUMNS)


def test_raw_table_fills_defaults_and_takes_per_record_columns():
    table = raw_table([b"a", None], partitions=[0, 3], keys=b"k", headers=[[("h", b"1")], []])
    assert table.schema == RAW_ARROW_SCHEMA
    records = list(raw_records(table))
    assert [(r.partition, r.offset, r.key, r.value) for r in records] == [(0, 0, b"k", b"a"), (3, 1, b"k", None)]
    assert records[0].timestamp == 1_700_000_000_000 and list(records[0].headers) == [("h", b"1")]


def test_an_empty_record_batch_keeps_the_schema():
    batch = raw_record_batch([])
    assert isinstance(batch, pa.RecordBatch) and batch.num_rows == 0 and batch.schema == RAW_ARROW_SCHEMA
