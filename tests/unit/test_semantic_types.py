"""Debezium's semantic types: the one mapping, every value conversion, and the places that consult it."""

from __future__ import annotations

import datetime
import decimal
import re

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data import semantic_types as st
from connect_spark.api.data.logical import unscaled_to_bytes
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.record_column import SchemaConflict, fit_column, merge_schemas
from connect_spark.columnar.records import fit_records_to_frame, frame_to_records, value_reader
from connect_spark.columnar.types import encoded_spark_type, from_arrow_type, from_spark_type, to_arrow_type, \
    to_spark_type

UTC = datetime.timezone.utc


def named(builder: SchemaBuilder, name: str, **parameters: str) -> SchemaBuilder:
    builder = builder.name(name).version(1)
    for key, value in parameters.items():
        builder = builder.parameter(key, value)
    return builder


def vsd_schema(optional: bool = True) -> Schema:
    b = named(SchemaBuilder.struct(), st.VARIABLE_SCALE_DECIMAL).field("scale", Schema.INT32_SCHEMA) \
        .field("value", Schema.BYTES_SCHEMA)
    return (b.optional() if optional else b).build()


def vsd(schema: Schema, text: str) -> Struct:
    sign, digits, exponent = decimal.Decimal(text).as_tuple()
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
    return Struct(schema).put("scale", -exponent).put("value", unscaled_to_bytes(unscaled))


SCHEMAS = {
    st.DATE: named(SchemaBuilder.int32(), st.DATE).optional().build(),
    st.TIME: named(SchemaBuilder.int32(), st.TIME).optional().build(),
    st.MICRO_TIME: named(SchemaBuilder.int64(), st.MICRO_TIME).optional().build(),
    st.NANO_TIME: named(SchemaBuilder.int64(), st.NANO_TIME).optional().build(),
    st.TIMESTAMP: named(SchemaBuilder.int64(), st.TIMESTAMP).optional().build(),
    st.MICRO_TIMESTAMP: named(SchemaBuilder.int64(), st.MICRO_TIMESTAMP).optional().build(),
    st.NANO_TIMESTAMP: named(SchemaBuilder.int64(), st.NANO_TIMESTAMP).optional().build(),
    st.ZONED_TIMESTAMP: named(SchemaBuilder.string(), st.ZONED_TIMESTAMP).optional().build(),
    st.ZONED_TIME: named(SchemaBuilder.string(), st.ZONED_TIME).optional().build(),
    st.YEAR: named(SchemaBuilder.int32(), st.YEAR).optional().build(),
    st.VARIABLE_SCALE_DECIMAL: vsd_schema(),
    st.JSON: named(SchemaBuilder.string(), st.JSON).optional().build(),
    st.UUID: named(SchemaBuilder.string(), st.UUID).optional().build(),
    st.ENUM: named(SchemaBuilder.string(), st.ENUM, allowed="a,b").optional().build(),
    st.BITS: named(SchemaBuilder.bytes(), st.BITS, length="10").optional().build(),
}

# name → (Spark type, Arrow type, PostgreSQL type)
EXPECTED = {
    st.DATE: (T.DateType(), pa.date32(), "date"),
    st.TIME: (T.IntegerType(), pa.int32(), "time"),
    st.MICRO_TIME: (T.LongType(), pa.int64(), "time"),
    st.NANO_TIME: (T.LongType(), pa.int64(), "time"),
    st.TIMESTAMP: (T.TimestampNTZType(), pa.timestamp("us"), "timestamp"),
    st.MICRO_TIMESTAMP: (T.TimestampNTZType(), pa.timestamp("us"), "timestamp"),
    st.NANO_TIMESTAMP: (T.TimestampNTZType(), pa.timestamp("us"), "timestamp"),
    st.ZONED_TIMESTAMP: (T.TimestampType(), pa.timestamp("us", tz="UTC"), "timestamptz"),
    st.ZONED_TIME: (T.StringType(), pa.string(), "timetz"),
    st.YEAR: (T.IntegerType(), pa.int32(), "integer"),
    st.VARIABLE_SCALE_DECIMAL: (T.DecimalType(38, 18), pa.decimal128(38, 18), "numeric"),
    st.JSON: (T.StringType(), pa.string(), "json"),
    st.UUID: (T.StringType(), pa.string(), "uuid"),
    st.ENUM: (T.StringType(), pa.string(), "text"),
    st.BITS: (T.BinaryType(), pa.binary(), "bit(10)"),
}


