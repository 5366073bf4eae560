"""JsonConverter (cases from Kafka's JsonConverterTest)."""

from __future__ import annotations

import base64
import datetime
import decimal
import json

import pytest

from connect_spark.api import DataException, SchemaAndValue
from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect_spark.api.errors import ConfigException
from connect_spark.converters.json import JsonConverter

TOPIC = "topic"
UTC = datetime.timezone.utc


def converter(**props) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in props.items()}, False)
    return c


def to_connect(c, text):
    return c.to_connect_data(TOPIC, text.encode() if isinstance(text, str) else text)


def envelope(schema, payload):
    return json.dumps({"schema": schema, "payload": payload})


def parse(data: bytes):
    return json.loads(data)


def test_kafka_class_name_and_config():
    assert JsonConverter.kafka_class_name == "org.apache.kafka.connect.json.JsonConverter"
    names = JsonConverter().config().names()
    assert {"schemas.enable", "schemas.cache.size", "decimal.format", "replace.null.with.default",
            "converter.type"} <= set(names)
    with pytest.raises(ConfigException, match="decimal.format"):
        JsonConverter().configure({"decimal.format": "HEX"}, False)


def test_schema_metadata_translation():
    c = converter()
    assert to_connect(c, '{ "schema": { "type": "boolean" }, "payload": true }') == (Schema.BOOLEAN_SCHEMA, True)
    assert to_connect(c, '{ "schema": { "type": "boolean", "optional": true }, "payload": null }') == (
        Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
    assert to_connect(c, '{ "schema": { "type": "boolean", "default": true }, "payload": null }') == (
        SchemaBuilder.bool().default_value(True).build(), True)
    expected = SchemaBuilder.bool().required().name("bool").version(2).doc("the documentation").parameter("foo", "bar").build()
    text = ('{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, '
            '"doc": "the documentation", "parameters": { "foo": "bar" }}, "payload": true }')
    assert to_connect(c, text) == (expected, True)


@pytest.mark.parametrize(
    "schema_type, payload, expected_schema, expected",
    [
        ("boolean", False, Schema.BOOLEAN_SCHEMA, False),
        ("int8", 12, Schema.INT8_SCHEMA, 12),
        ("int16", 12, Schema.INT16_SCHEMA, 12),
        ("int32", 12, Schema.INT32_SCHEMA, 12),
        ("int64", 4398046511104, Schema.INT64_SCHEMA, 4398046511104),
        ("double", 12.34, Schema.FLOAT64_SCHEMA, 12.34),
        ("string", "foo-bar-baz", Schema.STRING_SCHEMA, "foo-bar-baz"),
        ("bytes", "dGVzdC1zdHJpbmc=", Schema.BYTES_SCHEMA, b"test-string"),
    ],
)
def test_primitives_to_connect(schema_type, payload, expected_schema, expected):
    c = converter()
    assert to_connect(c, envelope({"type": schema_type}, payload)) == (expected_schema, expected)


def test_float_to_connect_is_float32():
    sv = to_connect(converter(), envelope({"type": "float"}, 12.34))
    assert sv.schema == Schema.FLOAT32_SCHEMA
    assert sv.value == pytest.approx(12.34, rel=1e-6) and sv.value != 12.34


def test_array_map_struct_to_connect():
    c = converter()
    assert to_connect(c, envelope({"type": "array", "items": {"type": "int32"}}, [1, 2, 3])) == (
        SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3])
    assert to_connect(c, envelope({"type": "map", "keys": {"type": "string"}, "values": {"type": "int32"}},
                                  {"key1": 12, "key2": 15})) == (
        SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"key1": 12, "key2": 15})
    assert to_connect(c, envelope({"type": "map", "keys": {"type": "int32"}, "values": {"type": "int32"}},
                                  [[1, 12], [2, 15]])) == (
        SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 12, 2: 15})
    schema = SchemaBuilder.struct().field("field1", Schema.BOOLEAN_SCHEMA).field("field2", Schema.STRING_SCHEMA).build()
    text = envelope({"type": "struct", "fields": [{"field": "field1", "type": "boolean"},
                                                   {"field": "field2", "type": "string"}]},
                    {"field1": True, "field2": "string"})
    assert to_connect(c, text) == (schema, Struct(schema).put("field1", True).put("field2", "string"))


def test_struct_with_optional_and_default_fields():
    c = converter()
    text = envelope({"type": "struct", "fields": [
        {"field": "opt", "type": "int32", "optional": True},
        {"field": "dflt", "type": "int32", "default": 7},
    ]}, {})
    struct = to_connect(c, text).value
    assert struct.get("opt") is None and struct.get_without_default("dflt") == 7


