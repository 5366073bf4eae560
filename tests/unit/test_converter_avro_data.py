"""Avro → Connect rules of Confluent's AvroData (avro_data.py), one rule per test, payloads written by fastavro."""

from __future__ import annotations

import datetime
import decimal
import io

import fastavro
import pytest

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect_spark.api.errors import DataException
from connect_spark.converters.avro_data import UNION_NAME, AvroData


def _read(schema, value, data: AvroData | None = None, version: int | None = None):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    reader = (data or AvroData()).compile(schema, version)
    return reader.schema, reader.read(buf.getvalue())


def _record(*fields, name="R", **extra):
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def test_primitives_map_to_connect_types():
    schema, value = _read(_record(
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
        {"name": "y", "type": "bytes"}), {"b": True, "i": -5, "l": 2**40, "f": 1.5, "d": 2.25, "s": "x", "y": b"\x01"})
    assert [f.schema.type for f in schema.fields] == [Type.BOOLEAN, Type.INT32, Type.INT64, Type.FLOAT32,
                                                      Type.FLOAT64, Type.STRING, Type.BYTES]
    assert schema.name == "R" and not any(f.schema.is_optional for f in schema.fields)
    assert [value.get(f) for f in schema.fields] == [True, -5, 2**40, 1.5, 2.25, "x", b"\x01"]


def test_version_from_the_registry_unless_connect_version_is_set():
    assert _read(_record({"name": "a", "type": "int"}), {"a": 1}, version=4)[0].version == 4
    schema = _read(_record({"name": "a", "type": "int"}, **{"connect.version": 7}), {"a": 1}, version=4)[0]
    assert schema.version == 7


def test_optional_union_either_order_drops_the_field_default():
    schema, value = _read(_record({"name": "a", "type": ["null", "string"], "default": None},
                                  {"name": "b", "type": ["long", "null"], "default": 3}), {"a": None, "b": 9})
    assert schema.field("a").schema == SchemaBuilder.string().optional().build()
    assert schema.field("b").schema == SchemaBuilder.int64().optional().build()
    assert value.get("a") is None and value.get("b") == 9


def test_field_default_and_flag_parameter():
    schema, _ = _read(_record({"name": "q", "type": "int", "default": 1}), {"q": 2})
    assert schema.field("q").schema == (SchemaBuilder.int32().parameter("io.confluent.connect.avro.field.default",
                                                                       "true").default_value(1).build())
    schema, _ = _read(_record({"name": "q", "type": "int", "default": 1}), {"q": 2}, AvroData(connect_meta_data=False))
    assert schema.field("q").schema.parameters is None and schema.field("q").schema.default_value == 1


def test_docs_become_parameters_with_connect_meta_data():
    avro = _record({"name": "a", "type": "int", "doc": "field doc"}, doc="record doc")
    schema, _ = _read(avro, {"a": 1})
    assert dict(schema.parameters) == {"io.confluent.connect.avro.record.doc": "record doc",
                                       "io.confluent.connect.avro.field.doc.a": "field doc"}
    assert _read(avro, {"a": 1}, AvroData(connect_meta_data=False))[0].parameters is None


def test_general_union_is_confluents_union_struct():
    avro = _record({"name": "u", "type": ["int", "string", _record({"name": "x", "type": "long"}, name="Inner"),
                                          "null"]}, name="Outer", namespace="ns")
    schema, value = _read(avro, {"u": "text"})
    union = schema.field("u").schema
    assert union.name == UNION_NAME and union.is_optional
    assert [f.name for f in union.fields] == ["int", "string", "Inner"]
    assert all(f.schema.is_optional for f in union.fields)
    assert value.get("u") == Struct(union).put("string", "text")
    _, value = _read(avro, {"u": 5})
    assert value.get("u") == Struct(union).put("int", 5)
    _, value = _read(avro, {"u": ("ns.Inner", {"x": 3})})
    inner = union.field("Inner").schema
    assert value.get("u") == Struct(union).put("Inner", Struct(inner).put("x", 3))
    _, value = _read(avro, {"u": None})
    assert value.get("u") is None


def test_union_of_int_and_long_keeps_the_member_written():
    avro = _record({"name": "u", "type": ["int", "long"]})
    writer = fastavro.parse_schema(avro)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, writer, {"u": 2**40})  # only the long member can hold it
    reader = AvroData().compile(avro)
    assert reader.read(buf.getvalue()).get("u").get("long") == 2**40


def test_enhanced_schema_support_names_union_members_by_full_name():
    avro = _record({"name": "u", "type": ["string", {"type": "enum", "name": "E", "symbols": ["A"]}]},
                   namespace="ns")
    assert [f.name for f in _read(avro, {"u": "x"})[0].field("u").schema.fields] == ["string", "E"]
    enhanced = _read(avro, {"u": "x"}, AvroData(enhanced_schema_support=True))[0]
    assert [f.name for f in enhanced.field("u").schema.fields] == ["string", "ns.E"]


def test_enum_is_a_string_with_enum_parameters():
    avro = _record({"name": "e", "type": {"type": "enum", "name": "Color", "namespace": "n", "doc": "colors",
                                          "symbols": ["RED", "BLUE"], "default": "RED"}})
    schema, value = _read(avro, {"e": "BLUE"})
    e = schema.field("e").schema
    assert e.type is Type.STRING and e.name == "n.Color"
    assert list(e.parameters.items()) == [
        ("io.confluent.connect.avro.enum.doc.Color", "colors"), ("io.confluent.connect.avro.enum.default.Color", "RED"),
        ("io.confluent.connect.avro.Enum", "n.Color"), ("io.confluent.connect.avro.Enum.RED", "RED"),
        ("io.confluent.connect.avro.Enum.BLUE", "BLUE")]
    assert value.get("e") == "BLUE"


