"""HoistField$Key / $Value (cases from Kafka's HoistFieldTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.transforms.hoist_field import HoistFieldKey, HoistFieldValue


def hoist(cls=HoistFieldKey):
    t = cls()
    t.configure({"field": "magic"})
    return t


def test_schemaless():
    out = hoist().apply(SinkRecord("t", 0, None, 42, None, None, 0))
    assert out.key_schema is None and out.key == {"magic": 42}


def test_schemaless_null_is_wrapped():
    assert hoist().apply(SinkRecord("t", 0, None, None, None, None, 0)).key == {"magic": None}


def test_with_schema():
    out = hoist().apply(SinkRecord("t", 0, Schema.INT32_SCHEMA, 42, None, None, 0))
    assert out.key_schema == SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    assert out.key == Struct(out.key_schema).put("magic", 42)


def test_with_optional_schema_and_null():
    out = hoist().apply(SinkRecord("t", 0, Schema.OPTIONAL_INT32_SCHEMA, None, None, None, 0))
    assert out.key.get("magic") is None
    with pytest.raises(DataException, match="null used for required field"):
        hoist().apply(SinkRecord("t", 0, Schema.INT32_SCHEMA, None, None, None, 0))


def test_value_variant():
    out = hoist(HoistFieldValue).apply(SinkRecord("t", 0, Schema.STRING_SCHEMA, "k", Schema.STRING_SCHEMA, "v", 0))
    assert out.key == "k" and out.value.get("magic") == "v"
