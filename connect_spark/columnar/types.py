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
============================ ===================== ===============================

``p`` is the schema's ``connect.decimal.precision`` parameter when set, else 38. Spark 4.0 has no
time-of-day type, so Time is carried as its Connect encoding (milliseconds since midnight).
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
from connect_spark.api.errors import DataException

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

__all__ = [
    "UnsupportedTypeError",
    "to_spark_type",
    "to_arrow_type",
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


def to_spark_type(schema: Schema) -> "DataType":
    """The Spark type holding values of ``schema``."""
    from pyspark.sql import types as T

    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        return T.DecimalType(decimal_precision(schema), Decimal.scale(schema))
    if name == DATE_LOGICAL_NAME:
        return T.DateType()
    if name == TIME_LOGICAL_NAME:
        return T.IntegerType()
    if name == TIMESTAMP_LOGICAL_NAME:
        return T.TimestampType()
    t = schema.type
    if t is Type.ARRAY:
        element = schema.value_schema
        return T.ArrayType(to_spark_type(element), element.is_optional)
    if t is Type.MAP:
        value = schema.value_schema
        return T.MapType(to_spark_type(schema.key_schema), to_spark_type(value), value.is_optional)
    if t is Type.STRUCT:
        return T.StructType([T.StructField(f.name, to_spark_type(f.schema), f.schema.is_optional)
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
    """The Arrow type holding values of ``schema``."""
    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        return pa.decimal128(decimal_precision(schema), Decimal.scale(schema))
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
