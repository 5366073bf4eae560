"""InsertField$Key / $Value (cases from Kafka's InsertFieldTest)."""

from __future__ import annotations

import datetime

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct, Timestamp
from connect_spark.transforms.insert_field import InsertFieldKey, InsertFieldValue, InsertionSpec

UTC = datetime.timezone.utc
PROPS = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "offset.field": "offset_field!",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}


def value_insert(**props):
    t = InsertFieldValue()
    t.configure(props)
    return t


def test_spec_parsing():
    assert InsertionSpec.parse("a!") == ("a", False)
    assert InsertionSpec.parse("a?") == ("a", True)
    assert InsertionSpec.parse("a") == ("a", True)
    assert InsertionSpec.parse(None) is None


def test_with_schema():
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.OPTIONAL_INT64_SCHEMA).build()
    rec = SinkRecord("test", 0, None, None, schema, Struct(schema).put("magic", 42), 42, timestamp=1_000_000)
    out = value_insert(**PROPS).apply(rec)
    s = out.value_schema
    assert s.name == "name" and s.version == 1 and s.doc == "doc"
    assert s.field("magic").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert s.field("topic_field").schema == Schema.STRING_SCHEMA
    assert s.field("partition_field").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert s.field("offset_field").schema == Schema.INT64_SCHEMA
    assert s.field("timestamp_field").schema == Timestamp.builder().optional().build()
    assert s.field("instance_id").schema == Schema.OPTIONAL_STRING_SCHEMA
    v = out.value
    assert v.get("magic") == 42 and v.get("topic_field") == "test" and v.get("partition_field") == 0
    assert v.get("offset_field") == 42
    assert v.get("timestamp_field") == datetime.datetime(1970, 1, 1, 0, 16, 40, tzinfo=UTC)
    assert v.get("instance_id") == "my-instance-id"
    # cached
    assert value_insert(**PROPS).apply(rec).value_schema == s


def test_schemaless():
    rec = SinkRecord("test", 0, None, None, None, {"magic": 42}, 42, timestamp=123)
    out = value_insert(**PROPS).apply(rec)
    assert out.value == {"magic": 42, "topic_field": "test", "partition_field": 0, "offset_field": 42,
                         "timestamp_field": 123, "instance_id": "my-instance-id"}


def test_missing_partition_and_timestamp_are_skipped():
    rec = SinkRecord("test", None, None, None, None, {}, 5, timestamp=None)
    out = value_insert(**PROPS).apply(rec)
    assert "partition_field" not in out.value and "timestamp_field" not in out.value


def test_null_value_passes_through():
    for schema in (None, SchemaBuilder.struct().optional().build()):
        rec = SinkRecord("test", 0, None, None, schema, None, 0)
        assert value_insert(**PROPS).apply(rec) is rec


def test_static_field_alone():
    out = value_insert(**{"static.field": "s", "static.value": "v"}).apply(SinkRecord("t", 0, None, None, None, {}, 0))
    assert out.value == {"s": "v"}


def test_wrong_types():
    with pytest.raises(DataException, match="Only Map objects supported"):
        value_insert(**PROPS).apply(SinkRecord("t", 0, None, None, None, "string", 0))
    with pytest.raises(DataException, match="Only Struct objects supported"):
        value_insert(**PROPS).apply(SinkRecord("t", 0, None, None, Schema.STRING_SCHEMA, "s", 0))


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.int32().optional().default_value(3).build()).build()
    rec = SinkRecord("t", 0, None, None, schema, Struct(schema), 0)
    assert value_insert(**{"topic.field": "t"}).apply(rec).value.get_without_default("d") == 3
    t = value_insert(**{"topic.field": "t", "replace.null.with.default": "false"})
    assert t.apply(rec).value.get_without_default("d") is None


def test_key_variant():
    t = InsertFieldKey()
    t.configure({"topic.field": "topic_field"})
    out = t.apply(SinkRecord("test", 0, None, {"magic": 42}, None, "v", 0))
    assert out.key == {"magic": 42, "topic_field": "test"} and out.value == "v"
