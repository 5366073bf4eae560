"""ExtractField$Key / $Value (cases from Kafka's ExtractFieldTest), incl. field.syntax.version."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.extract_field import ExtractFieldKey, ExtractFieldValue


def key_record(key_schema, key):
    return SinkRecord("topic", 0, key_schema, key, None, None, 0)


def key_extract(**props):
    t = ExtractFieldKey()
    t.configure(props)
    return t


def test_schemaless():
    out = key_extract(field="magic").apply(key_record(None, {"magic": 42}))
    assert out.key_schema is None and out.key == 42


def test_schemaless_missing_and_null():
    assert key_extract(field="magic").apply(key_record(None, {"other": 1})).key is None
    assert key_extract(field="magic").apply(key_record(None, None)).key is None


def test_with_schema():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    out = key_extract(field="magic").apply(key_record(schema, Struct(schema).put("magic", 42)))
    assert out.key_schema == Schema.INT32_SCHEMA and out.key == 42


def test_with_schema_null_value():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).optional().build()
    out = key_extract(field="magic").apply(key_record(schema, None))
    assert out.key_schema == Schema.INT32_SCHEMA and out.key is None


def test_unknown_field_with_schema():
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Unknown field: nonexistent"):
        key_extract(field="nonexistent").apply(key_record(schema, Struct(schema).put("magic", 42)))


def test_wrong_value_types():
    with pytest.raises(DataException, match="Only Map objects supported"):
        key_extract(field="f").apply(key_record(None, "string"))
    schema = SchemaBuilder.struct().field("f", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Only Struct objects supported"):
        key_extract(field="f").apply(key_record(schema, {"f": 1}))


def test_default_and_replace_null_with_default():
    schema = SchemaBuilder.struct().field("f", SchemaBuilder.int32().optional().default_value(7).build()).build()
    value = Struct(schema)
    assert key_extract(field="f").apply(key_record(schema, value)).key == 7
    assert key_extract(field="f", **{"replace.null.with.default": "false"}).apply(key_record(schema, value)).key is None


NESTED = SchemaBuilder.struct().field("inner", SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).optional()).build()


def test_v2_nested_struct():
    inner_schema = NESTED.field("inner").schema
    value = Struct(NESTED).put("inner", Struct(inner_schema).put("x", 5))
    t = key_extract(field="inner.x", **{"field.syntax.version": "v2"})
    out = t.apply(key_record(NESTED, value))
    assert out.key == 5 and out.key_schema == Schema.INT32_SCHEMA
    assert t.apply(key_record(NESTED, Struct(NESTED))).key is None  # null parent


def test_v2_nested_map_and_backticks():
    t = key_extract(field="`a.b`.c", **{"field.syntax.version": "V2"})
    assert t.apply(key_record(None, {"a.b": {"c": 3}})).key == 3
    assert t.apply(key_record(None, {"a": {"b": {"c": 3}}})).key is None


def test_v1_treats_dots_literally():
    assert key_extract(field="a.b").apply(key_record(None, {"a.b": 1, "a": {"b": 2}})).key == 1


def test_bad_syntax_version_and_paths():
    with pytest.raises(ConfigException, match="field.syntax.version"):
        key_extract(field="a", **{"field.syntax.version": "V3"})
    with pytest.raises(ConfigException, match="Incomplete backtick pair"):
        key_extract(field="`a.b", **{"field.syntax.version": "V2"})


def test_value_variant():
    t = ExtractFieldValue()
    t.configure({"field": "f"})
    out = t.apply(SinkRecord("t", 0, None, "k", None, {"f": "v"}, 3))
    assert out.value == "v" and out.key == "k" and out.kafka_offset == 3
    assert ExtractFieldValue.kafka_class_name == "org.apache.kafka.connect.transforms.ExtractField$Value"