# --- the mapping ----------------------------------------------------------------------------------


def test_every_name_is_declared_once_and_typed_for_spark_arrow_and_postgres():
    from connect_spark.connectors.jdbc.dialect import Column
    from connect_spark.connectors.jdbc.postgres import PostgresDialect

    dialect = PostgresDialect(None)
    assert set(st.SEMANTIC_TYPES) == set(SCHEMAS) == set(EXPECTED)
    for name, schema in SCHEMAS.items():
        spark, arrow, postgres = EXPECTED[name]
        assert to_spark_type(schema) == spark, name
        assert to_arrow_type(schema) == arrow, name
        assert dialect.sql_type(Column("f", schema)) == postgres, name
    assert dialect.sql_type(Column("f", SchemaBuilder.array(SCHEMAS[st.ZONED_TIMESTAMP]).build())) == "timestamptz[]"


def test_a_decimal_with_its_precision_is_a_numeric_of_that_precision_in_postgres():
    from connect_spark.api.data import Decimal
    from connect_spark.connectors.jdbc.dialect import Column
    from connect_spark.connectors.jdbc.postgres import PostgresDialect

    dialect = PostgresDialect(None)

    def numeric(scale: int, precision: str | None) -> str:
        builder = Decimal.builder(scale)
        if precision is not None:
            builder = builder.parameter(Decimal.PRECISION_FIELD, precision)
        return dialect.sql_type(Column("f", builder.optional().build()))

    assert numeric(2, "12") == "numeric(12,2)"  # Debezium's numeric(12,2) column
    assert numeric(0, "5") == "numeric(5,0)"
    assert numeric(2, None) == "numeric"  # Confluent's dialect: no precision, an exact numeric of any size
    assert numeric(3, "2") == numeric(-1, "5") == numeric(2, "1001") == numeric(2, "x") == "numeric"


def test_the_encoding_type_is_kept_for_the_plan_and_typed_at_every_depth():
    ts = SCHEMAS[st.MICRO_TIMESTAMP]
    nested = SchemaBuilder.struct().field("at", ts).field("many", SchemaBuilder.array(ts).optional().build()) \
        .field("by", SchemaBuilder.map(Schema.STRING_SCHEMA, SCHEMAS[st.DATE]).optional().build()) \
        .field("n", SCHEMAS[st.VARIABLE_SCALE_DECIMAL]).build()
    assert to_spark_type(nested).simpleString() == (
        "struct<at:timestamp_ntz,many:array<timestamp_ntz>,by:map<string,date>,n:decimal(38,18)>")
    assert encoded_spark_type(nested).simpleString() == (
        "struct<at:bigint,many:array<bigint>,by:map<string,int>,n:struct<scale:int,value:binary>>")
    assert to_arrow_type(nested).field("many").type == pa.list_(pa.field("element", pa.timestamp("us"), True))


def test_a_name_on_another_type_is_a_plain_schema():
    assert st.semantic_type(named(SchemaBuilder.string(), st.MICRO_TIMESTAMP).build()) is None
    wrong_fields = named(SchemaBuilder.struct(), st.VARIABLE_SCALE_DECIMAL).field("x", Schema.INT32_SCHEMA).build()
    assert st.semantic_type(wrong_fields) is None
    assert to_spark_type(wrong_fields).simpleString() == "struct<x:int>"


def test_json_and_bits_follow_the_propagated_source_column_type():
    jsonb = named(SchemaBuilder.string(), st.JSON, **{st.SOURCE_COLUMN_TYPE: "JSONB"}).build()
    assert st.postgres_type(st.semantic_type(jsonb), jsonb) == "jsonb"
    varbit = named(SchemaBuilder.bytes(), st.BITS, length="5", **{st.SOURCE_COLUMN_TYPE: "VARBIT"}).build()
    assert st.postgres_type(st.semantic_type(varbit), varbit) == "bit varying(5)"
    unbounded = named(SchemaBuilder.bytes(), st.BITS, length=str(2**31 - 1)).build()
    assert st.postgres_type(st.semantic_type(unbounded), unbounded) == "bit varying"


