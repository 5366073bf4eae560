"""Connect ⇄ Spark ⇄ Arrow type mapping, variant shapes and record frames (no JVM)."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect_spark.api.records import Headers, SinkRecord, TimestampType
from connect_spark.columnar import variant_schema
from connect_spark.columnar.records import frame_to_records, records_to_frame
from connect_spark.columnar.types import from_arrow_type, from_spark_type, to_arrow_type, to_spark_type

ORDER = (SchemaBuilder.struct().name("Order")
         .field("id", Schema.INT32_SCHEMA).field("small", Schema.OPTIONAL_INT8_SCHEMA)
         .field("price", Schema.FLOAT64_SCHEMA).field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
         .field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA).field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
         .field("tags", SchemaBuilder.array(Schema.INT64_SCHEMA).optional().build())
         .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).optional().build())
         .field("amount", Decimal.builder(2).optional().build())
         .field("day", Date.builder().optional().build()).field("at", Timestamp.builder().optional().build())
         .field("clock", Time.builder().optional().build())
         .build())


def test_spark_types_follow_the_connect_schema():
    spark_type = to_spark_type(ORDER)
    by_name = {f.name: f for f in spark_type.fields}
    assert by_name["id"].dataType == T.IntegerType() and not by_name["id"].nullable
    assert by_name["small"].dataType == T.ByteType() and by_name["small"].nullable
    assert by_name["ratio"].dataType == T.FloatType()
    assert by_name["tags"].dataType == T.ArrayType(T.LongType(), False)
    assert by_name["attrs"].dataType == T.MapType(T.StringType(), T.StringType(), True)
    assert by_name["amount"].dataType == T.DecimalType(38, 2)
    assert by_name["day"].dataType == T.DateType()
    assert by_name["at"].dataType == T.TimestampType()
    assert by_name["clock"].dataType == T.IntegerType()


def test_arrow_types_follow_the_connect_schema_and_round_trip():
    arrow_type = to_arrow_type(ORDER)
    assert arrow_type.field("amount").type == pa.decimal128(38, 2)
    assert arrow_type.field("clock").type == pa.time32("ms")
    assert arrow_type.field("at").type == pa.timestamp("us", tz="UTC")
    assert not arrow_type.field("id").nullable
    back = from_arrow_type(arrow_type, optional=False)
    assert [f.name for f in back.fields] == [f.name for f in ORDER.fields]
    assert back.field("day").schema.name == Date.LOGICAL_NAME
    assert back.field("tags").schema.value_schema.type == Schema.INT64_SCHEMA.type


def test_spark_type_to_connect_schema():
    schema = from_spark_type(T.StructType([T.StructField("a", T.LongType(), False),
                                           T.StructField("b", T.ArrayType(T.StringType(), True), True)]))
    assert schema.is_optional
    assert schema.field("a").schema == Schema.INT64_SCHEMA
    assert schema.field("b").schema.value_schema == Schema.OPTIONAL_STRING_SCHEMA


def test_variant_shapes_parse_and_map_exactly():
    shape = variant_schema.parse("OBJECT<a: BIGINT, `b c`: ARRAY<STRING>, d: FRACTION, e: OBJECT<f: VOID>>")
    spark_type = variant_schema.to_spark(shape)
    assert [f.name for f in spark_type.fields] == ["a", "b c", "d", "e"]
    assert spark_type["d"].dataType == T.DoubleType()


@pytest.mark.parametrize("shape", ["ARRAY<FRACTION>", "ARRAY<OBJECT<a: BIGINT>>", "VARIANT",
                                   "OBJECT<a: DECIMAL(20,0)>", "OBJECT<>"])
def test_ambiguous_variant_shapes_are_refused(shape):
    with pytest.raises(variant_schema.NotVectorizable):
        variant_schema.to_spark(variant_schema.parse(shape))


def test_records_round_trip_through_a_frame():
    value = (Struct(ORDER).put("id", 7).put("price", 2.5).put("tags", [1, 2]).put("attrs", {"k": "v"})
             .put("day", datetime.date(2024, 2, 29)).put("clock", datetime.time(1, 2, 3, 4000))
             .put("at", datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)).put("blob", b"\x00"))
    records = [
        SinkRecord("t", 0, Schema.OPTIONAL_STRING_SCHEMA, "k", ORDER, value, 5, 1_700_000_000_123,
                   TimestampType.CREATE_TIME, Headers().add("h", "x", Schema.STRING_SCHEMA)),
        SinkRecord("t", 1, Schema.OPTIONAL_STRING_SCHEMA, None, None, None, 6),
    ]
    table = records_to_frame(records)
    assert table.column("value").type == to_arrow_type(ORDER)
    back = frame_to_records(table, Schema.OPTIONAL_STRING_SCHEMA, ORDER, null_value_schema=None)
    assert back == records
