"""HeaderFrom$Key / $Value (cases from Kafka's HeaderFromTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, Headers, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.header_from import HeaderFromKey, HeaderFromValue

SCHEMA = SchemaBuilder.struct().field("f1", Schema.STRING_SCHEMA).field("f2", Schema.INT32_SCHEMA).build()


def transform(cls=HeaderFromValue, **props):
    t = cls()
    t.configure(props)
    return t


def value_record(schema, value, headers=None):
    return SinkRecord("topic", 0, None, None, schema, value, 0, headers=headers or Headers())


def test_copy_with_schema():
    original_headers = Headers().add("existing", "x", Schema.STRING_SCHEMA)
    rec = value_record(SCHEMA, Struct(SCHEMA).put("f1", "a").put("f2", 1), original_headers)
    out = transform(fields="f1,f2", headers="h1,h2", operation="copy").apply(rec)
    assert out.value == rec.value and out.value_schema == SCHEMA
    assert [(h.key, h.value, h.schema) for h in out.headers] == [
        ("existing", "x", Schema.STRING_SCHEMA), ("h1", "a", Schema.STRING_SCHEMA), ("h2", 1, Schema.INT32_SCHEMA)]
    assert len(rec.headers) == 1  # the original record's headers are not touched


def test_move_with_schema():
    rec = value_record(SCHEMA, Struct(SCHEMA).put("f1", "a").put("f2", 1))
    out = transform(fields="f1", headers="h1", operation="move").apply(rec)
    assert [f.name for f in out.value_schema.fields] == ["f2"]
    assert out.value.get("f2") == 1
    assert out.headers.last_with_name("h1").value == "a"


def test_schemaless():
    rec = value_record(None, {"f1": "a", "f2": 1})
    out = transform(fields="f1,missing", headers="h1,h2", operation="move").apply(rec)
    assert out.value == {"f2": 1}
    assert [(h.key, h.value, h.schema) for h in out.headers] == [("h1", "a", None), ("h2", None, None)]
    out = transform(fields="f1", headers="h1", operation="copy").apply(rec)
    assert out.value == {"f1": "a", "f2": 1}


def test_key_variant():
    rec = SinkRecord("t", 0, None, {"k": 1}, None, "v", 0)
    out = transform(HeaderFromKey, fields="k", headers="hk", operation="move").apply(rec)
    assert out.key == {} and out.value == "v" and out.headers.last_with_name("hk").value == 1


def test_config_errors():
    with pytest.raises(ConfigException, match="same number of elements"):
        transform(fields="a,b", headers="h", operation="copy")
    with pytest.raises(ConfigException, match="operation"):
        transform(fields="a", headers="h", operation="steal")
    with pytest.raises(ConfigException, match="Empty list"):
        transform(fields="", headers="", operation="copy")


def test_null_and_missing_field():
    with pytest.raises(DataException, match="Only Map objects supported"):
        transform(fields="a", headers="h", operation="copy").apply(value_record(None, None))
    with pytest.raises(DataException, match="missing"):
        transform(fields="missing", headers="h", operation="copy").apply(
            value_record(SCHEMA, Struct(SCHEMA).put("f1", "a").put("f2", 1)))


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("f", SchemaBuilder.int32().optional().default_value(9).build()).build()
    rec = value_record(schema, Struct(schema))
    assert transform(fields="f", headers="h", operation="copy").apply(rec).headers.last_with_name("h").value == 9
    t = transform(fields="f", headers="h", operation="copy", **{"replace.null.with.default": "false"})
    assert t.apply(rec).headers.last_with_name("h").value is None