def test_kafka_decimals_keep_their_precision_and_scale():
    def decimal_schema(scale: int, precision: str | None) -> Schema:
        b = SchemaBuilder.bytes().name("org.apache.kafka.connect.data.Decimal").parameter("scale", str(scale))
        return (b.parameter("connect.decimal.precision", precision) if precision else b).build()

    assert to_spark_type(decimal_schema(2, "10")) == T.DecimalType(10, 2)
    assert to_spark_type(decimal_schema(2, None)) == T.DecimalType(38, 2)
    assert to_arrow_type(decimal_schema(5, "3")) == pa.decimal128(5, 5)  # PostgreSQL's numeric(3,5)
    assert to_spark_type(decimal_schema(-3, "2")) == T.DecimalType(5, 0)  # numeric(2,-3): whole thousands


def test_frames_from_spark_or_arrow_read_a_local_date_time_as_micro_timestamp():
    assert from_spark_type(T.TimestampNTZType()).name == st.MICRO_TIMESTAMP
    assert from_arrow_type(pa.timestamp("us")).name == st.MICRO_TIMESTAMP
    assert from_arrow_type(pa.timestamp("us", tz="UTC")).name == "org.apache.kafka.connect.data.Timestamp"


# --- values ---------------------------------------------------------------------------------------


def sem(name: str) -> st.SemanticType:
    return st.SEMANTIC_TYPES[name]


@pytest.mark.parametrize("name, value, column, python", [
    (st.DATE, 0, 0, datetime.date(1970, 1, 1)),
    (st.DATE, -1, -1, datetime.date(1969, 12, 31)),
    (st.DATE, 19782, 19782, datetime.date(2024, 2, 29)),  # a leap day
    (st.DATE, st.MIN_DAY, st.MIN_DAY, datetime.date(1, 1, 1)),
    (st.DATE, st.MAX_DAY, st.MAX_DAY, datetime.date(9999, 12, 31)),
    (st.TIMESTAMP, -1, -1000, datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)),
    (st.MICRO_TIMESTAMP, 1_709_164_800_000_001, 1_709_164_800_000_001,
     datetime.datetime(2024, 2, 29, 0, 0, 0, 1)),
    (st.MICRO_TIMESTAMP, -1, -1, datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    (st.NANO_TIMESTAMP, 1_999, 1, datetime.datetime(1970, 1, 1, 0, 0, 0, 1)),  # truncated to the microsecond
    (st.NANO_TIMESTAMP, -1, -1, datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)),  # floored, not rounded
    (st.TIME, 3_723_004, 3_723_004, datetime.time(1, 2, 3, 4000)),
    (st.MICRO_TIME, 86_399_999_999, 86_399_999_999, datetime.time(23, 59, 59, 999999)),
    (st.NANO_TIME, 1_999, 1_999, datetime.time(0, 0, 0, 1)),
    (st.YEAR, 2024, 2024, 2024),
    (st.ZONED_TIMESTAMP, "2024-01-02T03:04:05.123456+02:00", 1_704_157_445_123_456,
     datetime.datetime(2024, 1, 2, 1, 4, 5, 123456, tzinfo=UTC)),
    (st.ZONED_TIMESTAMP, "1969-12-31T23:59:59.999999999Z", -1,
     datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    (st.ZONED_TIMESTAMP, "2024-02-29t00:00-05", 1_709_182_800_000_000,
     datetime.datetime(2024, 2, 29, 5, 0, tzinfo=UTC)),
    (st.ZONED_TIMESTAMP, "2000-01-01T00:00:00+05:30:15", 946_664_985_000_000,
     datetime.datetime(1999, 12, 31, 18, 29, 45, tzinfo=UTC)),
    (st.ENUM, "a", "a", "a"),
    (st.BITS, b"\x05", b"\x05", b"\x05"),
])
def test_values_to_their_column_and_their_meaning(name, value, column, python):
    assert st.to_column_value(sem(name), value) == column
    assert st.to_logical(sem(name), value) == python


def test_a_variable_scale_decimal_becomes_a_scale_18_decimal_exactly():
    schema = SCHEMAS[st.VARIABLE_SCALE_DECIMAL]
    for text in ("1.50", "-0.000000000000000001", "12345678901234567890.123456789012345678", "0", "-7",
                 "1.500000000000000000000"):  # trailing zeros beyond 18 digits lose nothing
        value = st.to_column_value(sem(st.VARIABLE_SCALE_DECIMAL), vsd(schema, text))
        assert value == decimal.Decimal(text) and value.as_tuple().exponent == -18
    negative_scale = Struct(schema).put("scale", -3).put("value", unscaled_to_bytes(12))
    assert st.to_column_value(sem(st.VARIABLE_SCALE_DECIMAL), negative_scale) == decimal.Decimal(12000)
    assert st.to_logical(sem(st.VARIABLE_SCALE_DECIMAL), vsd(schema, "1.50")) == decimal.Decimal("1.50")


