"""SetSchemaMetadata$Key / $Value (cases from Kafka's SetSchemaMetadataTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.data import Decimal, Schema, SchemaBuilder, Struct
from connect_spark.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue


def smt(cls=SetSchemaMetadataValue, **props):
    t = cls()
    t.configure(props)
    return t


def test_schema_name_and_version():
    rec = SinkRecord("t", 0, None, None, SchemaBuilder.struct().build(), None, 0)
    out = smt(**{"schema.name": "foo", "schema.version": "42"}).apply(rec)
    assert out.value_schema.name == "foo" and out.value_schema.version == 42
    out = smt(**{"schema.name": "foo"}).apply(rec)
    assert out.value_schema.name == "foo" and out.value_schema.version is None


def test_struct_is_rebuilt_on_the_new_schema():
    schema = (SchemaBuilder.struct().field("stringField", Schema.STRING_SCHEMA)
              .field("intField", Schema.INT32_SCHEMA).build())
    value = Struct(schema).put("stringField", "value").put("intField", 1)
    out = smt(**{"schema.name": "foo", "schema.version": "42"}).apply(SinkRecord("t", 0, None, None, schema, value, 0))
    assert out.value.schema is out.value_schema
    assert out.value.get("stringField") == "value" and out.value.get("intField") == 1


def test_other_schema_parts_are_kept():
    schema = Decimal.builder(2).optional().doc("d").build()
    out = smt(**{"schema.version": "3"}).apply(SinkRecord("t", 0, None, None, schema, None, 0))
    assert out.value_schema.name == Decimal.LOGICAL_NAME and out.value_schema.version == 3
    assert dict(out.value_schema.parameters) == {"scale": "2"} and out.value_schema.doc == "d"
    arrays = SchemaBuilder.array(Schema.STRING_SCHEMA).build()
    assert smt(**{"schema.name": "a"}).apply(SinkRecord("t", 0, None, None, arrays, ["x"], 0)).value_schema.value_schema == \
        Schema.STRING_SCHEMA


def test_schemaless():
    rec = SinkRecord("t", 0, None, None, None, None, 0)
    assert smt(**{"schema.name": "foo"}).apply(rec) is rec
    with pytest.raises(DataException, match="Schema required"):
        smt(**{"schema.name": "foo"}).apply(SinkRecord("t", 0, None, None, None, {"a": 1}, 0))


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.int32().optional().default_value(4).build()).build()
    rec = SinkRecord("t", 0, None, None, schema, Struct(schema), 0)
    assert smt(**{"schema.name": "n"}).apply(rec).value.get_without_default("d") == 4
    t = smt(**{"schema.name": "n", "replace.null.with.default": "false"})
    assert t.apply(rec).value.get_without_default("d") is None


def test_key_variant():
    out = smt(SetSchemaMetadataKey, **{"schema.name": "k"}).apply(
        SinkRecord("t", 0, Schema.STRING_SCHEMA, "x", Schema.STRING_SCHEMA, "v", 0))
    assert out.key_schema.name == "k" and out.key == "x" and out.value_schema.name is None
