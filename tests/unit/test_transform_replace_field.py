"""ReplaceField$Key / $Value (cases from Kafka's ReplaceFieldTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue


def replace(cls=ReplaceFieldValue, **props):
    t = cls()
    t.configure(props)
    return t


def test_tombstone_passes_through():
    for schema in (None, SchemaBuilder.struct().optional().build()):
        rec = SinkRecord("t", 0, None, None, schema, None, 0)
        assert replace(exclude="a").apply(rec) is rec


def test_schemaless():
    t = replace(exclude="dont", renames="abc:xyz,foo:bar")
    out = t.apply(SinkRecord("t", 0, None, None, None, {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}, 0))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_include_schemaless():
    out = replace(include="abc,foo", renames="abc:xyz").apply(
        SinkRecord("t", 0, None, None, None, {"dont": 1, "abc": 42, "foo": True}, 0))
    assert out.value == {"xyz": 42, "foo": True}


def test_with_schema():
    schema = (SchemaBuilder.struct().name("s")
              .field("dont", Schema.STRING_SCHEMA).field("abc", Schema.INT32_SCHEMA)
              .field("foo", Schema.BOOLEAN_SCHEMA).field("etc", Schema.STRING_SCHEMA).build())
    value = Struct(schema).put("dont", "whatever").put("abc", 42).put("foo", True).put("etc", "etc")
    out = replace(include="abc,foo", renames="abc:xyz,foo:bar").apply(SinkRecord("t", 0, None, None, schema, value, 0))
    assert out.value_schema.name == "s"
    assert [f.name for f in out.value_schema.fields] == ["xyz", "bar"]
    assert out.value.get("xyz") == 42 and out.value.get("bar") is True


def test_exclude_wins_over_include():
    out = replace(include="a,b", exclude="b").apply(SinkRecord("t", 0, None, None, None, {"a": 1, "b": 2}, 0))
    assert out.value == {"a": 1}


def test_config_errors():
    with pytest.raises(ConfigException, match="Invalid rename mapping"):
        replace(renames="a:b:c")
    with pytest.raises(ConfigException, match="Invalid rename mapping"):
        replace(renames="ab")
    # Kafka 4.0 removed the blacklist/whitelist aliases: they are ignored like any unknown key
    assert replace(blacklist="a").exclude == frozenset()


def test_wrong_types():
    with pytest.raises(DataException, match="Only Map objects"):
        replace(exclude="a").apply(SinkRecord("t", 0, None, None, None, 42, 0))


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.int8().optional().default_value(1).build()).build()
    rec = SinkRecord("t", 0, None, None, schema, Struct(schema), 0)
    assert replace(renames="d:e").apply(rec).value.get_without_default("e") == 1
    assert replace(renames="d:e", **{"replace.null.with.default": "false"}).apply(rec).value.get_without_default("e") is None


def test_key_variant():
    out = replace(ReplaceFieldKey, exclude="x").apply(SinkRecord("t", 0, None, {"x": 1, "y": 2}, None, "v", 0))
    assert out.key == {"y": 2} and out.value == "v"
