"""Flatten$Key / $Value (cases from Kafka's FlattenTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.transforms.flatten import FlattenKey, FlattenValue


def value_flatten(**props):
    t = FlattenValue()
    t.configure(props)
    return t


def value_record(schema, value):
    return SinkRecord("topic", 0, None, None, schema, value, 0)


def test_schemaless_nested_maps():
    value = {"A": {"B": {"int8": 8, "string": "x", "bytes": b"b", "array": [1, 2]}}, "top": True}
    out = value_flatten().apply(value_record(None, value))
    assert out.value == {"A.B.int8": 8, "A.B.string": "x", "A.B.bytes": b"b", "A.B.array": [1, 2], "top": True}


def test_delimiter_and_nulls():
    out = value_flatten(delimiter="#").apply(value_record(None, {"a": {"b": None, "c": 1}, "d": None}))
    assert out.value == {"a#b": None, "a#c": 1, "d": None}


def test_schemaless_unsupported():
    schema = SchemaBuilder.struct().field("x", Schema.INT8_SCHEMA).build()
    with pytest.raises(DataException, match="does not support class Struct"):
        value_flatten().apply(value_record(None, {"s": Struct(schema).put("x", 1)}))
    with pytest.raises(DataException, match="Only Map objects supported"):
        value_flatten().apply(value_record(None, 42))


def test_null_passes_through():
    rec = value_record(None, None)
    assert value_flatten().apply(rec) is rec
    rec = value_record(SchemaBuilder.struct().optional().build(), None)
    assert value_flatten().apply(rec) is rec


def test_nested_struct():
    inner = (SchemaBuilder.struct().field("int8", Schema.INT8_SCHEMA).field("string", Schema.STRING_SCHEMA)
             .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
             .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()).build())
    middle = SchemaBuilder.struct().field("B", inner).build()
    outer = SchemaBuilder.struct().name("outer").field("A", middle).field("top", Schema.BOOLEAN_SCHEMA).build()
    value = (Struct(outer)
             .put("A", Struct(middle).put("B", Struct(inner).put("int8", 8).put("string", "s").put("array", [1])
                                          .put("map", {"k": 1})))
             .put("top", True))
    out = value_flatten().apply(value_record(outer, value))
    schema = out.value_schema
    assert schema.name == "outer"
    assert [f.name for f in schema.fields] == ["A.B.int8", "A.B.string", "A.B.array", "A.B.map", "top"]
    assert schema.field("A.B.array").schema.value_schema == Schema.INT32_SCHEMA
    assert schema.field("A.B.map").schema.key_schema == Schema.STRING_SCHEMA
    assert out.value.get("A.B.int8") == 8 and out.value.get("A.B.map") == {"k": 1} and out.value.get("top") is True


def test_optionality_and_defaults_are_carried_down():
    inner = (SchemaBuilder.struct().field("req", Schema.INT32_SCHEMA)
             .field("dflt", SchemaBuilder.string().default_value("d").build()).optional().build())
    parent = SchemaBuilder.struct().field("inner", inner).build()
    out = value_flatten().apply(value_record(parent, Struct(parent)))
    schema = out.value_schema
    assert schema.field("inner.req").schema.is_optional  # optional because the parent is optional
    assert schema.field("inner.dflt").schema.default_value == "d"
    assert out.value.get("inner.req") is None  # a null parent leaves its fields unset


def test_parent_default_struct():
    inner_builder = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA)
    inner_plain = inner_builder.build()
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).default_value(Struct(inner_plain).put("x", 3)).build()
    parent = SchemaBuilder.struct().field("inner", inner).build()
    schema = value_flatten().apply(value_record(parent, Struct(parent).put("inner", Struct(inner).put("x", 1)))).value_schema
    assert schema.field("inner.x").schema.default_value == 3


def test_key_variant_and_class_names():
    t = FlattenKey()
    t.configure({})
    out = t.apply(SinkRecord("t", 0, None, {"a": {"b": 1}}, None, "v", 0))
    assert out.key == {"a.b": 1} and out.value == "v"
    assert FlattenKey.kafka_class_name == "org.apache.kafka.connect.transforms.Flatten$Key"
    assert FlattenValue().config().keys["delimiter"].default == "."
    assert out.key_schema is None


def test_optional_and_default_values_nested():
    # Kafka's testOptionalAndDefaultValuesNested: the parent is optional and has a default
    builder = (SchemaBuilder.struct().optional().field("req_field", Schema.STRING_SCHEMA)
               .field("opt_field", SchemaBuilder.string().optional().default_value("child_default").build()))
    child_default = Struct(builder.build()).put("req_field", "req_default")
    schema = builder.default_value(child_default).build()
    out = value_flatten().apply(value_record(schema, Struct(schema)))
    assert len(out.value_schema.fields) == 2
    assert out.value_schema.field("req_field").schema == SchemaBuilder.string().optional().default_value("req_default").build()
    assert out.value_schema.field("opt_field").schema == SchemaBuilder.string().optional().default_value("child_default").build()


def test_struct_with_null_fields_and_arrays_unchanged():
    inner = SchemaBuilder.struct().field("lfg", Schema.STRING_SCHEMA).build()
    schema = (SchemaBuilder.struct().field("firstNull", Schema.OPTIONAL_STRING_SCHEMA)
              .field("foo", SchemaBuilder.array(inner).doc("durk").build()).build())
    value = Struct(schema).put("foo", [Struct(inner).put("lfg", "lfg")])
    out = value_flatten().apply(value_record(schema, value))
    assert out.value == value and out.value_schema == schema