def test_replace_null_with_default_false():
    c = converter(replace_null_with_default=False)
    text = envelope({"type": "int32", "optional": True, "default": 42}, None)
    assert to_connect(c, text).value is None
    assert to_connect(converter(), text).value == 42
    schema = SchemaBuilder.int32().optional().default_value(42).build()
    assert parse(c.from_connect_data(TOPIC, schema, None))["payload"] is None
    assert parse(converter().from_connect_data(TOPIC, schema, None))["payload"] == 42


def test_null_and_empty_bytes():
    for c in (converter(), converter(schemas_enable=False)):
        assert c.to_connect_data(TOPIC, None) == SchemaAndValue(None, None)
        assert c.from_connect_data(TOPIC, None, None) is None
    assert converter(schemas_enable=False).to_connect_data(TOPIC, b"") == SchemaAndValue(None, None)


def test_empty_bytes_hold_no_envelope_with_schemas_enabled():
    """Kafka's JsonConverter reads empty bytes as a missing node, which is no envelope: an error."""
    for empty in (b"", bytearray(), memoryview(b"")):
        with pytest.raises(DataException, match='requires "schema" and "payload" fields'):
            converter().to_connect_data(TOPIC, empty)


def test_null_schema_primitives():
    c = converter()
    assert to_connect(c, '{ "schema": null, "payload": null }') == (None, None)
    assert to_connect(c, '{ "schema": null, "payload": true }') == (None, True)
    assert to_connect(c, '{ "schema": null, "payload": 12 }') == (None, 12)
    assert to_connect(c, '{ "schema": null, "payload": 12.24 }') == (None, 12.24)
    assert to_connect(c, '{ "schema": null, "payload": "a string" }') == (None, "a string")
    assert to_connect(c, '{ "schema": null, "payload": [1, "2", 3] }') == (None, [1, "2", 3])
    assert to_connect(c, '{ "schema": null, "payload": { "field1": 1, "field2": 2} }') == (None, {"field1": 1, "field2": 2})


def test_schemaless_inference():
    c = converter(schemas_enable=False)
    sv = to_connect(c, '{"a": 1, "b": 2.5, "c": [1, {"d": null}], "e": "x", "f": false}')
    assert sv.schema is None
    assert sv.value == {"a": 1, "b": 2.5, "c": [1, {"d": None}], "e": "x", "f": False}
    assert isinstance(sv.value["b"], float)
    assert to_connect(c, "42") == (None, 42)


def test_envelope_required():
    c = converter()
    for text in ['{"payload": 1}', '{"schema": null}', '{"schema": null, "payload": 1, "x": 2}', "[1]", "12"]:
        with pytest.raises(DataException, match='requires "schema" and "payload" fields'):
            to_connect(c, text)


def test_invalid_json():
    with pytest.raises(DataException, match="serialization error"):
        to_connect(converter(), b"{not json")
    with pytest.raises(DataException, match="serialization error"):
        to_connect(converter(schemas_enable=False), b"NaN")


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"type": "nope"}, "Unknown schema type: nope"),
        ({}, "Schema must contain 'type' field"),
        ({"type": "array"}, "Array schema did not specify the element type"),
        ({"type": "map", "values": {"type": "int8"}}, "Map schema did not specify the key type"),
        ({"type": "struct", "fields": 1}, "is not an array"),
        ({"type": "struct", "fields": [{"type": "int8"}]}, "field name not specified properly"),
        ({"type": "int8", "parameters": {"a": 1}}, "Schema parameters must have string values"),
    ],
)
def test_bad_schemas(schema, message):
    with pytest.raises(DataException, match=message):
        to_connect(converter(), envelope(schema, 1))


def test_required_null_payload():
    with pytest.raises(DataException, match="Invalid null value for required INT32 field"):
        to_connect(converter(), envelope({"type": "int32"}, None))


