"""The Spark form of Avro writer schemas (columnar/avro.py): same encoding, AvroData's logical types only."""

from __future__ import annotations

import pytest

from connect_spark.columnar.avro import NotExpressible, spark_form
from connect_spark.columnar.avro import decode_witness


def test_logical_types_avro_data_does_not_map_are_removed():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "b", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "c", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "e", "type": {"type": "array", "items": {"type": "string", "logicalType": "uuid"}}}]}
    form = spark_form(schema)
    assert form["fields"][0]["type"] == {"type": "long"}
    assert form["fields"][1]["type"]["logicalType"] == "timestamp-millis"
    assert form["fields"][2]["type"] == ["null", {"type": "int"}]
    assert form["fields"][3]["type"]["logicalType"] == "decimal"
    assert form["fields"][4]["type"]["items"] == {"type": "string"}
    assert schema["fields"][0]["type"]["logicalType"] == "timestamp-micros"  # the writer schema is untouched


@pytest.mark.parametrize("field_type, reason", [
    (["int", "string"], "union"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}, "precision over 38"),
    ({"type": "array", "items": {"type": "record", "name": "MapEntry", "namespace": "io.confluent.connect.avro",
                                 "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "int"}]}},
     "MapEntry"),
])
def test_schemas_avro_data_reads_otherwise_are_refused(field_type, reason):
    with pytest.raises(NotExpressible, match=reason):
        spark_form({"type": "record", "name": "R", "fields": [{"name": "f", "type": field_type}]})


def test_a_required_field_tells_a_failed_decode_apart():
    assert decode_witness({"type": "record", "name": "R", "fields": [
        {"name": "o", "type": ["null", "int"]}, {"name": "r", "type": "int"}]}) == "r"
    assert decode_witness("string") is None
    with pytest.raises(NotExpressible, match="all optional"):
        decode_witness({"type": "record", "name": "R", "fields": [{"name": "o", "type": ["null", "int"]}]})


def test_a_required_field_only_one_schema_has_merges_as_optional():
    # Avro v1 → v2 with a field added: the frame schema of a batch holding both (columnar/record_column.py)
    from connect_spark.api.data import Schema, SchemaBuilder
    from connect_spark.columnar.record_column import merge_schemas

    v1 = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    v2 = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("tier", Schema.STRING_SCHEMA).build()
    merged = merge_schemas(v1, v2, "")
    assert [(f.name, f.schema.type.value, f.schema.is_optional) for f in merged.fields] == [
        ("id", "int64", False), ("tier", "string", True)]
