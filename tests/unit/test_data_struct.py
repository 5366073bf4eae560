"""Struct (Kafka's StructTest)."""

from __future__ import annotations

import pickle

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import DataException

FLAT = (
    SchemaBuilder.struct()
    .field("int8", Schema.INT8_SCHEMA)
    .field("string", Schema.STRING_SCHEMA)
    .field("optional", Schema.OPTIONAL_STRING_SCHEMA)
    .field("with_default", SchemaBuilder.int32().default_value(42))
    .build()
)


def test_put_get_and_chain():
    struct = Struct(FLAT).put("int8", 12).put("string", "foo")
    assert struct.get("int8") == 12
    assert struct.get_int8("int8") == 12
    assert struct.get_string("string") == "foo"
    assert struct.get("optional") is None
    struct.validate()


def test_defaults():
    struct = Struct(FLAT).put("int8", 1).put("string", "x")
    assert struct.get("with_default") == 42
    assert struct.get_without_default("with_default") is None
    assert struct.get_int32("with_default") is None  # typed getters return the raw value, as in Kafka


def test_invalid_put():
    with pytest.raises(DataException, match="missing is not a valid field name"):
        Struct(FLAT).put("missing", 1)
    with pytest.raises(DataException, match='field: "int8"'):
        Struct(FLAT).put("int8", "not a number")
    with pytest.raises(DataException, match="is not of type INT8"):
        Struct(FLAT).get_int8("string")


def test_validate_missing_required():
    with pytest.raises(DataException, match='required field: "int8"'):
        Struct(FLAT).put("string", "x").validate()


def test_not_a_struct_schema():
    with pytest.raises(DataException, match="Not a struct schema"):
        Struct(Schema.INT32_SCHEMA)


def test_equality_and_repr():
    one = Struct(FLAT).put("int8", 1).put("string", "a")
    two = Struct(FLAT).put("int8", 1).put("string", "a")
    assert one == two
    assert one != Struct(FLAT).put("int8", 2).put("string", "a")
    assert repr(one) == "Struct{int8=1,string=a}"
    with pytest.raises(TypeError):
        hash(one)


def test_nested_struct_and_pickle():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().field("inner", inner).build()
    value = Struct(outer).put("inner", Struct(inner).put("x", 1))
    assert value.get_struct("inner").get("x") == 1
    assert pickle.loads(pickle.dumps(value)) == value
    assert dict(value.items())["inner"] == Struct(inner).put("x", 1)