def test_logical_types_to_connect():
    c = converter()
    decimal_schema = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
                      "parameters": {"scale": "2"}}
    assert to_connect(c, envelope(decimal_schema, "AJw=")) == (Decimal.schema(2), decimal.Decimal("1.56"))
    assert to_connect(c, envelope(decimal_schema, 1.56)).value == decimal.Decimal("1.56")
    date_schema = {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1}
    assert to_connect(c, envelope(date_schema, 10000)) == (Date.SCHEMA, datetime.date(1997, 5, 19))
    time_schema = {"type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1}
    assert to_connect(c, envelope(time_schema, 14400000)) == (Time.SCHEMA, datetime.time(4, 0))
    ts_schema = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
    assert to_connect(c, envelope(ts_schema, 4000000000)) == (
        Timestamp.SCHEMA, datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC))
    with pytest.raises(DataException, match="Invalid type for Date"):
        to_connect(c, envelope(date_schema, "x"))
    with pytest.raises(DataException, match="Invalid type for Timestamp"):
        to_connect(c, envelope(ts_schema, 1.5))
    with pytest.raises(DataException, match="Invalid bytes for Decimal field"):
        to_connect(c, envelope(decimal_schema, "not base64!"))


def test_logical_defaults():
    c = converter()
    schema = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1, "optional": True,
              "default": 0}
    sv = to_connect(c, envelope(schema, None))
    assert sv.value == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    assert sv.schema.default_value == datetime.datetime(1970, 1, 1, tzinfo=UTC)


def test_json_schema_metadata():
    c = converter()
    out = parse(c.from_connect_data(TOPIC, Schema.BOOLEAN_SCHEMA, True))
    assert out == {"schema": {"type": "boolean", "optional": False}, "payload": True}
    out = parse(c.from_connect_data(TOPIC, Schema.OPTIONAL_BOOLEAN_SCHEMA, None))
    assert out == {"schema": {"type": "boolean", "optional": True}, "payload": None}
    out = parse(c.from_connect_data(TOPIC, SchemaBuilder.bool().default_value(True).build(), True))
    assert out["schema"] == {"type": "boolean", "optional": False, "default": True}
    schema = SchemaBuilder.bool().required().name("bool").version(3).doc("the documentation").parameter("foo", "bar").build()
    out = parse(c.from_connect_data(TOPIC, schema, True))
    assert out["schema"] == {"type": "boolean", "optional": False, "name": "bool", "version": 3,
                             "doc": "the documentation", "parameters": {"foo": "bar"}}


def test_to_json_exact_bytes():
    c = converter()
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).build()
    data = c.from_connect_data(TOPIC, schema, Struct(schema).put("a", 1))
    assert data == (b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"},'
                    b'{"type":"string","optional":true,"field":"b"}],"optional":false},"payload":{"a":1,"b":null}}')


@pytest.mark.parametrize(
    "schema, value, expected_type, expected_payload",
    [
        (Schema.INT8_SCHEMA, 12, "int8", 12),
        (Schema.INT64_SCHEMA, 4398046511104, "int64", 4398046511104),
        (Schema.FLOAT32_SCHEMA, 12.34, "float", 12.34),
        (Schema.FLOAT64_SCHEMA, 12.34, "double", 12.34),
        (Schema.STRING_SCHEMA, "foo", "string", "foo"),
        (Schema.BYTES_SCHEMA, b"test-string", "bytes", "dGVzdC1zdHJpbmc="),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3], "array", [1, 2, 3]),
    ],
)
def test_from_connect_primitives(schema, value, expected_type, expected_payload):
    out = parse(converter().from_connect_data(TOPIC, schema, value))
    assert out["schema"]["type"] == expected_type
    assert out["payload"] == expected_payload


def test_float32_written_with_float_precision():
    c = converter()
    value = to_connect(c, envelope({"type": "float"}, 12.34)).value
    assert b'"payload":12.34' in c.from_connect_data(TOPIC, Schema.FLOAT32_SCHEMA, value)


def test_maps_from_connect():
    c = converter()
    string_keys = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    assert parse(c.from_connect_data(TOPIC, string_keys, {"a": 1}))["payload"] == {"a": 1}
    int_keys = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build()
    assert sorted(parse(c.from_connect_data(TOPIC, int_keys, {1: 12, 2: 15}))["payload"]) == [[1, 12], [2, 15]]
    schemaless = converter(schemas_enable=False)
    assert parse(schemaless.from_connect_data(TOPIC, None, {1: "x"})) == [[1, "x"]]
    assert parse(schemaless.from_connect_data(TOPIC, None, {"k": [1, 2.5, None]})) == {"k": [1, 2.5, None]}


