"""JDBC sink: rows read from a record frame's Arrow columns equal the rows read from records, for every type.

The sink is an ArrowSinkTask: its rows come from the frame's columns (connectors/jdbc/frame_rows.py) and
records are built only for refused rows. These tests hold the column path to the record path
(connectors/jdbc/rows.py) on the same data: every Connect type the sink writes, every pk.mode, upsert and
delete, db.timezone, and frames in the form Spark converts them (Time as milliseconds). No database.
"""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data.logical import Date, Decimal, Time, Timestamp
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.records import connect_schemas, records_to_frame, with_connect_schemas
from connect_spark.connectors.jdbc.config import JdbcSinkConfig
from connect_spark.connectors.jdbc.frame_rows import frame_batches
from connect_spark.connectors.jdbc.rows import LayoutCache, table_batches

URL = "jdbc:postgresql://localhost:5432/shop"

KEY = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
VALUE = (SchemaBuilder.struct()
         .field("id", Schema.INT64_SCHEMA)
         .field("i8", Schema.OPTIONAL_INT8_SCHEMA)
         .field("i16", Schema.OPTIONAL_INT16_SCHEMA)
         .field("i32", Schema.OPTIONAL_INT32_SCHEMA)
         .field("f32", Schema.OPTIONAL_FLOAT32_SCHEMA)
         .field("f64", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA)
         .field("name", Schema.OPTIONAL_STRING_SCHEMA)
         .field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
         .field("price", Decimal.builder(2).optional().build())
         .field("day", Date.builder().optional().build())
         .field("clock", Time.builder().optional().build())
         .field("at", Timestamp.builder().optional().build())
         .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
         .field("nums", SchemaBuilder.array(Schema.INT32_SCHEMA).optional().build())
         .build())


def _config(**overrides: str) -> JdbcSinkConfig:
    props = {"name": "j", "connection.url": URL, "table.name.format": "t_${topic}"}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return JdbcSinkConfig.parse(props)


def _value(i: int) -> Struct:
    full = i % 4 != 3  # every fourth record has its optional fields null
    v = Struct(VALUE).put("id", i % 7)
    if full:
        (v.put("i8", -i % 100).put("i16", i * 3).put("i32", -i).put("f32", 1.5 * i).put("f64", i / 3)
         .put("ok", i % 2 == 0).put("name", f"n-{i}-é").put("raw", bytes([i % 256, 0, 255]))
         .put("price", decimal.Decimal(i) / 100).put("day", datetime.date(2024, 1, 1) + datetime.timedelta(days=i))
         .put("clock", datetime.time(i % 24, i % 60, 7, 125000))
         .put("at", datetime.datetime(2023, 11, 14, 22, 13, 20, 1000 * i, tzinfo=datetime.timezone.utc))
         .put("tags", [f"t{i}", "x"]).put("nums", [i, i + 1]))
    return v


def _records(count: int, tombstone_every: int = 0, topics: tuple[str, ...] = ("orders",)) -> list[SinkRecord]:
    records = []
    for i in range(count):
        tombstone = tombstone_every and i % tombstone_every == tombstone_every - 1
        records.append(SinkRecord(
            topic=topics[i % len(topics)], kafka_partition=i % 2, key_schema=KEY, key=Struct(KEY).put("id", i % 7),
            value_schema=None if tombstone else VALUE, value=None if tombstone else _value(i),
            kafka_offset=100 + i, timestamp=1_700_000_000_000 + i))
    return records


def _frame(records: list[SinkRecord]) -> pa.Table:
    return with_connect_schemas(records_to_frame(records), KEY, VALUE)


def _described(batches) -> list[tuple]:
    return [(b.table, [(c.name, c.schema, c.primary) for c in b.columns], list(b.rows), b.typed,
             [r.original_kafka_offset for r in b.row_records], list(b.delete_keys),
             [r.original_kafka_offset for r in b.delete_records]) for b in batches]


def _both(config: JdbcSinkConfig, records: list[SinkRecord], frame: pa.Table | None = None) -> tuple[list, list]:
    frame = _frame(records) if frame is None else frame
    key_schema, value_schema = connect_schemas(frame)
    from_frame = frame_batches(frame, key_schema, value_schema, config, LayoutCache(config))
    assert from_frame is not None, "the frame took the record path"
    return _described(table_batches(records, config, LayoutCache(config))), _described(from_frame)


@pytest.mark.parametrize("overrides", [
    {},
    {"pk_mode": "kafka"},
    {"pk_mode": "record_value", "pk_fields": "id", "insert_mode": "upsert"},
    {"pk_mode": "record_key", "insert_mode": "upsert", "delete_enabled": "true"},
    {"pk_mode": "record_key", "insert_mode": "update"},
    {"pk_mode": "record_key", "insert_mode": "upsert", "fields_whitelist": "name,at,clock"},
    {"db_timezone": "Europe/Paris"},
], ids=["insert", "kafka", "record_value", "delete", "update", "whitelist", "timezone"])
def test_rows_from_arrow_equal_rows_from_records_for_every_type(overrides):
    config = _config(**overrides)
    records = _records(40, tombstone_every=9 if config.delete_enabled else 0)
    old, new = _both(config, records)
    assert new == old
    assert old[0][2], "rows were written"


def test_tombstones_without_delete_enabled_are_skipped_and_topics_give_tables():
    config = _config(pk_mode="record_key", insert_mode="upsert")
    records = _records(30, tombstone_every=5, topics=("a", "b"))
    old, new = _both(config, records)
    assert new == old
    assert [b[0].name for b in new] == ["t_a", "t_b"]


def test_time_as_spark_converts_it_milliseconds_of_the_day():
    """Spark has no time-of-day type: a Spark-converted frame carries Time as int milliseconds."""
    config = _config()
    records = _records(12)
    frame = _frame(records)
    value = frame.column("value").combine_chunks()
    index = value.type.get_field_index("clock")
    millis = value.field(index).cast(pa.int32())
    fields = [value.type.field(i) for i in range(value.type.num_fields)]
    fields[index] = pa.field("clock", pa.int32())
    arrays = [value.field(i) if i != index else millis for i in range(value.type.num_fields)]
    spark_like = pa.StructArray.from_arrays(arrays, fields=fields, mask=value.is_null())
    frame = frame.set_column(frame.schema.get_field_index("value"), frame.schema.field("value").with_type(spark_like.type),
                             spark_like)
    old, new = _both(config, records, frame)
    assert new == old


def test_a_schemaless_value_takes_the_record_path():
    config = _config(fields_whitelist="a")
    records = [SinkRecord(topic="o", kafka_partition=0, key_schema=None, key=None, value_schema=None, value={"a": 1},
                          kafka_offset=1)]
    frame = records_to_frame(records)
    key_schema, value_schema = connect_schemas(frame)
    assert frame_batches(frame, key_schema, value_schema, config, LayoutCache(config)) is None


def test_refused_rows_are_built_as_records_on_demand():
    config = _config(pk_mode="record_key", insert_mode="upsert")
    records = _records(20)
    frame = _frame(records)
    (batch,) = frame_batches(frame, *connect_schemas(frame), config, LayoutCache(config))
    kept = batch.row_records[2]
    original = next(r for r in records if r.kafka_offset == kept.kafka_offset)
    assert (kept.topic, kept.kafka_partition, kept.key, kept.value) == (original.topic, original.kafka_partition,
                                                                          original.key, original.value)