@pytest.mark.parametrize("name, value, message", [
    (st.DATE, st.MAX_DAY + 1, "outside the years 1-9999"),
    (st.DATE, st.MIN_DAY - 1, "outside the years 1-9999"),
    (st.MICRO_TIMESTAMP, st.MAX_MICROS + 1, "outside the years 1-9999"),
    (st.TIMESTAMP, -62_135_596_800_001, "outside the years 1-9999"),
    (st.ZONED_TIMESTAMP, "infinity", "not an ISO-8601 date-time"),
    (st.ZONED_TIMESTAMP, "2024-01-02 03:04:05", "not an ISO-8601 date-time"),
    (st.ZONED_TIMESTAMP, "2023-02-29T00:00:00Z", "date that does not exist"),
    (st.ZONED_TIMESTAMP, "2023-01-01T24:00:00Z", "time that does not exist"),
    (st.ZONED_TIMESTAMP, "2023-01-01T00:00:00+19:00", "offset beyond"),
    (st.ZONED_TIMESTAMP, "0001-01-01T00:00:00+01:00", "outside the years 1-9999"),
])
def test_values_their_column_cannot_hold_are_data_errors(name, value, message):
    with pytest.raises(st.SemanticValueError, match=message):
        st.to_column_value(sem(name), value)


def test_decimals_beyond_scale_18_or_20_integer_digits_are_data_errors():
    schema = SCHEMAS[st.VARIABLE_SCALE_DECIMAL]
    with pytest.raises(st.SemanticValueError, match="more than 18 digits after the point"):
        st.to_column_value(sem(st.VARIABLE_SCALE_DECIMAL), vsd(schema, "0.0000000000000000001"))
    with pytest.raises(st.SemanticValueError, match="more than 20 digits before the point"):
        st.to_column_value(sem(st.VARIABLE_SCALE_DECIMAL), vsd(schema, "123456789012345678901"))


def test_times_outside_a_day_have_no_python_meaning():
    with pytest.raises(st.SemanticValueError, match="not a time of day"):
        st.to_logical(sem(st.MICRO_TIME), st.MICROS_PER_DAY)  # PostgreSQL's 24:00:00


def test_zoned_timestamps_come_back_in_utc_as_java_writes_them():
    assert st.format_zoned_timestamp(1_704_157_445_123_450) == "2024-01-02T01:04:05.12345Z"
    assert st.format_zoned_timestamp(0) == "1970-01-01T00:00:00Z"
    assert st.format_zoned_timestamp(st.MIN_MICROS) == "0001-01-01T00:00:00Z"
    assert st.format_zoned_timestamp(-1) == "1969-12-31T23:59:59.999999Z"
    canonical = re.compile(st.CANONICAL_ZONED_TIMESTAMP)
    for micros in (0, -1, 1, 10, 123_456_789, st.MIN_MICROS, st.MAX_MICROS, 1_709_164_800_500_000):
        text = st.format_zoned_timestamp(micros)
        assert canonical.match(text), text
        assert st.parse_zoned_timestamp(text) == micros
    for other in ("2024-01-02T01:04:05.123450Z", "2024-01-02T01:04:05+00:00", "2024-01-02T01:04Z",
                  "0000-01-01T00:00:00Z", "2024-01-02T01:04:05.1234567Z"):
        assert not canonical.match(other), other


def test_column_values_come_back_to_their_encoding():
    schema = SCHEMAS[st.VARIABLE_SCALE_DECIMAL]
    back = st.from_column_value(sem(st.VARIABLE_SCALE_DECIMAL), decimal.Decimal("1.500000000000000000"), schema)
    assert back.get("scale") == 1 and back.get("value") == unscaled_to_bytes(15)
    assert st.from_column_value(sem(st.VARIABLE_SCALE_DECIMAL), decimal.Decimal("0E-18")) == \
        {"scale": 0, "value": b"\x00"}
    big = decimal.Decimal("12345678901234567890.123456789012345678")  # 38 digits: no rounding to 28
    parts = st.from_column_value(sem(st.VARIABLE_SCALE_DECIMAL), big)
    assert int.from_bytes(parts["value"], "big", signed=True) == 12345678901234567890123456789012345678
    assert st.from_column_value(sem(st.NANO_TIMESTAMP), datetime.datetime(1970, 1, 1, 0, 0, 0, 1)) == 1000
    assert st.from_column_value(sem(st.TIMESTAMP), datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)) == -1
    assert st.from_column_value(sem(st.DATE), datetime.date(2024, 2, 29)) == 19782
    assert st.from_column_value(sem(st.ZONED_TIMESTAMP), datetime.datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)) == \
        "2024-01-02T01:04:05Z"


