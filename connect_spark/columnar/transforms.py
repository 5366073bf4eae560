"""Single message transforms and predicates as column expressions, for :mod:`connect_spark.columnar.plan`.

Called by :func:`~connect_spark.columnar.plan.build_plan`: :func:`transform_step` once per configured transform
when the connector starts (raising :class:`NotVectorizable` for a transform or predicate with no
column form), then :meth:`TransformStep.run` once per micro-batch, in chain order, on the batch's
:class:`~connect_spark.columnar.plan.RecordColumns`.

Each compiled transform maps ``RecordColumns`` to ``RecordColumns``: new topic / key / value / headers
expressions, and ``require(condition)`` for every row whose per-record result it cannot reproduce
exactly (the per-record transform would raise, or give a value the columns cannot hold). Those rows
go to the fallback, where the per-record transform runs and ``errors.*`` applies. The per-record
transforms in :mod:`connect_spark.transforms` are the reference.

Covered: RegexRouter, DropHeaders, Filter, ValueToKey, TimestampRouter (numeric formats), InsertHeader
(SimpleHeaderConverter) and, $Key and $Value, ReplaceField, InsertField, MaskField, Cast, ExtractField,
HoistField, Flatten, SetSchemaMetadata, TimestampConverter; Debezium's ExtractNewRecordState
(:mod:`~connect_spark.columnar.debezium_transforms`). HeaderFrom and Debezium's other transforms are not (see
``_NOT_VECTORIZED``).

Struct results carry their field columns (``Part.fields``) and null condition (``Part.null``): the
next transform reads fields from there, so a chain's expression stays linear in its length instead of
re-extracting every field from the previous struct expression. Under a predicate, a transform that
keeps the key/value shape applies row by row; one that reshapes them sends the rows it skips to the
fallback (:meth:`TransformStep.run`).

This module never imports :mod:`~connect_spark.columnar.plan` at run time (``plan`` imports it); new
parts are derived from existing ones with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from connect_spark.api.data import Schema, SchemaBuilder, Time, Timestamp, Type
from connect_spark.api.data.java_semantics import to_float32
from connect_spark.api.data.schema import DATE_LOGICAL_NAME, TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.debezium_transforms import extract_new_record_state
from connect_spark.columnar.parts import (
    Fields,
    assembled,
    defaults_guard,
    is_null,
    null_of,
    null_only,
    operated,
    scalar,
    struct_fields,
    upsert,
    with_operated,
    within,
)
from connect_spark.columnar.types import to_spark_type
from connect_spark.columnar.variant_schema import NotVectorizable
from connect_spark.transforms.cast import CastKey, CastValue
from connect_spark.transforms.debezium.extract_new_record_state import ExtractNewRecordState
from connect_spark.transforms.drop_headers import DropHeaders
from connect_spark.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from connect_spark.transforms.filter import Filter
from connect_spark.transforms.flatten import FlattenKey, FlattenValue
from connect_spark.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from connect_spark.transforms.insert_field import InsertFieldKey, InsertFieldValue
from connect_spark.transforms.insert_header import InsertHeader
from connect_spark.transforms.mask_field import MaskFieldKey, MaskFieldValue
from connect_spark.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connect_spark.transforms.regex_router import REGEX_CONFIG, REPLACEMENT_CONFIG, RegexRouter
from connect_spark.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connect_spark.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from connect_spark.transforms.timestamp_converter import TimestampConverterKey, TimestampConverterValue
from connect_spark.transforms.timestamp_router import TimestampRouter
from connect_spark.transforms.util import OperatesOnKey
from connect_spark.transforms.value_to_key import ValueToKey

if TYPE_CHECKING:
    from pyspark.sql import Column

    from connect_spark.columnar.plan import Part, RecordColumns

__all__ = ["NotVectorizable", "TransformStep", "cast_column", "date_tokens", "mask_literal", "mask_sample", "schemaless_type",
           "transform_step"]



def _java_full_match(regex: str) -> str:
    return f"^(?:{regex})\\z"


def _predicate(predicate: Any, props: dict[str, Any]) -> Callable[[RecordColumns], "Column"]:
    from pyspark.sql import functions as F

    kind = type(predicate)
    if kind is TopicNameMatches:
        # the instance holds a translated Python regex; Spark wants the configured Java one
        pattern = _java_full_match(predicate.config().parse(props)["pattern"])
        return lambda r: r.topic.isNotNull() & r.topic.rlike(pattern)
    if kind is HasHeaderKey:
        name = predicate.name
        return lambda r: F.coalesce(F.exists(r.headers, lambda h: h["key"] == F.lit(name)), F.lit(False))
    if kind is RecordIsTombstone:
        return lambda r: is_null(r.value)
    raise NotVectorizable(f"predicate {kind.__name__} has no vectorized form")


def _regex_router(transform: Any, props: dict[str, Any]) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import functions as F

    values = transform.parse_config(props)
    pattern = _java_full_match(values[REGEX_CONFIG])
    replacement = values[REPLACEMENT_CONFIG]

    def apply(r: RecordColumns) -> RecordColumns:
        routed = F.when(r.topic.rlike(pattern), F.regexp_replace(r.topic, pattern, replacement)).otherwise(r.topic)
        return replace(r, topic=routed)
    return apply


def _drop_headers(transform: Any) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import functions as F

    names = sorted(transform.headers)

    def apply(r: RecordColumns) -> RecordColumns:
        dropped = F.array(*[F.lit(n) for n in names])
        return replace(r, headers=F.filter(r.headers, lambda h: ~F.array_contains(dropped, h["key"])))
    return apply


def _replace_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import types as T

    def apply(r: RecordColumns) -> RecordColumns:
        part = r.key if on_key else r.value
        fields = struct_fields(part)
        if fields is None:
            raise NotVectorizable(f"ReplaceField on a {part.spark_type.simpleString()} column")
        kept = [(transform.renamed(n), c, t) for n, c, t in fields if transform.keeps(n)]
        if not kept or len({n for n, _, _ in kept}) != len(kept):
            raise NotVectorizable("ReplaceField leaves no field or two fields with one name")
        nullable = {f.name: f.nullable for f in part.spark_type.fields}
        spark_type = T.StructType([T.StructField(transform.renamed(n), t, nullable.get(n, True))
                                   for n, _, t in fields if transform.keeps(n)])
        schema = None if part.schema is None else transform.output_schema(part.schema)
        return with_operated(r, on_key, assembled(part, kept, schema, spark_type))
    return apply


def _timestamp_present() -> "Column":
    """Rows whose record has a timestamp (raw ``-1`` and null are "no timestamp")."""
    from pyspark.sql import functions as F

    ts = F.col("timestamp_ms")
    return ts.isNotNull() & (ts != -1)


# --- InsertField -------------------------------------------------------------------------------


def _insert_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """InsertField: metadata and static fields appended to a struct (schema'd) or map (schemaless).

    A null key/value passes through; any other non-struct raises per record, so it falls back.
    Schemaless: a timestamp field is only inserted when the record has a timestamp (the map then
    lacks the key), so rows without one fall back unless the field already exists.
    """
    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        fields = struct_fields(part)
        if fields is None:
            return null_only(r, on_key)
        if part.schema is None:
            return _insert_schemaless(r, part, fields, transform, on_key)
        return _insert_with_schema(r, part, fields, transform, on_key)
    return apply


def _insertions(transform: Any, r: RecordColumns, schemaless: bool) -> list[tuple[Any, "Column", Any, bool]]:
    """(spec, column, Spark type, only-when-timestamp) per configured insertion, in Kafka's order.

    A static field without ``static.value`` is inserted (as null) only with a schema, as per record.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out: list[tuple[Any, "Column", Any, bool]] = []
    if transform.topic_field is not None:
        out.append((transform.topic_field, r.topic, T.StringType(), False))
    if transform.partition_field is not None:
        out.append((transform.partition_field, r.partition, T.IntegerType(), False))
    if transform.offset_field is not None:
        out.append((transform.offset_field, F.col("offset"), T.LongType(), False))
    if transform.timestamp_field is not None:
        out.append((transform.timestamp_field, F.col("timestamp_ms"), T.LongType(), True))
    if transform.static_field is not None and not (schemaless and transform.static_value is None):
        value = transform.static_value
        column = F.lit(value) if value is not None else F.lit(None).cast("string")
        out.append((transform.static_field, column, T.StringType(), False))
    return out


def _insert_schemaless(r: RecordColumns, part: "Part", fields: Fields, transform: Any,
                       on_key: bool) -> RecordColumns:
    from pyspark.sql import functions as F

    present = _timestamp_present()
    for spec, column, spark_type, timestamp in _insertions(transform, r, schemaless=True):
        if timestamp:
            existing = next(((c, t) for n, c, t in fields if n == spec.name), None)
            if existing is not None and existing[1] == spark_type:
                column = F.when(present, column).otherwise(existing[0])
            else:  # the map lacks the key (or keeps a value of another type) without a timestamp
                r = r.require(is_null(part) | present)
        fields = upsert(fields, spec.name, within(part, column), spark_type)
    return with_operated(r, on_key, assembled(part, fields, None))


def _insert_with_schema(r: RecordColumns, part: "Part", fields: Fields, transform: Any,
                        on_key: bool) -> RecordColumns:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    try:
        schema = transform.output_schema(part.schema)
    except ConnectException:  # a name taken twice: every non-null record fails
        return null_only(r, on_key)
    r = defaults_guard(r, part, transform.replace_null_with_default)
    for spec, column, spark_type, timestamp in _insertions(transform, r, schemaless=False):
        if timestamp:
            column, spark_type = F.when(_timestamp_present(), F.timestamp_millis(column)), T.TimestampType()
        fields = fields + [(spec.name, within(part, column), spark_type)]
    return with_operated(r, on_key, assembled(part, fields, schema))


# --- MaskField ---------------------------------------------------------------------------------


def mask_sample(schema: Schema | None, spark_type: Any) -> Any:
    """A Python value of the field's kind for ``MaskField.masked`` to mask, or ``None`` (not maskable here)."""
    from pyspark.sql import types as T

    if schema is not None:
        if schema.name == DATE_LOGICAL_NAME:
            return datetime.date(2000, 1, 2)
        if schema.name == TIMESTAMP_LOGICAL_NAME:
            return datetime.datetime(2000, 1, 2, tzinfo=datetime.timezone.utc)
        if schema.name == TIME_LOGICAL_NAME:
            return datetime.time(1, 2)
        if schema.name is not None and schema.name.startswith("org.apache.kafka.connect.data."):
            return None  # Decimal and other logical types: not carried exactly here
        return _MASK_SAMPLES.get(schema.type)
    for kind, sample in ((T.IntegralType, 1), (T.DoubleType, 1.5), (T.BooleanType, True), (T.StringType, "s"),
                         (T.ArrayType, [1])):
        if isinstance(spark_type, kind):
            return sample
    return None  # nested maps (structs here) mask to {}, which a struct column cannot hold


_MASK_SAMPLES: dict[Type, Any] = {
    Type.INT8: 1, Type.INT16: 1, Type.INT32: 1, Type.INT64: 1, Type.FLOAT32: 1.5, Type.FLOAT64: 1.5,
    Type.BOOLEAN: True, Type.STRING: "s", Type.BYTES: b"s", Type.ARRAY: [1], Type.MAP: {"k": 1},
}


def mask_literal(masked: Any, spark_type: Any) -> "Column | None":
    """A column literal of ``spark_type`` holding ``masked`` (what ``MaskField`` put in its place), or ``None``.

    Called per masked field when a batch's plan is built. ``None`` when the frame cannot carry the
    value exactly (a float32 field given a value that is not a float32, bytes, a non-empty list).
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(masked, list):
        return F.array().cast(spark_type) if not masked and isinstance(spark_type, T.ArrayType) else None
    if isinstance(masked, dict):
        return F.create_map().cast(spark_type) if not masked and isinstance(spark_type, T.MapType) else None
    if isinstance(masked, datetime.datetime):
        return F.timestamp_millis(F.lit(Timestamp.from_logical(Timestamp.SCHEMA, masked)))
    if isinstance(masked, datetime.date):
        return F.lit(masked) if isinstance(spark_type, T.DateType) else None
    if isinstance(masked, datetime.time):
        return F.lit(Time.from_logical(Time.SCHEMA, masked)) if isinstance(spark_type, T.IntegerType) else None
    if isinstance(masked, float) and isinstance(spark_type, T.FloatType) and to_float32(masked) != masked:
        return None
    if isinstance(masked, int) and not isinstance(masked, bool) and isinstance(spark_type, T.IntegralType):
        bits = {T.ByteType: 8, T.ShortType: 16, T.IntegerType: 32}.get(type(spark_type), 64)
        if not -(2 ** (bits - 1)) <= masked < 2 ** (bits - 1):
            return None  # a schemaless long replacing an int column's value
    if isinstance(masked, (bool, int, float, str)):
        return F.lit(masked).cast(spark_type)
    return None


def _masked_field(transform: Any, column: "Column", schema: Schema | None,
                  spark_type: Any) -> tuple["Column", "Column | None"]:
    """(masked column, condition for exact rows or None) for one field; nulls stay null."""
    from pyspark.sql import functions as F

    sample = mask_sample(schema, spark_type)
    literal = None
    if sample is not None:
        try:
            literal = mask_literal(transform.masked(sample, schema), spark_type)
        except (ConnectException, ValueError, OverflowError):
            literal = None
    if literal is None:  # the per-record transform raises, or the frame cannot hold its result
        return column, column.isNull()
    return F.when(column.isNull(), F.lit(None)).otherwise(literal), None


def _mask_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """MaskField: listed fields replaced by their type's empty value or the converted ``replacement``.

    A null key/value raises per record (falls back). Schemaless maps gain a null entry for a listed
    field they lack, as the per-record transform's ``updated[name] = masked(get(name))`` does.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        fields = struct_fields(part)
        r = r.require(~is_null(part))
        if fields is None:
            return r.require(F.lit(False))
        r = defaults_guard(r, part, transform.replace_null_with_default)
        schemas = {f.name: f.schema for f in part.schema.fields} if part.schema is not None else {}
        masked: Fields = []
        for name, column, spark_type in fields:
            if name in transform.masked_fields:
                column, exact = _masked_field(transform, column, schemas.get(name), spark_type)
                if exact is not None:
                    r = r.require(exact)
            masked.append((name, column, spark_type))
        spark_type = part.spark_type
        if part.schema is None:
            for name in sorted(transform.masked_fields - {n for n, _, _ in fields}):
                masked.append((name, F.lit(None).cast("string"), T.StringType()))
                spark_type = None
        return with_operated(r, on_key, assembled(part, masked, part.schema, spark_type))
    return apply



# --- Cast --------------------------------------------------------------------------------------

_INT_TYPES = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT64_MAX = 1.7976931348623157e308
#: Java's ``Integer.parseInt`` family accepts exactly this (ASCII digits; others fall back).
_JAVA_INTEGER_TEXT = r"^[+-]?[0-9]+\z"
#: Plain decimal text, which ``Double.parseDouble`` and Spark's cast both read correctly rounded.
_DECIMAL_TEXT = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\z"


def _spark_type_of(target: Type) -> Any:
    return to_spark_type(SchemaBuilder(target).build())



def schemaless_type(spark_type: Any) -> Type | None:
    """The Connect type a schemaless value of this Spark type has (``ConnectSchema.schema_type``)."""
    from pyspark.sql import types as T

    # a schemaless Python int is INT64 whatever column holds it (InsertField's partition is an int column)
    for kind, connect in ((T.IntegralType, Type.INT64), (T.DoubleType, Type.FLOAT64), (T.StringType, Type.STRING),
                          (T.BooleanType, Type.BOOLEAN)):
        if isinstance(spark_type, kind):
            return connect
    return None


def _finite(c: "Column", limit: float) -> "Column":
    from pyspark.sql import functions as F

    return c.isNotNull() & ~F.isnan(c) & (F.abs(c) <= F.lit(limit))


def cast_column(c: "Column", source: Type | None, target: Type) -> tuple["Column", "Column"] | None:
    """``c`` (non-null values of Connect type ``source``) cast as Kafka's Cast does, with the exactness condition.

    Called by the Cast compiler per cast field (or the whole value) when a batch's plan is built.
    Returns ``(column, condition)``: rows where the condition is false must fall back (a narrowing
    overflow, unparseable text, a value whose Java result the column cannot reproduce). ``None``:
    no row with a non-null value is reproduced (float to string formatting, bytes to numbers, ...).
    Logical types are the caller's business (never passed here).
    """
    from pyspark.sql import functions as F

    spark_target = _spark_type_of(target)
    true = F.lit(True)
    if source is None:
        return None
    if source is target:
        return c, true
    if source in _INT_TYPES:
        return _cast_from_int(c, target, spark_target)
    if source in (Type.FLOAT32, Type.FLOAT64):
        return _cast_from_float(c, target, spark_target)
    if source is Type.BOOLEAN:
        if target is Type.STRING:
            return F.when(c, F.lit("true")).otherwise(F.lit("false")), true
        return F.when(c, F.lit(1)).otherwise(F.lit(0)).cast(spark_target), true
    if source is Type.STRING:
        return _cast_from_string(c, target, spark_target)
    if source is Type.BYTES and target is Type.STRING:
        return F.base64(c), true
    return None


def _cast_from_int(c: "Column", target: Type, spark_target: Any) -> tuple["Column", "Column"] | None:
    from pyspark.sql import functions as F

    if target in _INT_TYPES:
        bits = _INT_TYPES[target]
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return c.try_cast(spark_target), c.between(low, high)  # Java wraps; overflowing rows fall back
    if target is Type.FLOAT64:
        return c.cast(spark_target), F.lit(True)
    if target is Type.FLOAT32:  # Kafka rounds via a double: exact for |x| <= 2^24 either way
        return c.cast(spark_target), F.abs(c) <= F.lit(2 ** 24)
    if target is Type.BOOLEAN:
        return c != F.lit(0), F.lit(True)
    if target is Type.STRING:
        return c.cast(spark_target), F.lit(True)
    return None


def _cast_from_float(c: "Column", target: Type, spark_target: Any) -> tuple["Column", "Column"] | None:
    from pyspark.sql import functions as F

    if target in _INT_TYPES:  # Java truncates towards zero; NaN and out-of-range rows fall back
        bits = _INT_TYPES[target]
        low, high = float(-(2 ** (bits - 1))), float(2 ** (bits - 1))
        return c.try_cast(spark_target), ~F.isnan(c) & (c > F.lit(low - 1)) & (c < F.lit(high))
    if target is Type.FLOAT64:
        return c.cast(spark_target), F.lit(True)
    if target is Type.FLOAT32:
        return c.cast(spark_target), _finite(c, _FLOAT32_MAX)
    if target is Type.BOOLEAN:  # (long) x != 0
        return F.abs(c) >= F.lit(1.0), ~F.isnan(c)
    return None  # to string: Java's Double.toString is not reproduced


def _cast_from_string(c: "Column", target: Type, spark_target: Any) -> tuple["Column", "Column"] | None:
    from pyspark.sql import functions as F

    if target in _INT_TYPES:
        cast = c.try_cast(spark_target)
        return cast, c.rlike(_JAVA_INTEGER_TEXT) & cast.isNotNull()
    if target in (Type.FLOAT32, Type.FLOAT64):
        double = c.try_cast("double")
        cast = double if target is Type.FLOAT64 else double.try_cast("float")
        limit = _FLOAT64_MAX if target is Type.FLOAT64 else _FLOAT32_MAX
        return cast, c.rlike(_DECIMAL_TEXT) & _finite(double, limit)
    if target is Type.BOOLEAN:
        return F.lower(c) == F.lit("true"), F.lit(True)
    return None


def _logical(schema: Schema | None) -> bool:
    return schema is not None and schema.name is not None and schema.name.startswith("org.apache.kafka.connect.data.")


def _cast_one(c: "Column", schema: Schema | None, spark_type: Any,
              target: Type) -> tuple["Column", "Column"]:
    """(cast column, exactness condition) for one value; nulls stay null and are always exact."""
    from pyspark.sql import functions as F

    source = None if _logical(schema) else (schema.type if schema is not None else schemaless_type(spark_type))
    cast = cast_column(c, source, target)
    if cast is None:
        return null_of(_spark_type_of(target)), c.isNull()
    column, exact = cast
    return F.when(c.isNull(), F.lit(None)).otherwise(column), c.isNull() | exact


def _cast(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """Cast: the whole key/value or listed fields to primitive types; a null key/value passes through.

    The Connect schema is the per-record transform's own (``_build_schema``); rows it cannot
    reproduce fall back (see :func:`cast_column`).
    """
    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        schema = None
        if part.schema is not None:
            try:
                schema = transform.output_schema(part.schema)
            except ConnectException:  # e.g. a default value that does not cast: every non-null record fails
                return null_only(r, on_key)
        whole = transform.whole_value_cast_type
        if whole is not None:
            column, exact = _cast_one(part.column, part.schema, part.spark_type, whole)
            return with_operated(r.require(exact), on_key, scalar(part, column, schema, _spark_type_of(whole)))
        fields = struct_fields(part)
        if fields is None:
            return null_only(r, on_key)
        r = defaults_guard(r, part, transform.replace_null_with_default)
        field_schemas = {f.name: f.schema for f in part.schema.fields} if part.schema is not None else {}
        cast_fields: Fields = []
        for name, column, spark_type in fields:
            target = transform.casts.get(name)
            if target is not None:
                column, exact = _cast_one(column, field_schemas.get(name), spark_type, target)
                r = r.require(is_null(part) | exact)
                spark_type = _spark_type_of(target)
            cast_fields.append((name, column, spark_type))
        if part.schema is None:  # a listed field a map lacks is put as null
            for name, target in transform.casts.items():
                if name not in {n for n, _, _ in fields}:
                    spark_type = _spark_type_of(target)
                    cast_fields.append((name, null_of(spark_type), spark_type))
        return with_operated(r, on_key, assembled(part, cast_fields, schema))
    return apply


# --- ValueToKey, ExtractField, HoistField, SetSchemaMetadata -------------------------------------


def _value_to_key(transform: Any) -> Callable[[RecordColumns], RecordColumns]:
    """ValueToKey: the key becomes a struct (schema'd) or map (schemaless) of listed value fields.

    A null or non-struct value raises per record (falls back); a schemaless map lacking a field
    gives a null entry; a schema lacking one raises for every record.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = list(transform.fields)
    if len(set(names)) != len(names):
        raise NotVectorizable("ValueToKey lists a field twice")

    def apply(r: RecordColumns) -> RecordColumns:
        value = r.value
        fields = struct_fields(value)
        r = r.require(~is_null(value))
        if fields is None:
            return r.require(F.lit(False))
        by_name = {n: (c, t) for n, c, t in fields}
        key_schema = None
        if value.schema is not None:
            try:
                key_schema = transform.output_schema(value.schema)
            except ConnectException:
                return r.require(F.lit(False))
            r = defaults_guard(r, value, transform.replace_null_with_default)
        key_fields = [(n, *by_name.get(n, (null_of(T.StringType()), T.StringType()))) for n in names]
        key = assembled(value, key_fields, key_schema, keep_null=False)
        return replace(r, key=replace(key, null_schema=key_schema))
    return apply


def _extract_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """ExtractField: the key/value becomes one (possibly nested, V2) field of itself.

    Schemaless: a missing entry or a null gives null; a non-map where a map is needed raises per
    record. Schema'd: the result carries the field's schema, also when null; a field missing from
    the schema raises for every record.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    steps = list(transform.field_path.steps)

    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        if part.schema is not None:
            if transform.field_path.field_from(part.schema) is None:
                return r.require(F.lit(False))
            if part.null_schema != part.schema:  # a null there is extracted schemaless: None, no schema
                r = r.require(~is_null(part))
        current, schema = part, part.schema
        for step in steps:
            fields = struct_fields(current)
            if fields is None:
                r = r.require(is_null(current))  # a non-map on the way raises
                current = scalar(current, null_of(T.StringType()), schema, T.StringType())
                break
            found = next(((c, t) for n, c, t in fields if n == step), None)
            if found is None:  # a map without the entry (a schema always has it, checked above)
                current = scalar(current, null_of(T.StringType()), schema, T.StringType())
                break
            if schema is not None:
                step_field = schema.field(step)
                if step_field.schema.default_value is not None and transform.replace_null_with_default:
                    r = r.require(is_null(current) | found[0].isNotNull())
                schema = step_field.schema
            current = scalar(current, found[0], schema, found[1])
        return with_operated(r, on_key, replace(current, schema=schema, null_schema=schema))
    return apply


def _hoist_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """HoistField: the key/value wrapped as the one field of a struct (schema'd) or map (schemaless).

    A null is wrapped too when it carries the same schema as non-null values and that schema is
    optional; otherwise (it would be wrapped differently, or the put raises) it falls back.
    """
    from pyspark.sql import types as T

    name = transform.field_name

    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        schema = None if part.schema is None else transform.output_schema(part.schema)
        if part.null_schema != part.schema or (part.schema is not None and not part.schema.is_optional):
            r = r.require(~is_null(part))
        spark_type = T.StructType([T.StructField(name, part.spark_type, True)])
        hoisted = assembled(part, [(name, part.column, part.spark_type)], schema, spark_type, keep_null=False)
        return with_operated(r, on_key, replace(hoisted, null_schema=schema))
    return apply


def _metadata_schema(transform: Any, schema: Schema) -> Schema:
    """The schema SetSchemaMetadata gives a record of ``schema`` (its own ``apply`` on a null value)."""
    probe = SinkRecord(topic="", kafka_partition=0, key_schema=schema, key=None, value_schema=schema, value=None,
                       kafka_offset=0)
    return transform.operating_schema(transform.apply(probe))


def _set_schema_metadata(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """SetSchemaMetadata: name and/or version set on the schema; values are unchanged.

    A null without a schema passes through; any other schemaless value raises per record.
    """
    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        null_schema = None if part.null_schema is None else _metadata_schema(transform, part.null_schema)
        if part.schema is None:
            r = null_only(r, on_key)
            return with_operated(r, on_key, replace(part, null_schema=null_schema))
        r = defaults_guard(r, part, transform.replace_null_with_default)
        return with_operated(r, on_key, replace(part, schema=_metadata_schema(transform, part.schema),
                                                 null_schema=null_schema))
    return apply


def _flatten(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """Flatten: nested structs (schema'd) or maps (schemaless) become top-level fields named ``a.b``.

    A null key/value passes through. Schemaless: a null nested map stays one null entry (no
    flattened names), so rows with one fall back. Schema'd: the schema is the per-record
    transform's own (``_build_schema``); a null nested struct leaves its fields null, as per record.
    """
    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        fields = struct_fields(part)
        if fields is None:
            return null_only(r, on_key)
        schema = None
        if part.schema is not None:
            try:
                schema = transform.output_schema(part.schema)
            except ConnectException:  # flattened names collide
                return null_only(r, on_key)
        r, flat = _flattened(r, part, fields, part.schema, "", transform)
        return with_operated(r, on_key, assembled(part, flat, schema))
    return apply


def _flattened(r: RecordColumns, parent: "Part", fields: Fields, schema: Schema | None, prefix: str,
               transform: Any) -> tuple[RecordColumns, Fields]:
    """The flattened (name, column, type) of ``fields`` (children of ``parent``), and the rows' conditions."""
    from pyspark.sql import types as T

    out: Fields = []
    for name, column, spark_type in fields:
        flat_name = transform.field_name(prefix, name)
        field_schema = schema.field(name).schema if schema is not None else None
        if field_schema is not None and field_schema.default_value is not None:
            r = r.require(is_null(parent) | column.isNotNull())  # Struct.get(_struct) would give the default
        if isinstance(spark_type, T.StructType):
            child = scalar(parent, column, field_schema, spark_type)
            if field_schema is None:  # a null map is kept as one null entry: not reproduced
                r = r.require(is_null(parent) | column.isNotNull())
            r, nested = _flattened(r, child, struct_fields(child) or [], field_schema, flat_name, transform)
            for n, c, t in nested:
                out = upsert(out, n, c, t)
            continue
        out = upsert(out, flat_name, column, spark_type)
    return r, out


# --- TimestampRouter, InsertHeader -------------------------------------------------------------

#: SimpleDateFormat letters formatted here (numbers only; names and week fields are not).
_DATE_LETTERS = frozenset("yMdHmsS")
#: Milliseconds of 10000-01-01T00:00Z: SimpleDateFormat's year padding is reproduced below it.
_YEAR_10000 = 253402300800000


def date_tokens(tokens: list[Any]) -> list[Any]:
    """Check compiled SimpleDateFormat tokens (literal strings and ``(letter, count)``) for :func:`_formatted`.

    Called when a TimestampRouter compiles.

    Raises:
        NotVectorizable: for a letter other than y, M (one or two), d, H, m, s, S.
    """
    for token in tokens:
        if isinstance(token, str):
            continue
        letter, count = token
        if letter not in _DATE_LETTERS or (letter == "M" and count > 2):
            raise NotVectorizable(f"timestamp.format letter {letter * count!r} is not vectorized")
    return tokens


def _zero_padded(c: "Column", count: int) -> "Column":
    """Java's zero padding of a non-negative number to at least ``count`` digits."""
    from pyspark.sql import functions as F

    text = c.cast("string")
    return F.when(F.length(text) >= count, text).otherwise(F.lpad(text, count, "0"))


def _formatted(millis: "Column", tokens: list[Any]) -> "Column":
    """``SimpleDateFormat.format`` in UTC of non-negative epoch milliseconds below year 10000."""
    from pyspark.sql import functions as F

    day_ms = F.lit(86_400_000)
    of_day = F.pmod(millis, day_ms)
    date = F.date_from_unix_date(((millis - of_day) / day_ms).try_cast("int"))
    parts = {"y": F.year(date), "M": F.month(date), "d": F.dayofmonth(date),
             "H": F.floor(of_day / 3_600_000), "m": F.floor(F.pmod(of_day, F.lit(3_600_000)) / 60_000),
             "s": F.floor(F.pmod(of_day, F.lit(60_000)) / 1000), "S": F.pmod(of_day, F.lit(1000))}
    pieces = []
    for token in tokens:
        if isinstance(token, str):
            pieces.append(F.lit(token))
            continue
        letter, count = token
        number = F.pmod(parts["y"], F.lit(100)) if (letter, count) == ("y", 2) else parts[letter]
        pieces.append(_zero_padded(number.try_cast("long"), count))
    return F.concat(*pieces) if pieces else F.lit("")


def _timestamp_router(transform: Any) -> Callable[[RecordColumns], RecordColumns]:
    """TimestampRouter: the topic from ``topic.format`` with ``${topic}`` and ``${timestamp}`` filled in.

    A record without a timestamp raises per record (falls back), as do years past 9999.
    """
    from pyspark.sql import functions as F

    tokens = date_tokens(transform.formatter.tokens)
    around_topic = transform.topic_format.split("${topic}")

    def apply(r: RecordColumns) -> RecordColumns:
        ts = F.col("timestamp_ms")
        r = r.require(ts.isNotNull() & (ts >= 0) & (ts < F.lit(_YEAR_10000)))
        pieces: list["Column"] = [F.lit(around_topic[0])]
        for text in around_topic[1:]:
            pieces += [r.topic, F.lit(text)]
        topic = F.replace(F.concat(*pieces), F.lit("${timestamp}"), _formatted(ts, tokens))
        return replace(r, topic=topic)
    return apply


def _insert_header(transform: Any, header_converter: Any) -> Callable[[RecordColumns], RecordColumns]:
    """InsertHeader: a header appended to every record, carried as the bytes the header converter reads back.

    Only with SimpleHeaderConverter (the frames' headers are raw bytes, converted when records are
    built), and only when the literal survives the round trip with its schema and Python value.
    """
    from pyspark.sql import functions as F

    from connect_spark.converters.header import SimpleHeaderConverter

    converter = header_converter if header_converter is not None else SimpleHeaderConverter()
    if type(converter) is not SimpleHeaderConverter:
        raise NotVectorizable(f"InsertHeader with header converter {type(converter).__name__}")
    literal = transform.literal
    raw = converter.from_connect_header("", transform.header, literal.schema, literal.value)
    back = converter.to_connect_header("", transform.header, raw)
    if back.schema != literal.schema or repr(back.value) != repr(literal.value):
        raise NotVectorizable(f"InsertHeader literal {literal.value!r} does not survive the header converter")
    header_type = "array<struct<key:string,value:binary>>"

    def apply(r: RecordColumns) -> RecordColumns:
        value = F.lit(raw) if raw is not None else F.lit(None)
        added = F.array(F.struct(F.lit(transform.header).alias("key"), value.cast("binary").alias("value")))
        headers = F.concat(F.coalesce(r.headers, F.array().cast(header_type)), added.cast(header_type))
        return replace(r, headers=headers)
    return apply


# --- TimestampConverter ----------------------------------------------------------------------

_DAY_MS = 86_400_000
_LONG_MAX = 2 ** 63 - 1
#: Epoch milliseconds of years 1 to 9999, the range Python's datetime (and so the per-record path) holds.
_MILLIS_RANGE = (-62135596800000, 253402300799999)
_UNITS_PER_MILLI = {"microseconds": 1000, "nanoseconds": 1_000_000}


def _target_spark_type(target: str) -> Any:
    from pyspark.sql import types as T

    return {"string": T.StringType(), "unix": T.LongType(), "Date": T.DateType(), "Time": T.IntegerType(),
            "Timestamp": T.TimestampType()}[target]


def _kind(schema: Schema | None, spark_type: Any) -> str | None:
    """The timestamp kind of a value (``timestamp_kind`` with a schema, ``_infer_kind`` without), ``None`` if it raises."""
    from pyspark.sql import types as T

    from connect_spark.transforms.timestamp_converter import timestamp_kind

    if schema is not None:
        try:
            return timestamp_kind(schema)
        except ConnectException:
            return None
    if isinstance(spark_type, T.IntegralType):
        return "unix"
    return "string" if isinstance(spark_type, T.StringType) else None


def _to_millis(c: "Column", kind: str, precision: str) -> tuple["Column", "Column"] | None:
    """(epoch millis, exactness condition) of a non-null timestamp of ``kind``; ``None`` for string (parsing)."""
    from pyspark.sql import functions as F

    true = F.lit(True)
    if kind == "unix":
        if precision == "seconds":  # Kafka saturates the product; rows that would are sent to the fallback
            return F.try_multiply(c.try_cast("long"), F.lit(1000)), F.abs(c) <= F.lit(_LONG_MAX // 1000)
        if precision in _UNITS_PER_MILLI:  # truncating division, as Java's
            return F.call_function("div", c.try_cast("long"), F.lit(_UNITS_PER_MILLI[precision])), true
        return c.try_cast("long"), true
    if kind == "Timestamp":
        return F.unix_millis(c), true
    if kind == "Date":
        return F.try_multiply(F.unix_date(c).cast("long"), F.lit(_DAY_MS)), true
    if kind == "Time":
        return c.try_cast("long"), true
    return None


def _from_millis(m: "Column", target: str, precision: str, tokens: list[Any] | None) -> tuple["Column", "Column"]:
    """(value of ``target``, exactness condition) for epoch millis ``m``."""
    from pyspark.sql import functions as F

    in_range = m.between(*_MILLIS_RANGE)
    if target == "unix":
        if precision == "seconds":
            return F.call_function("div", m, F.lit(1000)), F.lit(True)
        if precision in _UNITS_PER_MILLI:
            units = _UNITS_PER_MILLI[precision]
            return F.try_multiply(m, F.lit(units)), F.abs(m) <= F.lit(_LONG_MAX // units)
        return m, F.lit(True)
    if target == "Timestamp":
        return F.timestamp_millis(m), in_range
    if target == "Date":
        return F.date_from_unix_date(((m - F.pmod(m, F.lit(_DAY_MS))) / _DAY_MS).try_cast("int")), in_range
    if target == "Time":
        return F.pmod(m, F.lit(_DAY_MS)).try_cast("int"), F.lit(True)
    assert tokens is not None
    return _formatted(m, tokens), (m >= 0) & (m < F.lit(_YEAR_10000))


def _converted_timestamp(transform: Any, c: "Column", schema: Schema | None, spark_type: Any,
                         tokens: list[Any] | None) -> tuple["Column", "Column"]:
    """(converted column, exactness condition) of one timestamp value; nulls stay null."""
    from pyspark.sql import functions as F

    kind = _kind(schema, spark_type)
    millis = None if kind is None else _to_millis(c, kind, transform.unix_precision)
    if schema is None and transform.target_type == "Time":
        millis = None  # a schemaless datetime.time: a frame without a schema carries no Time values
    if millis is None:  # unknown kind (raises) or a string to parse: non-null rows fall back
        return null_of(_target_spark_type(transform.target_type)), c.isNull()
    value, from_ok = _from_millis(millis[0], transform.target_type, transform.unix_precision, tokens)
    return F.when(c.isNull(), F.lit(None)).otherwise(value), c.isNull() | (millis[1] & from_ok)


def _timestamp_converter(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    """TimestampConverter between unix, Date, Time and Timestamp, and to string with a numeric format.

    Parsing strings (a string source) is left to the fallback, as are values outside the years 1 to
    9999 (9999 and from 1970 for string targets) and unix values whose conversion saturates.
    """
    from pyspark.sql import functions as F

    target = transform.target_type
    tokens = date_tokens(transform.format_tokens) if target == "string" else None

    def apply(r: RecordColumns) -> RecordColumns:
        part = operated(r, on_key)
        if not transform.field:
            return _convert_whole(r, part)
        fields = struct_fields(part)
        if fields is None:
            return null_only(r, on_key)
        schema = None
        if part.schema is not None:
            if part.null_schema != part.schema:
                r = r.require(~is_null(part))
            try:
                schema = transform.output_schema(part.schema)
            except ConnectException:
                return r.require(F.lit(False))
            r = defaults_guard(r, part, transform.replace_null_with_default)
        field_schemas = {f.name: f.schema for f in part.schema.fields} if part.schema is not None else {}
        converted: Fields = []
        found = False
        for name, column, spark_type in fields:
            if name == transform.field:
                found = True
                field_schema = field_schemas.get(name)
                if field_schema is not None and _kind(field_schema, None) is None:
                    r = r.require(is_null(part))  # timestamp_kind raises for every struct, even with a null field
                column, exact = _converted_timestamp(transform, column, field_schema, spark_type, tokens)
                r = r.require(is_null(part) | exact)
                spark_type = _target_spark_type(target)
            converted.append((name, column, spark_type))
        if not found and part.schema is None:  # the map gains the entry, as null
            converted.append((transform.field, null_of(_target_spark_type(target)), _target_spark_type(target)))
        return with_operated(r, on_key, assembled(part, converted, schema))

    def _convert_whole(r: RecordColumns, part: "Part") -> RecordColumns:
        column, exact = _converted_timestamp(transform, part.column, part.schema, part.spark_type, tokens)
        schema = None if part.schema is None else transform.type_schema(part.schema.is_optional)
        null_schema = None if part.null_schema is None else transform.type_schema(part.null_schema.is_optional)
        if part.schema is not None and _kind(part.schema, None) is None:  # raises even for a null value
            r = r.require(F.lit(part.null_schema is None) & is_null(part))
        converted = scalar(part, column, schema, _target_spark_type(target), null_schema=null_schema)
        return with_operated(r.require(exact), on_key, converted)
    return apply


# --- steps -------------------------------------------------------------------------------------


def _same_shape(a: RecordColumns, b: RecordColumns) -> bool:
    """Whether key and value carry the same schemas and Spark types in both (so rows can mix them)."""
    return all(x.schema == y.schema and x.null_schema == y.null_schema and x.spark_type == y.spark_type
               for x, y in ((a.key, b.key), (a.value, b.value)))


@dataclass(frozen=True)
class TransformStep:
    """One compiled transform with its optional predicate.

    Attributes:
        passes_null: ``"key"`` / ``"value"`` when the transform leaves a record whose key / value is
            null untouched (so such rows may skip it even when it reshapes), else ``None``.
    """

    alias: str
    apply: Callable[[RecordColumns], RecordColumns] | None  # None: a Filter
    condition: Callable[[RecordColumns], "Column"] | None
    negate: bool
    passes_null: str | None = None

    def run(self, r: RecordColumns) -> RecordColumns:
        """The record columns after this step; called by ``ColumnarPlan.apply`` once per batch, in chain order.

        Under a predicate, a transform keeping the key/value shape is applied row by row
        (``when(applies, ...)``); one that reshapes them cannot mix transformed and untouched rows in
        one column, so untouched rows fall back unless :attr:`passes_null` says they are unchanged.
        """
        from pyspark.sql import functions as F

        applies = None
        if self.condition is not None:
            tested = F.coalesce(self.condition(r), F.lit(False))
            applies = ~tested if self.negate else tested
        if self.apply is None:  # Filter
            return replace(r, keep=r.keep & (~applies if applies is not None else F.lit(False)))
        if applies is None:
            return self.apply(r)
        done = self.apply(replace(r, ok=F.lit(True)))  # done.ok: only this transform's own conditions
        if _same_shape(done, r):
            return replace(done, topic=F.when(applies, done.topic).otherwise(r.topic),
                           headers=F.when(applies, done.headers).otherwise(r.headers),
                           key=_picked(applies, done.key, r.key), value=_picked(applies, done.value, r.value),
                           ok=r.ok & (~applies | done.ok))
        untouched = F.lit(False) if self.passes_null is None else is_null(operated(r, self.passes_null == "key"))
        return replace(done, ok=r.ok & done.ok & (applies | untouched))


def _picked(applies: "Column", new: "Part", old: "Part") -> "Part":
    """``new`` where the predicate applies, else ``old`` (both of one shape), field by field when both are built."""
    from pyspark.sql import functions as F

    if new is old:
        return new
    if new.fields is not None and old.fields is not None and [n for n, _, _ in new.fields] == [
            n for n, _, _ in old.fields]:
        fields = [(n, F.when(applies, c).otherwise(o), t) for (n, c, t), (_, o, _) in zip(new.fields, old.fields)]
        merged = assembled(old, fields, new.schema, new.spark_type)
        null = F.when(applies, is_null(new)).otherwise(is_null(old))
        return replace(merged, null=null, column=F.when(null, F.lit(None)).otherwise(
            F.struct(*[c.alias(n) for n, c, _ in fields])))
    return scalar(new, F.when(applies, new.column).otherwise(old.column), new.schema, new.spark_type)


def _on_key(transform: Any) -> bool:
    return isinstance(transform, OperatesOnKey)


#: Transforms with no vectorized form, and why.
_NOT_VECTORIZED = {
    "HeaderFrom": "header values must be carried as bytes that the header converter reads back with the "
                  "field's schema, which SimpleHeaderConverter does not preserve (an INT64 5 reads back as INT8)",
    **{name: "this Debezium transform runs per record (it has no column form)"
       for name in ("ByLogicalTableRouter", "ExtractChangedRecordState", "HeaderToValue")},
}


def _compiler(transform: Any, props: dict[str, Any], header_converter: Any,
              ) -> tuple[Callable[[RecordColumns], RecordColumns], str | None] | None:
    """(compiled transform, passes_null) for a transform with a column form, else ``None``."""
    kind = type(transform)
    side = "key" if _on_key(transform) else "value"
    if kind is RegexRouter:
        return _regex_router(transform, props), None
    if kind is DropHeaders:
        return _drop_headers(transform), None
    if kind in (ReplaceFieldKey, ReplaceFieldValue):
        return _replace_field(transform, kind is ReplaceFieldKey), None
    if kind in (InsertFieldKey, InsertFieldValue):
        return _insert_field(transform, _on_key(transform)), side
    if kind in (MaskFieldKey, MaskFieldValue):
        return _mask_field(transform, _on_key(transform)), None
    if kind in (CastKey, CastValue):
        return _cast(transform, _on_key(transform)), side
    if kind is ValueToKey:
        return _value_to_key(transform), None
    if kind in (ExtractFieldKey, ExtractFieldValue):
        return _extract_field(transform, _on_key(transform)), None
    if kind in (HoistFieldKey, HoistFieldValue):
        return _hoist_field(transform, _on_key(transform)), None
    if kind in (FlattenKey, FlattenValue):
        return _flatten(transform, _on_key(transform)), side
    if kind in (TimestampConverterKey, TimestampConverterValue):
        return _timestamp_converter(transform, _on_key(transform)), None
    if kind in (SetSchemaMetadataKey, SetSchemaMetadataValue):
        return _set_schema_metadata(transform, _on_key(transform)), None
    if kind is TimestampRouter:
        return _timestamp_router(transform), None
    if kind is InsertHeader:
        return _insert_header(transform, header_converter), None
    if kind is ExtractNewRecordState:
        return extract_new_record_state(transform), None
    return None


def transform_step(alias: str, transform: Any, props: dict[str, Any], predicate: Any,
                   predicate_props: dict[str, Any], negate: bool, header_converter: Any = None) -> TransformStep:
    """Compile one configured transform (and its predicate); called by ``build_plan`` when the connector starts.

    Raises:
        NotVectorizable: naming the transform or predicate with no column form, and why.
    """
    condition = _predicate(predicate, predicate_props) if predicate is not None else None
    if type(transform) is Filter:
        return TransformStep(alias, None, condition, negate)
    compiled = _compiler(transform, props, header_converter)
    if compiled is None:
        kind = type(transform).__name__
        reason = next((why for name, why in _NOT_VECTORIZED.items() if kind.startswith(name)), "no vectorized form")
        raise NotVectorizable(f"transform {alias} ({kind}): {reason}")
    return TransformStep(alias, compiled[0], condition, negate, compiled[1])
