"""Cast$Key / Cast$Value (cases from Kafka's CastTest)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.cast import CastKey, CastValue

UTC = datetime.timezone.utc


def record(key_schema=None, key=None, value_schema=None, value=None):
    return SinkRecord("topic", 0, key_schema, key, value_schema, value, 42, timestamp=1000)


def value_cast(spec, **extra):
    t = CastValue()
    t.configure({"spec": spec, **extra})
    return t


def test_kafka_class_names():
    assert CastValue.kafka_class_name == "org.apache.kafka.connect.transforms.Cast$Value"
    assert CastKey.kafka_class_name == "org.apache.kafka.connect.transforms.Cast$Key"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "Must specify at least one field to cast"),
        ("foo:int8,bar:invalid", "Invalid type found in casting spec: invalid"),
        ("array", "does not support casting to ARRAY"),
        ("int8,int32", "may only specify a single cast"),
        ("foo:int8:int32", "Invalid cast mapping"),
        ("bytes", "does not support casting to BYTES"),
    ],
)
def test_config_errors(spec, message):
    with pytest.raises(ConfigException, match=message):
        value_cast(spec)


def test_parsed_casts_are_plain_attributes():
    t = value_cast("a:int8, b:STRING")
    assert t.casts == {"a": Type.INT8, "b": Type.STRING}
    assert t.whole_value_cast_type is None
    assert value_cast("int64").casts == {None: Type.INT64}


def test_whole_key_with_schema():
    t = CastKey()
    t.configure({"spec": "int8"})
    out = t.apply(record(Schema.INT32_SCHEMA, 42))
    assert out.key_schema.type is Type.INT8 and out.key == 42
    assert out.kafka_offset == 42 and out.original_topic == "topic"


@pytest.mark.parametrize(
    "spec, schema, value, expected_type, expected",
    [
        ("int8", Schema.INT32_SCHEMA, 42, Type.INT8, 42),
        ("int8", Schema.INT32_SCHEMA, 300, Type.INT8, 44),
        ("int16", Schema.INT32_SCHEMA, 42, Type.INT16, 42),
        ("int32", Schema.INT32_SCHEMA, 42, Type.INT32, 42),
        ("int64", Schema.INT32_SCHEMA, 42, Type.INT64, 42),
        ("float32", Schema.INT32_SCHEMA, 42, Type.FLOAT32, 42.0),
        ("float64", Schema.INT32_SCHEMA, 42, Type.FLOAT64, 42.0),
        ("boolean", Schema.INT32_SCHEMA, 42, Type.BOOLEAN, True),
        ("boolean", Schema.INT32_SCHEMA, 0, Type.BOOLEAN, False),
        ("string", Schema.INT32_SCHEMA, 42, Type.STRING, "42"),
        ("int32", Schema.FLOAT64_SCHEMA, 42.9, Type.INT32, 42),
        ("int32", Schema.FLOAT64_SCHEMA, 1e20, Type.INT32, 2**31 - 1),
        ("int64", Schema.FLOAT32_SCHEMA, -1.5, Type.INT64, -1),
        ("boolean", Schema.FLOAT64_SCHEMA, 0.5, Type.BOOLEAN, False),
        ("string", Schema.FLOAT64_SCHEMA, 1e10, Type.STRING, "1.0E10"),
        ("string", Schema.FLOAT32_SCHEMA, 1.100000023841858, Type.STRING, "1.1"),
        ("string", Schema.BOOLEAN_SCHEMA, True, Type.STRING, "true"),
        ("int8", Schema.BOOLEAN_SCHEMA, True, Type.INT8, 1),
        ("float64", Schema.BOOLEAN_SCHEMA, False, Type.FLOAT64, 0.0),
        ("int32", Schema.STRING_SCHEMA, "42", Type.INT32, 42),
        ("int64", Schema.STRING_SCHEMA, "-9223372036854775808", Type.INT64, -(2**63)),
        ("float64", Schema.STRING_SCHEMA, "42.5", Type.FLOAT64, 42.5),
        ("boolean", Schema.STRING_SCHEMA, "TRUE", Type.BOOLEAN, True),
        ("boolean", Schema.STRING_SCHEMA, "yes", Type.BOOLEAN, False),
        ("string", Schema.BYTES_SCHEMA, b"\x01\x02", Type.STRING, "AQI="),
    ],
)
def test_whole_value_with_schema(spec, schema, value, expected_type, expected):
    out = value_cast(spec).apply(record(value_schema=schema, value=value))
    assert out.value_schema.type is expected_type
    assert out.value == expected
    assert type(out.value) is type(expected)


def test_whole_value_string_out_of_range():
    with pytest.raises(DataException, match=r"Value \(300\) was out of range"):
        value_cast("int8").apply(record(value_schema=Schema.STRING_SCHEMA, value="300"))
    with pytest.raises(DataException, match="out of range"):
        value_cast("int32").apply(record(value_schema=Schema.STRING_SCHEMA, value=" 1"))


def test_whole_value_schemaless():
    assert value_cast("int8").apply(record(value=42)).value == 42
    out = value_cast("string").apply(record(value=42))
    assert out.value == "42" and out.value_schema is None
    assert value_cast("float32").apply(record(value="1.5")).value == 1.5


def test_unsupported_inputs():
    with pytest.raises(DataException, match="does not support casting from ARRAY"):
        value_cast("int8").apply(record(value_schema=SchemaBuilder.array(Schema.INT8_SCHEMA).build(), value=[1]))
    with pytest.raises(DataException, match="not supported by Connect's data API"):
        value_cast("int8").apply(record(value=decimal.Decimal(1)))
    with pytest.raises(DataException, match="Unexpected type in Cast transformation: class bytes"):
        value_cast("int8").apply(record(value_schema=Schema.BYTES_SCHEMA, value=b"x"))
    with pytest.raises(DataException, match="Only Map objects supported"):
        value_cast("foo:int8").apply(record(value=1))


def test_null_value_passes_through():
    rec = record(value_schema=Schema.OPTIONAL_INT32_SCHEMA, value=None)
    assert value_cast("int8").apply(rec) is rec
    assert value_cast("foo:int8").apply(record(value=None)).value is None


def test_logical_types_whole_value():
    moment = datetime.datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)
    out = value_cast("int64").apply(record(value_schema=Timestamp.SCHEMA, value=moment))
    assert out.value == int(moment.timestamp() * 1000)
    out = value_cast("string").apply(record(value_schema=Timestamp.SCHEMA, value=moment))
    assert out.value == "2021-03-04T05:06:07.000Z"
    out = value_cast("int32").apply(record(value_schema=Date.SCHEMA, value=datetime.date(1970, 1, 11)))
    assert out.value == 10
    out = value_cast("string").apply(record(value_schema=Date.SCHEMA, value=datetime.date(2021, 3, 4)))
    assert out.value == "2021-03-04"
    out = value_cast("int32").apply(record(value_schema=Time.SCHEMA, value=datetime.time(0, 0, 1)))
    assert out.value == 1000
    out = value_cast("float64").apply(record(value_schema=Decimal.schema(2), value=decimal.Decimal("1.25")))
    assert out.value == 1.25
    out = value_cast("string").apply(record(value_schema=Decimal.schema(2), value=decimal.Decimal("1.25")))
    assert out.value == "1.25"


def test_struct_fields():
    schema = (SchemaBuilder.struct().name("r")
              .field("int8", Schema.INT8_SCHEMA)
              .field("int16", Schema.OPTIONAL_INT16_SCHEMA)
              .field("int32", SchemaBuilder.int32().default_value(2).build())
              .field("bigint", Schema.INT64_SCHEMA)
              .field("string", Schema.STRING_SCHEMA)
              .field("optional", Schema.OPTIONAL_FLOAT32_SCHEMA)
              .field("timestamp", Timestamp.SCHEMA)
              .field("untouched", Schema.STRING_SCHEMA)
              .build())
    moment = datetime.datetime(2020, 1, 1, tzinfo=UTC)
    value = (Struct(schema).put("int8", 8).put("int16", 16).put("bigint", 2**40).put("string", "42")
             .put("timestamp", moment).put("untouched", "x"))
    t = value_cast("int8:int16,int16:int32,int32:int64,bigint:boolean,string:int32,optional:int32,"
                   "timestamp:string")
    out = t.apply(record(value_schema=schema, value=value))
    updated = out.value
    assert out.value_schema.name == "r"
    assert out.value_schema.field("int8").schema.type is Type.INT16
    assert out.value_schema.field("int16").schema.is_optional
    assert out.value_schema.field("int32").schema.default_value == 2
    assert out.value_schema.field("optional").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert out.value_schema.field("untouched").schema == Schema.STRING_SCHEMA
    assert updated.get("int8") == 8 and updated.get("int16") == 16 and updated.get("int32") == 2
    assert updated.get("bigint") is True and updated.get("string") == 42 and updated.get("optional") is None
    assert updated.get("timestamp") == "2020-01-01"
    # the derived schema is cached per input schema
    assert t.apply(record(value_schema=schema, value=value)).value_schema is out.value_schema


def test_struct_field_null_with_default_and_replace_null_false():
    schema = SchemaBuilder.struct().field("a", SchemaBuilder.int32().optional().default_value(5).build()).build()
    value = Struct(schema)
    assert value_cast("a:string").apply(record(value_schema=schema, value=value)).value.get_without_default("a") == "5"
    t = value_cast("a:string", **{"replace.null.with.default": "false"})
    out = t.apply(record(value_schema=schema, value=value))
    assert out.value.get_without_default("a") is None
    assert out.value_schema.field("a").schema.default_value == "5"


def test_schemaless_fields():
    t = value_cast("int8:int16,string:int32,missing:int8")
    out = t.apply(record(value={"int8": 8, "string": "42", "other": [1]}))
    assert out.value == {"int8": 8, "string": 42, "other": [1], "missing": None}


def test_key_variant_leaves_value():
    t = CastKey()
    t.configure({"spec": "a:string"})
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    out = t.apply(record(schema, Struct(schema).put("a", 1), Schema.STRING_SCHEMA, "v"))
    assert out.key.get("a") == "1" and out.value == "v" and out.value_schema == Schema.STRING_SCHEMA
