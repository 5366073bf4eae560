"""Connect schemas ⇄ Spark SQL types ⇄ Arrow types, for record frames.

Pure functions, no JVM. Mapping (optional schemas give nullable fields / elements / values):

============================ ===================== ===============================
Connect                      Spark                 Arrow
============================ ===================== ===============================
INT8 / INT16 / INT32 / INT64 byte/short/int/long   int8/int16/int32/int64
FLOAT32 / FLOAT64            float / double        float32 / float64
BOOLEAN, STRING, BYTES       boolean/string/binary bool / string / binary
ARRAY, MAP, STRUCT           array / map / struct  list / map / struct
Decimal (scale s)            decimal(p, s)         decimal128(p, s)
Date                         date                  date32
Time                         int (millis of day)   time32[ms]
Timestamp                    timestamp (UTC)       timestamp[us, UTC]
Debezium's semantic types    see below             see below
============================ ===================== ===============================

``p`` is the schema's ``connect.decimal.precision`` parameter when set, else 38 (never below the scale;
a negative scale, which PostgreSQL 15 allows, is carried as ``decimal(p - s, 0)``). Spark 4.0 has no
time-of-day type, so Time is carried as its Connect encoding (milliseconds since midnight).

Debezium's names (:mod:`connect_spark.api.data.semantic_types` declares them) become their column kind:
``date`` → date / date32, ``timestamp_ntz`` → timestamp_ntz / timestamp[us] (no zone), ``timestamp`` →
timestamp / timestamp[us, UTC], ``decimal`` → decimal(38,18) / decimal128(38,18), ``int``, ``bigint``,
``string``, ``binary`` → the primitive. :func:`encoded_spark_type` keeps them as their Connect encoding:
the vectorized plan's converters and transforms work on encodings and type the columns last
(:mod:`connect_spark.columnar.semantic_columns`), as the per-record path converts records first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from connect_spark.api.data import Schema, SchemaBuilder, Type
from connect_spark.api.data.logical import Decimal
from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
)
from connect_spark.api.data.semantic_types import (
    DECIMAL_PRECISION,
    DECIMAL_SCALE,
    MICRO_TIMESTAMP,
    semantic_type,
)
from connect_spark.api.errors import DataException

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "UnsupportedTypeError",
    "to_spark_type",
    "encoded_spark_type",
    "to_arrow_type",
    "decimal_type",
    "record_frame_spark_schema",
    "from_spark_type",
    "from_arrow_type",
    "decimal_precision",
]

DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"
_MAX_PRECISION = 38


class UnsupportedTypeError(DataException):
    """A type with no counterpart on the other side (e.g. a Spark interval, an Arrow union)."""


def decimal_precision(schema: Schema) -> int:
    """The precision a Decimal schema is carried with: its precision parameter, else 38."""
    text = (schema.parameters or {}).get(DECIMAL_PRECISION_PARAMETER)
    try:
        precision = int(text) if text is not None else _MAX_PRECISION
    except ValueError:
        precision = _MAX_PRECISION
    return max(1, min(precision, _MAX_PRECISION))


def decimal_type(schema: Schema) -> tuple[int, int]:
    """``(precision, scale)`` of the decimal column of a Decimal schema: the precision parameter (else 38), at
    least the scale; a negative scale (``1E+3`` steps) is carried as scale 0 with room for its zeros.

    Raises:
        UnsupportedTypeError: a scale over 38, which no Spark or Arrow decimal holds.
    """
    scale = Decimal.scale(schema)
    precision = decimal_precision(schema)
    if scale < 0:
        return min(precision - scale, _MAX_PRECISION), 0
    if scale > _MAX_PRECISION:
        raise UnsupportedTypeError(f"A Decimal of scale {scale} has no Spark or Arrow decimal type (at most 38)")
    return max(precision, scale), scale


def to_spark_type(schema: Schema) -> "DataType":
    """The Spark type of the column holding values of ``schema`` (Debezium's semantic types typed)."""
    return _spark_type(schema, True)


def encoded_spark_type(schema: Schema) -> "DataType":
    """The Spark type of ``schema``'s Connect encoding: :func:`to_spark_type` with Debezium's semantic types
    left as their primitives (what a JSON or Avro payload holds before the plan types it)."""
    return _spark_type(schema, False)


def _spark_column(kind: str) -> "DataType":
    """The Spark type of a semantic type's column kind."""
    from pyspark.sql import types as T

    return {"date": T.DateType(), "int": T.IntegerType(), "bigint": T.LongType(), "timestamp_ntz": T.TimestampNTZType(),
            "timestamp": T.TimestampType(), "string": T.StringType(), "binary": T.BinaryType(),
            "decimal": T.DecimalType(DECIMAL_PRECISION, DECIMAL_SCALE)}[kind]


_ARROW_COLUMNS = {"date": pa.date32(), "int": pa.int32(), "bigint": pa.int64(), "timestamp_ntz": pa.timestamp("us"),
                  "timestamp": pa.timestamp("us", tz="UTC"), "string": pa.string(), "binary": pa.binary(),
                  "decimal": pa.decimal128(DECIMAL_PRECISION, DECIMAL_SCALE)}


def _spark_type(schema: Schema, semantic: bool) -> "DataType":
    from pyspark.sql import types as T

    name = schema.name
    if semantic:
        found = semantic_type(schema)
        if found is not None:
            return _spark_column(found.column)
    if name == DECIMAL_LOGICAL_NAME:
        return T.DecimalType(*decimal_type(schema))
    if name == DATE_LOGICAL_NAME:
        return T.DateType()
    if name == TIME_LOGICAL_NAME:
        return T.IntegerType()
    if name == TIMESTAMP_LOGICAL_NAME:
        return T.TimestampType()
    t = schema.type
    if t is Type.ARRAY:
        element = schema.value_schema
        return T.ArrayType(_spark_type(element, semantic), element.is_optional)
    if t is Type.MAP:
        value = schema.value_schema
        return T.MapType(_spark_type(schema.key_schema, semantic), _spark_type(value, semantic), value.is_optional)
    if t is Type.STRUCT:
        return T.StructType([T.StructField(f.name, _spark_type(f.schema, semantic), f.schema.is_optional)
                             for f in schema.fields])
    return _SPARK_PRIMITIVES()[t]


def _SPARK_PRIMITIVES() -> dict[Type, "DataType"]:
    from pyspark.sql import types as T

    return {Type.INT8: T.ByteType(), Type.INT16: T.ShortType(), Type.INT32: T.IntegerType(),
            Type.INT64: T.LongType(), Type.FLOAT32: T.FloatType(), Type.FLOAT64: T.DoubleType(),
            Type.BOOLEAN: T.BooleanType(), Type.STRING: T.StringType(), Type.BYTES: T.BinaryType()}


_ARROW_PRIMITIVES: dict[Type, pa.DataType] = {
    Type.INT8: pa.int8(), Type.INT16: pa.int16(), Type.INT32: pa.int32(), Type.INT64: pa.int64(),
    Type.FLOAT32: pa.float32(), Type.FLOAT64: pa.float64(), Type.BOOLEAN: pa.bool_(),
    Type.STRING: pa.string(), Type.BYTES: pa.binary(),
}


def to_arrow_type(schema: Schema) -> pa.DataType:
    """The Arrow type of the column holding values of ``schema`` (Debezium's semantic types typed)."""
    found = semantic_type(schema)
    if found is not None:
        return _ARROW_COLUMNS[found.column]
    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        return pa.decimal128(*decimal_type(schema))
    if name == DATE_LOGICAL_NAME:
        return pa.date32()
    if name == TIME_LOGICAL_NAME:
        return pa.time32("ms")
    if name == TIMESTAMP_LOGICAL_NAME:
        return pa.timestamp("us", tz="UTC")
    t = schema.type
    if t is Type.ARRAY:
        element = schema.value_schema
        return pa.list_(pa.field("element", to_arrow_type(element), element.is_optional))
    if t is Type.MAP:
        value = schema.value_schema
        return pa.map_(to_arrow_type(schema.key_schema), pa.field("value", to_arrow_type(value), value.is_optional))
    if t is Type.STRUCT:
        return pa.struct([pa.field(f.name, to_arrow_type(f.schema), f.schema.is_optional) for f in schema.fields])
    return _ARROW_PRIMITIVES[t]


def from_spark_type(data_type: "DataType", optional: bool = True) -> Schema:
    """A Connect schema for a Spark type (used for frames whose schema came from Spark).

    Raises:
        UnsupportedTypeError: for types Connect cannot hold (intervals, variants, ...).
    """
    from pyspark.sql import types as T

    simple = {T.ByteType: SchemaBuilder.int8, T.ShortType: SchemaBuilder.int16, T.IntegerType: SchemaBuilder.int32,
              T.LongType: SchemaBuilder.int64, T.FloatType: SchemaBuilder.float32,
              T.DoubleType: SchemaBuilder.float64, T.BooleanType: SchemaBuilder.bool,
              T.StringType: SchemaBuilder.string, T.BinaryType: SchemaBuilder.bytes}
    builder: SchemaBuilder
    for spark_class, make in simple.items():
        if type(data_type) is spark_class:
            builder = make()
            break
    else:
        if isinstance(data_type, T.DecimalType):
            builder = Decimal.builder(data_type.scale).parameter(DECIMAL_PRECISION_PARAMETER,
                                                                  str(data_type.precision))
        elif isinstance(data_type, T.DateType):
            from connect_spark.api.data import Date
            builder = Date.builder()
        elif isinstance(data_type, T.TimestampType):
            from connect_spark.api.data import Timestamp
            builder = Timestamp.builder()
        elif isinstance(data_type, T.TimestampNTZType):  # a local date-time: Debezium's MicroTimestamp
            builder = SchemaBuilder.int64().name(MICRO_TIMESTAMP).version(1)
        elif isinstance(data_type, T.ArrayType):
            builder = SchemaBuilder.array(from_spark_type(data_type.elementType, data_type.containsNull))
        elif isinstance(data_type, T.MapType):
            builder = SchemaBuilder.map(from_spark_type(data_type.keyType, False),
                                        from_spark_type(data_type.valueType, data_type.valueContainsNull))
        elif isinstance(data_type, T.StructType):
            builder = SchemaBuilder.struct()
            for field in data_type.fields:
                builder.field(field.name, from_spark_type(field.dataType, field.nullable))
        else:
            raise UnsupportedTypeError(f"No Connect schema for Spark type {data_type.simpleString()}")
    return (builder.optional() if optional else builder).build()


def from_arrow_type(arrow_type: pa.DataType, optional: bool = True) -> Schema:
    """A Connect schema for an Arrow type.

    Raises:
        UnsupportedTypeError: for types Connect cannot hold (unions, durations, ...).
    """
    simple = {pa.int8(): SchemaBuilder.int8, pa.int16(): SchemaBuilder.int16, pa.int32(): SchemaBuilder.int32,
              pa.int64(): SchemaBuilder.int64, pa.float32(): SchemaBuilder.float32,
              pa.float64(): SchemaBuilder.float64, pa.bool_(): SchemaBuilder.bool,
              pa.string(): SchemaBuilder.string, pa.large_string(): SchemaBuilder.string,
              pa.binary(): SchemaBuilder.bytes, pa.large_binary(): SchemaBuilder.bytes}
    make = simple.get(arrow_type)
    if make is not None:
        builder = make()
    elif pa.types.is_decimal(arrow_type):
        builder = Decimal.builder(arrow_type.scale).parameter(DECIMAL_PRECISION_PARAMETER, str(arrow_type.precision))
    elif pa.types.is_date32(arrow_type):
        from connect_spark.api.data import Date
        builder = Date.builder()
    elif pa.types.is_time32(arrow_type) and arrow_type.unit == "ms":
        from connect_spark.api.data import Time
        builder = Time.builder()
    elif pa.types.is_timestamp(arrow_type) and arrow_type.tz is None:  # a local date-time
        builder = SchemaBuilder.int64().name(MICRO_TIMESTAMP).version(1)
    elif pa.types.is_timestamp(arrow_type):
        from connect_spark.api.data import Timestamp
        builder = Timestamp.builder()
    elif pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        field = arrow_type.value_field
        builder = SchemaBuilder.array(from_arrow_type(field.type, field.nullable))
    elif pa.types.is_map(arrow_type):
        builder = SchemaBuilder.map(from_arrow_type(arrow_type.key_type, False),
                                    from_arrow_type(arrow_type.item_type, arrow_type.item_field.nullable))
    elif pa.types.is_struct(arrow_type):
        builder = SchemaBuilder.struct()
        for i in range(arrow_type.num_fields):
            field = arrow_type.field(i)
            builder.field(field.name, from_arrow_type(field.type, field.nullable))
    else:
        raise UnsupportedTypeError(f"No Connect schema for Arrow type {arrow_type}")
    return (builder.optional() if optional else builder).build()


def record_frame_spark_schema(table: pa.Table, key_schema: Schema | None, value_schema: Schema | None) -> "StructType":
    """The Spark schema of a record frame built from records (``fit_records_to_frame``), for
    ``createDataFrame``: the key and value columns typed from their Connect schemas (:func:`to_spark_type`,
    so a ``timestamp_ntz`` stays one, where Spark would read a naive Arrow timestamp as a local ``timestamp``,
    and a Time is an int), the other columns from their Arrow types."""
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    fields = []
    for field in table.schema:
        schema = key_schema if field.name == "key" else value_schema if field.name == "value" else None
        if schema is not None and not pa.types.is_null(field.type):
            data_type = to_spark_type(schema)
        else:
            data_type = from_arrow_type(field.type, prefer_timestamp_ntz=True)
        fields.append(T.StructField(field.name, data_type, field.nullable))
    return T.StructType(fields)