def test_bits_as_sql_bit_strings_highest_bit_first():
    assert st.bits_text(b"\x05\x01", 10) == "0100000101"
    assert st.bits_text(b"\x05", None) == "101"
    assert st.bits_text(b"\xff", 4) == "1111"


# --- records → frame → records --------------------------------------------------------------------


def after_schema() -> Schema:
    b = SchemaBuilder.struct().name("dbserver.public.t.Value").field("id", Schema.INT32_SCHEMA)
    for name, schema in SCHEMAS.items():
        b = b.field(name.rsplit(".", 1)[1].lower(), schema)
    return b.build()


def after_value(schema: Schema, **overrides) -> Struct:
    values = {"id": 1, "date": 19782, "time": 3_723_004, "microtime": 1, "nanotime": 2, "timestamp": -1,
              "microtimestamp": 1_704_164_645_123_456, "nanotimestamp": 1_000, "zonedtimestamp": "2024-01-02T01:04:05Z",
              "zonedtime": "10:15:30+01:00", "year": 2024, "variablescaledecimal": vsd(schema.field(
                  "variablescaledecimal").schema, "1.5"), "json": '{"a":1}',
              "uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "enum": "b", "bits": b"\x05"}
    values.update(overrides)
    struct = Struct(schema)
    for name, value in values.items():
        struct.put(name, value)
    return struct


def record(schema: Schema, value: Struct, offset: int = 0) -> SinkRecord:
    return SinkRecord(topic="t", kafka_partition=0, key_schema=None, key=None, value_schema=schema, value=value,
                      kafka_offset=offset)


def test_records_build_typed_columns_and_come_back_as_they_were():
    schema = after_schema()
    value = after_value(schema)
    frame = fit_records_to_frame([record(schema, value)])
    assert not frame.misfits
    column = frame.table.column("value").type
    assert column.field("microtimestamp").type == pa.timestamp("us")
    assert column.field("zonedtimestamp").type == pa.timestamp("us", tz="UTC")
    assert column.field("date").type == pa.date32()
    row = frame.table.column("value").to_pylist()[0]
    assert row["microtimestamp"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert row["timestamp"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)
    assert row["variablescaledecimal"] == decimal.Decimal("1.5")
    back = frame_to_records(frame.table, None, schema)[0].value
    for f in schema.fields:
        assert back.get(f.name) == value.get(f.name), f.name


def test_a_value_that_does_not_fit_its_column_is_a_misfit_naming_the_field():
    schema = after_schema()
    records = [record(schema, after_value(schema), 0),
               record(schema, after_value(schema, zonedtimestamp="infinity"), 1),
               record(schema, after_value(schema, variablescaledecimal=vsd(
                   schema.field("variablescaledecimal").schema, "1.0000000000000000001")), 2),
               record(schema, after_value(schema, microtimestamp=st.MAX_MICROS + 1), 3)]
    frame = fit_records_to_frame(records)
    assert frame.table.num_rows == 1
    reasons = [reason for _, reason in frame.misfits]
    assert reasons[0].startswith("t[0]@1: field 'zonedtimestamp' of the value does not fit its column: ")
    assert "'infinity' is not an ISO-8601 date-time" in reasons[0]
    assert "field 'variablescaledecimal'" in reasons[1] and "more than 18 digits" in reasons[1]
    assert "field 'microtimestamp'" in reasons[2] and "outside the years 1-9999" in reasons[2]


def test_arrays_of_semantic_values_are_typed_element_by_element():
    schema = SchemaBuilder.array(SCHEMAS[st.DATE]).build()
    fitted = fit_column([[0, None, 19782], [st.MAX_DAY + 1]], [schema, schema], "value")
    assert fitted.array.type == pa.list_(pa.field("element", pa.date32(), True))
    assert fitted.array.to_pylist()[0] == [datetime.date(1970, 1, 1), None, datetime.date(2024, 2, 29)]
    assert [m.index for m in fitted.misfits] == [1] and "field '[]' of the value" in fitted.misfits[0].reason
    assert value_reader(schema)([datetime.date(1970, 1, 2)]) == [1]


def test_a_semantic_name_never_merges_with_a_plain_or_another_one():
    plain = SchemaBuilder.struct().field("at", Schema.OPTIONAL_INT64_SCHEMA).build()
    micro = SchemaBuilder.struct().field("at", SCHEMAS[st.MICRO_TIMESTAMP]).build()
    nano = SchemaBuilder.struct().field("at", SCHEMAS[st.NANO_TIMESTAMP]).build()
    for a, b in ((plain, micro), (micro, nano)):
        with pytest.raises(SchemaConflict):
            merge_schemas(a, b)
    old = SchemaBuilder.struct().field("e", named(SchemaBuilder.string(), st.ENUM, allowed="a").build()).build()
    new = SchemaBuilder.struct().field("e", named(SchemaBuilder.string(), st.ENUM, allowed="a,b").build()).build()
    assert merge_schemas(old, new).field("e").schema.name == st.ENUM  # an Enum gaining a value


# --- the JDBC sink's values -----------------------------------------------------------------------


def test_the_jdbc_sink_writes_what_the_values_mean():
    from connect_spark.connectors.jdbc.rows import semantic_writer

    def write(name, value):
        writer = semantic_writer(SCHEMAS[name])
        return value if writer is None else writer(value)

    assert write(st.DATE, 19782) == datetime.date(2024, 2, 29)
    assert write(st.DATE, st.MAX_DAY + 1) == "10000-01-01"  # beyond Python: SQL text the database parses
    assert write(st.DATE, st.MIN_DAY - 1) == "0001-12-31 BC"
    assert write(st.MICRO_TIMESTAMP, -1) == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert write(st.TIMESTAMP, (st.MAX_DAY + 1) * 86_400_000) == "10000-01-01 00:00:00.000000"
    assert write(st.MICRO_TIME, st.MICROS_PER_DAY) == "24:00:00.000000"
    assert write(st.NANO_TIME, 1_500) == datetime.time(0, 0, 0, 1)
    assert write(st.ZONED_TIMESTAMP, "2024-01-02T03:04:05+02:00") == datetime.datetime(2024, 1, 2, 1, 4, 5,
                                                                                        tzinfo=UTC)
    assert write(st.ZONED_TIMESTAMP, "infinity") == "infinity"  # PostgreSQL's own; it decides
    assert write(st.VARIABLE_SCALE_DECIMAL, vsd(SCHEMAS[st.VARIABLE_SCALE_DECIMAL], "-1.50")) == \
        decimal.Decimal("-1.50")
    assert write(st.BITS, b"\x05") == "0000000101"
    assert write(st.UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11") == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert write(st.DATE, None) is None
    array = semantic_writer(SchemaBuilder.array(SCHEMAS[st.DATE]).build())
    assert array([0, None]) == [datetime.date(1970, 1, 1), None]


# --- the S3 sink's Confluent formats keep the encoding --------------------------------------------


def test_s3_json_and_avro_write_the_encoding_of_typed_columns():
    import io
    import json

    import fastavro

    from connect_spark.connectors.s3.avro_schema import avro_schema
    from connect_spark.connectors.s3.config import S3SinkConfig
    from connect_spark.connectors.s3.formats import serialize

    schema = after_schema()
    value = after_value(schema)
    column = fit_records_to_frame([record(schema, value)]).table.column("value").combine_chunks()
    config = S3SinkConfig.parse({"s3.bucket.name": "b", "flush.size": "1",
                                 "format.class": "io.confluent.connect.s3.format.json.JsonFormat"})
    written = json.loads(serialize(column, schema, config, "o.json", "json"))
    assert written["microtimestamp"] == 1_704_164_645_123_456
    assert written["timestamp"] == -1 and written["date"] == 19782 and written["nanotimestamp"] == 1_000
    assert written["zonedtimestamp"] == "2024-01-02T01:04:05Z"
    assert written["variablescaledecimal"] == {"scale": 1, "value": "Dw=="}
    assert written["bits"] == "BQ=="
    avro = next(fastavro.reader(io.BytesIO(serialize(column, schema, config, "o.avro", "avro"))))
    assert avro["nanotimestamp"] == 1_000 and avro["microtimestamp"] == 1_704_164_645_123_456
    assert avro["variablescaledecimal"] == {"scale": 1, "value": b"\x0f"}
    node = {f["name"]: f["type"] for f in avro_schema(schema)["fields"]}
    assert node["microtimestamp"] == ["null", {"type": "long", "connect.version": 1,
                                               "connect.name": st.MICRO_TIMESTAMP}]
