"""Filter and ValueToKey (cases from Kafka's ValueToKeyTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.filter import Filter
from connect_spark.transforms.value_to_key import ValueToKey


def test_filter_drops_everything():
    f = Filter()
    f.configure({})
    assert f.apply(SinkRecord("t", 0, None, None, None, "v", 0)) is None
    assert Filter.kafka_class_name == "org.apache.kafka.connect.transforms.Filter"


def value_to_key(**props):
    t = ValueToKey()
    t.configure(props)
    return t


def test_value_to_key_schemaless():
    out = value_to_key(fields="a,b").apply(SinkRecord("t", 0, None, None, None, {"a": 1, "b": 2, "c": 3}, 0))
    assert out.key == {"a": 1, "b": 2} and out.key_schema is None
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_value_to_key_with_schema():
    schema = (SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA)
              .field("c", Schema.INT32_SCHEMA).build())
    value = Struct(schema).put("a", 1).put("b", 2).put("c", 3)
    out = value_to_key(fields="a,b").apply(SinkRecord("t", 0, None, None, schema, value, 0))
    expected_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    assert out.key_schema == expected_schema
    assert out.key == Struct(expected_schema).put("a", 1).put("b", 2)
    assert out.value is value


def test_value_to_key_errors():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Field does not exist: not_exist"):
        value_to_key(fields="not_exist").apply(SinkRecord("t", 0, None, None, schema, Struct(schema).put("a", 1), 0))
    with pytest.raises(DataException, match="Only Map objects supported"):
        value_to_key(fields="a").apply(SinkRecord("t", 0, None, None, None, None, 0))  # tombstone
    with pytest.raises(ConfigException, match="Empty list"):
        value_to_key(fields="")


def test_value_to_key_replace_null_with_default():
    schema = SchemaBuilder.struct().field("a", SchemaBuilder.int32().optional().default_value(5).build()).build()
    rec = SinkRecord("t", 0, None, None, schema, Struct(schema), 0)
    assert value_to_key(fields="a").apply(rec).key.get_without_default("a") == 5
    assert value_to_key(fields="a", **{"replace.null.with.default": "false"}).apply(rec).key.get_without_default("a") is None
