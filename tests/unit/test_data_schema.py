"""Schemas, fields, the builder and value validation (Kafka's SchemaBuilderTest / ConnectSchemaTest)."""

from __future__ import annotations

import datetime
import decimal
import pickle

import pytest

from connect_spark.api.data import (
    ConnectSchema,
    Date,
    Decimal,
    Field,
    Schema,
    SchemaBuilder,
    SchemaBuilderException,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect_spark.api.errors import DataException


def test_predefined_schemas():
    assert Schema.INT32_SCHEMA.type is Type.INT32
    assert not Schema.INT32_SCHEMA.is_optional
    assert Schema.OPTIONAL_STRING_SCHEMA.is_optional
    assert Schema.OPTIONAL_STRING_SCHEMA.type is Type.STRING
    assert Schema.BYTES_SCHEMA.name is None and Schema.BYTES_SCHEMA.parameters is None
    assert Schema.Type is Type
    assert str(Type.INT8) == "INT8" and Type.INT8.value == "int8"
    assert Type.STRUCT.is_primitive is False and Type.BYTES.is_primitive


def test_builder_metadata():
    schema = (
        SchemaBuilder.bool().required().name("bool").version(2).doc("the documentation")
        .parameter("foo", "bar").default_value(True).build()
    )
    assert schema.type is Type.BOOLEAN
    assert schema.name == "bool" and schema.version == 2 and schema.doc == "the documentation"
    assert dict(schema.parameters) == {"foo": "bar"}
    assert schema.default_value is True
    assert not schema.is_optional


def test_builder_rejects_setting_twice():
    with pytest.raises(SchemaBuilderException, match="name has already been set"):
        SchemaBuilder.int32().name("a").name("b")
    with pytest.raises(SchemaBuilderException):
        SchemaBuilder.int32().optional().required()
    # setting the same value again is allowed
    assert SchemaBuilder.int32().name("a").name("a").optional().optional().build().name == "a"


def test_builder_default_must_be_valid():
    with pytest.raises(SchemaBuilderException, match="Invalid default value"):
        SchemaBuilder.int32().default_value("not an int")
    with pytest.raises(SchemaBuilderException):
        SchemaBuilder.int8().default_value(1000)


def test_builder_struct_fields():
    schema = (
        SchemaBuilder.struct().name("x")
        .field("a", Schema.INT32_SCHEMA)
        .field("b", SchemaBuilder.string().optional())  # a builder is built
        .optional().build()
    )
    assert [f.name for f in schema.fields] == ["a", "b"]
    assert [f.index for f in schema.fields] == [0, 1]
    assert schema.field("b").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert schema.field("missing") is None
    assert schema.is_optional


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: SchemaBuilder.int32().field("a", Schema.INT32_SCHEMA), "Cannot create fields on type INT32"),
        (lambda: SchemaBuilder.struct().field("", Schema.INT32_SCHEMA), "fieldName cannot be null"),
        (lambda: SchemaBuilder.struct().field("a", None), "fieldSchema for field a cannot be null"),
        (lambda: SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("a", Schema.INT32_SCHEMA),
         "field name duplication a"),
        (lambda: SchemaBuilder.array(None), "valueSchema cannot be null"),
        (lambda: SchemaBuilder.map(None, Schema.INT32_SCHEMA), "keySchema cannot be null"),
    ],
)
def test_builder_errors(call, message):
    with pytest.raises(SchemaBuilderException, match=message):
        call()


def test_non_struct_accessors_raise():
    with pytest.raises(DataException, match="Cannot list fields on non-struct type"):
        Schema.INT32_SCHEMA.fields
    with pytest.raises(DataException, match="Cannot look up fields on non-struct type"):
        Schema.INT32_SCHEMA.field("a")
    with pytest.raises(DataException, match="non-map type"):
        Schema.INT32_SCHEMA.key_schema
    with pytest.raises(DataException, match="non-array and non-map type"):
        Schema.INT32_SCHEMA.value_schema


def test_array_and_map():
    array = SchemaBuilder.array(Schema.INT8_SCHEMA).build()
    assert array.type is Type.ARRAY and array.value_schema == Schema.INT8_SCHEMA
    mapping = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build()
    assert mapping.key_schema == Schema.STRING_SCHEMA and mapping.value_schema == Schema.INT64_SCHEMA


