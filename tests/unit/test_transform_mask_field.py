"""MaskField$Key / $Value (cases from Kafka's MaskFieldTest)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.mask_field import MaskFieldKey, MaskFieldValue

UTC = datetime.timezone.utc

SCHEMA = (SchemaBuilder.struct()
          .field("magic", Schema.INT32_SCHEMA)
          .field("bool", Schema.BOOLEAN_SCHEMA)
          .field("byte", Schema.INT8_SCHEMA)
          .field("short", Schema.INT16_SCHEMA)
          .field("int", Schema.INT32_SCHEMA)
          .field("long", Schema.INT64_SCHEMA)
          .field("float", Schema.FLOAT32_SCHEMA)
          .field("double", Schema.FLOAT64_SCHEMA)
          .field("string", Schema.STRING_SCHEMA)
          .field("date", Date.SCHEMA)
          .field("timestamp", Timestamp.SCHEMA)
          .field("decimal", Decimal.schema(0))
          .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
          .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
          .field("withDefault", SchemaBuilder.string().optional().default_value("default").build())
          .build())
VALUES = {
    "magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0, "double": 42.0,
    "string": "55.121.20.20", "date": datetime.date(2020, 1, 1),
    "timestamp": datetime.datetime(2020, 1, 1, tzinfo=UTC), "decimal": decimal.Decimal(42),
    "array": [1, 2, 3], "map": {"what": "what"},
}
MASKED = [k for k in VALUES if k != "magic"]


def mask(cls=MaskFieldValue, **props):
    t = cls()
    t.configure(props)
    return t


def test_schemaless():
    out = mask(fields=",".join(MASKED)).apply(SinkRecord("t", 0, None, None, None, dict(VALUES), 0))
    v = out.value
    assert v["magic"] == 42
    assert v["bool"] is False and v["byte"] == 0 and v["long"] == 0 and v["float"] == 0.0
    assert v["string"] == "" and v["date"] == datetime.date(1970, 1, 1)
    assert v["timestamp"] == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    assert v["decimal"] == decimal.Decimal(0) and v["array"] == [] and v["map"] == {}


def test_with_schema():
    struct = Struct(SCHEMA)
    for k, v in VALUES.items():
        struct.put(k, v)
    out = mask(fields=",".join(MASKED + ["withDefault"])).apply(SinkRecord("t", 0, None, None, SCHEMA, struct, 0))
    v = out.value
    assert out.value_schema == SCHEMA
    assert v.get("magic") == 42 and v.get("bool") is False and v.get("short") == 0 and v.get("double") == 0.0
    assert v.get("string") == "" and v.get("array") == [] and v.get("map") == {}
    assert v.get("withDefault") == ""  # the default is masked too


def test_replacement_schemaless():
    out = mask(fields="int,long,double,string,decimal,missing", replacement="123").apply(
        SinkRecord("t", 0, None, None, None, {"int": 1, "long": 2, "double": 3.0, "string": "x",
                                               "decimal": decimal.Decimal("1.5")}, 0))
    assert out.value == {"int": 123, "long": 123, "double": 123.0, "string": "123",
                         "decimal": decimal.Decimal(123), "missing": None}


def test_replacement_with_schema_uses_field_type():
    schema = SchemaBuilder.struct().field("b", Schema.INT8_SCHEMA).field("f", Schema.FLOAT32_SCHEMA).build()
    out = mask(fields="b,f", replacement="300").apply(
        SinkRecord("t", 0, None, None, schema, Struct(schema).put("b", 1).put("f", 1.0), 0))
    assert out.value.get("b") == 44  # (byte) 300
    assert out.value.get("f") == 300.0


def test_replacement_errors():
    with pytest.raises(DataException, match="to a number"):
        mask(fields="i", replacement="abc").apply(SinkRecord("t", 0, None, None, None, {"i": 1}, 0))
    with pytest.raises(DataException, match="Cannot mask value of type class bool with custom replacement"):
        mask(fields="b", replacement="x").apply(SinkRecord("t", 0, None, None, None, {"b": True}, 0))
    with pytest.raises(DataException, match="Cannot mask value of type: class bytes"):
        mask(fields="b").apply(SinkRecord("t", 0, None, None, None, {"b": b"x"}, 0))
    with pytest.raises(DataException, match="Unable to convert x"):
        mask(fields="d", replacement="x").apply(SinkRecord("t", 0, None, None, None, {"d": decimal.Decimal(1)}, 0))


def test_config_errors():
    with pytest.raises(ConfigException, match="Empty list"):
        mask(fields="")
    with pytest.raises(ConfigException, match="non-empty"):
        mask(fields="a", replacement="")


def test_null_values():
    with pytest.raises(DataException, match="Only Map objects supported"):
        mask(fields="a").apply(SinkRecord("t", 0, None, None, None, None, 0))
    assert mask(fields="a").apply(SinkRecord("t", 0, None, None, None, {"a": None}, 0)).value == {"a": None}


def test_replace_null_with_default_false():
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.string().optional().default_value("x").build()).build()
    out = mask(fields="d", **{"replace.null.with.default": "false"}).apply(
        SinkRecord("t", 0, None, None, schema, Struct(schema), 0))
    assert out.value.get_without_default("d") is None


def test_key_variant():
    out = mask(MaskFieldKey, fields="a").apply(SinkRecord("t", 0, None, {"a": "secret"}, None, "v", 0))
    assert out.key == {"a": ""} and out.value == "v"