def test_fixed_is_named_bytes_with_its_size():
    schema, value = _read(_record({"name": "f", "type": {"type": "fixed", "name": "Md5", "size": 4}}), {"f": b"abcd"})
    f = schema.field("f").schema
    assert (f.type, f.name, dict(f.parameters)) == (Type.BYTES, "Md5", {"connect.fixed.size": "4"})
    assert value.get("f") == b"abcd"


def test_logical_types():
    avro = _record(
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 3}},
        {"name": "fdec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 1}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tmu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}})
    ts = datetime.datetime(2024, 2, 3, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc)
    schema, value = _read(avro, {"dec": decimal.Decimal("-1.250"), "fdec": decimal.Decimal("12.5"),
                                 "day": datetime.date(2024, 2, 3), "tm": datetime.time(1, 2, 3, 4000), "ts": ts,
                                 "tmu": 5, "tsu": 1_700_000_000_000_123})
    assert schema.field("dec").schema == Decimal.schema(3)  # precision 64 is the default: no parameter
    assert schema.field("fdec").schema == Decimal.builder(1).parameter("connect.decimal.precision", "10").build()
    assert schema.field("day").schema == Date.SCHEMA
    assert schema.field("tm").schema == Time.SCHEMA
    assert schema.field("ts").schema == Timestamp.SCHEMA
    # AvroData maps only the millisecond logical types; the micros ones stay plain INT64
    assert schema.field("tmu").schema == Schema.INT64_SCHEMA and schema.field("tsu").schema == Schema.INT64_SCHEMA
    assert value.get("dec") == decimal.Decimal("-1.250") and value.get("fdec") == decimal.Decimal("12.5")
    assert value.get("day") == datetime.date(2024, 2, 3)
    assert value.get("tm") == datetime.time(1, 2, 3, 4000)
    assert value.get("ts") == ts
    assert value.get("tsu") == 1_700_000_000_000_123


def test_fixed_decimal_is_refused_as_confluent_does():
    # Confluent names a fixed by its full name after Decimal.builder named it: "Mismatched names".
    with pytest.raises(DataException, match="Mismatched names"):
        AvroData().compile(_record({"name": "f", "type": {"type": "fixed", "name": "F", "size": 8,
                                                          "logicalType": "decimal", "precision": 10, "scale": 1}}))


def test_maps_arrays_and_named_type_reuse():
    inner = _record({"name": "v", "type": "int"}, name="P")
    avro = _record({"name": "m", "type": {"type": "map", "values": "double"}},
                   {"name": "a", "type": {"type": "array", "items": inner}},
                   {"name": "again", "type": ["null", "P"], "default": None})
    schema, value = _read(avro, {"m": {"x": 1.0}, "a": [{"v": 1}, {"v": 2}], "again": {"v": 3}})
    p = schema.field("a").schema.value_schema
    assert schema.field("m").schema == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build()
    assert p.name == "P" and not p.is_optional
    assert schema.field("again").schema.is_optional and schema.field("again").schema.name == "P"
    assert value.get("m") == {"x": 1.0}
    assert value.get("a") == [Struct(p).put("v", 1), Struct(p).put("v", 2)]
    assert value.get("again").get("v") == 3


def test_connect_properties_and_int8_int16():
    avro = _record({"name": "small", "type": {"type": "int", "connect.type": "int8"}},
                   {"name": "mid", "type": {"type": "int", "connect.type": "int16"}},
                   {"name": "named", "type": {"type": "string", "connect.name": "my.Name", "connect.doc": "d",
                                              "connect.parameters": {"k": "v"}, "avro.java.string": "String"}},
                   name="io.confluent.connect.avro.ConnectDefault")
    schema, value = _read(avro, {"small": -3, "mid": 300, "named": "s"})
    assert schema.name is None  # the ConnectDefault name is Confluent's placeholder for "no name"
    assert schema.field("small").schema == Schema.INT8_SCHEMA and schema.field("mid").schema == Schema.INT16_SCHEMA
    named = schema.field("named").schema
    assert (named.name, named.doc, dict(named.parameters)) == ("my.Name", "d", {"k": "v", "avro.java.string": "String"})
    assert (value.get("small"), value.get("mid"), value.get("named")) == (-3, 300, "s")


def test_map_entry_arrays_are_maps_with_typed_keys():
    entry = {"type": "record", "name": "MapEntry", "namespace": "io.confluent.connect.avro",
             "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}]}
    schema, value = _read(_record({"name": "m", "type": {"type": "array", "items": entry}}),
                          {"m": [{"key": 1, "value": "a"}, {"key": 2, "value": "b"}]})
    assert schema.field("m").schema == SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()
    assert value.get("m") == {1: "a", 2: "b"}


def test_refused_schemas_and_undecodable_bytes():
    with pytest.raises(DataException, match="Standalone null"):
        AvroData().compile({"type": "null"})
    with pytest.raises(DataException, match="Recursive"):
        AvroData().compile(_record({"name": "next", "type": ["null", "R"]}))
    reader = AvroData().compile(_record({"name": "s", "type": "string"}))
    with pytest.raises(DataException, match="do not decode"):
        reader.read(b"\x10ab")  # a string of 8 bytes, only 2 there