def test_logical_from_connect():
    c = converter()
    assert parse(c.from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("1.56")))["payload"] == "AJw="
    numeric = converter(decimal_format="NUMERIC")
    data = numeric.from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("1.56"))
    assert b'"payload":1.56' in data
    assert numeric.to_connect_data(TOPIC, data).value == decimal.Decimal("1.56")
    assert parse(c.from_connect_data(TOPIC, Date.SCHEMA, datetime.date(1997, 5, 19)))["payload"] == 10000
    assert parse(c.from_connect_data(TOPIC, Time.SCHEMA, datetime.time(4, 0)))["payload"] == 14400000
    moment = datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC)
    assert parse(c.from_connect_data(TOPIC, Timestamp.SCHEMA, moment))["payload"] == 4000000000
    with pytest.raises(DataException, match="expected BigDecimal"):
        c.from_connect_data(TOPIC, Decimal.schema(2), 1.56)


def test_decimal_numeric_keeps_all_digits():
    c = converter(decimal_format="NUMERIC")
    value = decimal.Decimal("12345678901234567890.123456789")
    data = c.from_connect_data(TOPIC, Decimal.schema(9), value)
    assert c.to_connect_data(TOPIC, data).value == value


def test_from_connect_errors():
    c = converter()
    with pytest.raises(DataException, match="null value for field that is required"):
        c.from_connect_data(TOPIC, Schema.INT32_SCHEMA, None)
    with pytest.raises(DataException, match="Invalid type for INT32: class str"):
        c.from_connect_data(TOPIC, Schema.INT32_SCHEMA, "x")
    one = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    two = SchemaBuilder.struct().field("b", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Mismatching schema"):
        c.from_connect_data(TOPIC, one, Struct(two).put("b", 1))


def test_schemaless_from_connect():
    c = converter(schemas_enable=False)
    assert c.from_connect_data(TOPIC, None, {"a": 1}) == b'{"a":1}'
    assert c.from_connect_data(TOPIC, Schema.OPTIONAL_INT32_SCHEMA, None) == b"null"
    assert c.from_connect_data(TOPIC, None, b"ab") == b'"YWI="'


def test_round_trip_struct_with_everything():
    c = converter()
    inner = SchemaBuilder.struct().field("x", Schema.OPTIONAL_FLOAT64_SCHEMA).optional().build()
    schema = (SchemaBuilder.struct().name("r").version(2)
              .field("i8", Schema.INT8_SCHEMA).field("s", Schema.STRING_SCHEMA).field("b", Schema.BYTES_SCHEMA)
              .field("arr", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
              .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).optional().build())
              .field("inner", inner).field("dec", Decimal.schema(3)).field("ts", Timestamp.builder().optional().build())
              .build())
    value = (Struct(schema).put("i8", -3).put("s", "é").put("b", b"\x00\xff").put("arr", ["a"])
             .put("map", {"k": 2**40}).put("inner", Struct(inner).put("x", 0.5))
             .put("dec", decimal.Decimal("-1.234")).put("ts", datetime.datetime(2024, 1, 1, 1, tzinfo=UTC)))
    back = c.to_connect_data(TOPIC, c.from_connect_data(TOPIC, schema, value))
    assert back == (schema, value)


def test_schema_caches():
    c = converter(schemas_cache_size=1)
    text1 = envelope({"type": "int8"}, 1)
    text2 = envelope({"type": "int16"}, 1)
    to_connect(c, text1)
    to_connect(c, text1)
    assert len(c._to_connect_schemas) == 1
    to_connect(c, text2)
    assert len(c._to_connect_schemas) == 1
    # a boolean and a number with the same value are different schema nodes
    assert to_connect(c, envelope({"type": "int8", "optional": True}, None)).schema.is_optional
    assert not to_connect(c, envelope({"type": "int8", "optional": 1}, 1)).schema.is_optional
    uncached = converter(schemas_cache_size=0)
    to_connect(uncached, text1)
    assert len(uncached._to_connect_schemas) == 0


def test_header_converter_use():
    c = JsonConverter()
    c.configure({"schemas.enable": "false"})
    assert c.to_connect_header(TOPIC, "h", b'{"a":1}') == (None, {"a": 1})
    assert c.from_connect_header(TOPIC, "h", None, [1]) == b"[1]"


def test_bytes_field_with_bad_base64():
    with pytest.raises(DataException, match="Invalid bytes field"):
        to_connect(converter(), envelope({"type": "bytes"}, "***"))
    assert base64.b64decode("dGVzdA==") == b"test"


def test_configured_converter_pickles():
    import pickle

    c = converter(schemas_enable=False, decimal_format="NUMERIC")
    to_connect(c, "{}")
    copy = pickle.loads(pickle.dumps(c))
    assert copy.decimal_format == "NUMERIC" and not copy.schemas_enabled
    assert to_connect(copy, '{"a": 1}') == (None, {"a": 1})