def test_equality_and_hash():
    def make():
        return (SchemaBuilder.struct().name("n").version(1).parameter("p", "v")
                .field("a", SchemaBuilder.array(Schema.STRING_SCHEMA).optional())
                .field("m", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).default_value({"x": 1}))
                .build())

    one, two = make(), make()
    assert one == two and hash(one) == hash(two)
    assert {one: "cached"}[two] == "cached"
    assert one != SchemaBuilder.struct().name("n").build()
    assert Schema.INT32_SCHEMA != Schema.OPTIONAL_INT32_SCHEMA
    assert Schema.INT32_SCHEMA != SchemaBuilder.int32().doc("d").build()
    assert Schema.BYTES_SCHEMA == ConnectSchema(Type.BYTES)


def test_schemas_are_immutable_and_picklable():
    schema = SchemaBuilder.struct().field("a", Decimal.schema(2)).build()
    with pytest.raises(AttributeError):
        schema.name = "x"
    with pytest.raises(TypeError):
        schema.parameters["x"] = "y"  # type: ignore[index]
    with pytest.raises(AttributeError):
        schema.fields[0].name = "b"
    assert pickle.loads(pickle.dumps(schema)) == schema
    assert pickle.loads(pickle.dumps(Field("a", 0, Schema.INT8_SCHEMA))) == Field("a", 0, Schema.INT8_SCHEMA)


def test_str_like_kafka():
    assert str(Schema.INT32_SCHEMA) == "Schema{INT32}"
    assert str(Date.SCHEMA) == "Schema{org.apache.kafka.connect.data.Date:INT32}"


@pytest.mark.parametrize(
    "schema, value",
    [
        (Schema.INT8_SCHEMA, 127),
        (Schema.INT16_SCHEMA, -32768),
        (Schema.INT32_SCHEMA, 2**31 - 1),
        (Schema.INT64_SCHEMA, -(2**63)),
        (Schema.FLOAT32_SCHEMA, 1.5),
        (Schema.FLOAT64_SCHEMA, 2),
        (Schema.BOOLEAN_SCHEMA, False),
        (Schema.STRING_SCHEMA, ""),
        (Schema.BYTES_SCHEMA, b"\x00"),
        (Schema.BYTES_SCHEMA, bytearray(b"x")),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2]),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"a": 1}),
        (Decimal.schema(2), decimal.Decimal("1.00")),
        (Date.SCHEMA, datetime.date(2020, 1, 1)),
        (Time.SCHEMA, datetime.time(1, 2, 3)),
        (Timestamp.SCHEMA, datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)),
        (Schema.OPTIONAL_INT32_SCHEMA, None),
    ],
)
def test_validate_value_accepts(schema, value):
    ConnectSchema.validate_value(schema, value)


@pytest.mark.parametrize(
    "schema, value, message",
    [
        (Schema.INT8_SCHEMA, 128, "out of range"),
        (Schema.INT32_SCHEMA, True, "Invalid Python object for schema type INT32: class bool"),
        (Schema.INT64_SCHEMA, 1.0, "class float"),
        (Schema.FLOAT64_SCHEMA, "1", "class str"),
        (Schema.BOOLEAN_SCHEMA, 1, "class int"),
        (Schema.STRING_SCHEMA, b"x", "class bytes"),
        (Schema.BYTES_SCHEMA, "x", "class str"),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), ["x"], "class str"),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 1}, "class int"),
        (Decimal.schema(2), 1.0, "class float"),
        (Date.SCHEMA, 5, "class int"),
        (Timestamp.SCHEMA, datetime.date(2020, 1, 1), "class date"),
        (Schema.INT32_SCHEMA, None, 'null used for required field: "null", schema type: INT32'),
    ],
)
def test_validate_value_rejects(schema, value, message):
    with pytest.raises(DataException, match=message):
        ConnectSchema.validate_value(schema, value)


def test_validate_struct_schema_mismatch():
    one = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    two = SchemaBuilder.struct().field("b", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Struct schemas do not match"):
        ConnectSchema.validate_value(one, Struct(two).put("b", 1))
    with pytest.raises(DataException, match='field: "a"'):
        ConnectSchema.validate_value(one, Struct(one))  # required field missing


def test_schema_type_of_python_values():
    assert ConnectSchema.schema_type(1) is Type.INT64
    assert ConnectSchema.schema_type(True) is Type.BOOLEAN
    assert ConnectSchema.schema_type(1.0) is Type.FLOAT64
    assert ConnectSchema.schema_type({}) is Type.MAP
    assert ConnectSchema.schema_type(decimal.Decimal(1)) is None
    assert ConnectSchema.schema_type(datetime.date.today()) is None
