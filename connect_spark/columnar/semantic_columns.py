"""The vectorized plan's last step: Debezium's semantic types from their Connect encoding to typed columns.

Called by :meth:`connect_spark.columnar.plan.ColumnarPlan.apply` once per built projection, after the
converters and the transforms, on the key and the value (:func:`typed_record`). The converters
(:mod:`~connect_spark.columnar.json_columns`, :mod:`~connect_spark.columnar.avro`) and the transforms work on
encodings, as the per-record converters and transforms do on Connect values; this step then gives the column
the per-record path gives (:mod:`~connect_spark.columnar.record_column`, with the mapping of
:mod:`connect_spark.api.data.semantic_types`), in Spark expressions that do not depend on the session's time
zone.

Each row converts here only when :func:`~connect_spark.columnar.records.value_reader` turns its typed value back
into exactly its Connect value (records built from the frame must equal the per-record path's); the others go
to the per-record path, which types them or reports them under ``errors.*``:

=============================== =========================================== ===================================
Column                          Spark expression                            Rows that take the per-record path
=============================== =========================================== ===================================
date (Date)                     ``date_from_unix_date``                     outside the years 1-9999
timestamp_ntz (Timestamp,       ``timestampadd(MICROSECOND, µs, 1970-01-01  outside the years 1-9999; a
Micro-, NanoTimestamp)          00:00 NTZ)``                                NanoTimestamp with nanoseconds
timestamp (ZonedTimestamp)      ``try_cast(text as timestamp)``             text not written as
                                                                            :data:`~connect_spark.api.data.
                                                                            semantic_types.CANONICAL_ZONED_
                                                                            TIMESTAMP` (UTC, ``Z``)
decimal(38,18) (VariableScale-  (none)                                      every non-null value (its scale
Decimal)                                                                    is not in a fixed-scale column)
int, bigint, string, binary     the encoding itself                         none
=============================== =========================================== ===================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.semantic_types import (
    CANONICAL_ZONED_TIMESTAMP,
    MAX_DAY,
    MAX_MICROS,
    MIN_DAY,
    MIN_MICROS,
    has_semantic_types,
    semantic_type,
)
from connect_spark.columnar import variant_schema
from connect_spark.columnar.column_converter import Part
from connect_spark.columnar.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column

    from connect_spark.columnar.plan import RecordColumns

__all__ = ["typed_column", "typed_part", "typed_record"]

NotVectorizable = variant_schema.NotVectorizable

_EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def _and(a: "Column | None", b: "Column | None") -> "Column | None":
    if a is None:
        return b
    return a if b is None else a & b


def _local_date_time(c: "Column", unit: int) -> tuple["Column", "Column"]:
    """A ``timestamp_ntz`` of a count of the encoding's ``unit`` (see ``SemanticType.unit``) since the epoch,
    and the rows whose count converts exactly and within the column's range."""
    from pyspark.sql import functions as F

    if unit < 0:  # milliseconds: the range is checked before multiplying, which would overflow beyond it
        exact = c.between(MIN_MICROS // -unit, MAX_MICROS // -unit)
        micros = F.when(exact, c * F.lit(-unit))
    elif unit == 1:
        exact, micros = c.between(MIN_MICROS, MAX_MICROS), c
    else:  # nanoseconds: only whole microseconds come back from the column as they were
        exact = F.pmod(c, F.lit(unit)) == 0
        # a decimal quotient: exact for the multiples ``exact`` lets through (a double's 53 bits would not be)
        micros = F.when(exact, (c.cast("decimal(20,0)") / F.lit(unit)).cast("long"))
    value = F.when(exact, F.timestamp_add("MICROSECOND", micros, F.expr(_EPOCH_NTZ)))
    return value, exact


def _changes(schema: Schema) -> bool:
    """Whether a column of ``schema`` differs from its encoding (a semantic type other than int, bigint,
    string or binary somewhere inside)."""
    found = semantic_type(schema)
    if found is not None:
        return found.column not in ("int", "bigint", "string", "binary")
    if schema.type is Type.STRUCT:
        return any(_changes(f.schema) for f in schema.fields)
    if schema.type is Type.ARRAY:
        return _changes(schema.value_schema)
    if schema.type is Type.MAP:
        return _changes(schema.key_schema) or _changes(schema.value_schema)
    return False


def typed_column(c: "Column", schema: Schema) -> tuple["Column", "Column | None", bool]:
    """``(column, guard, changed)``: ``c`` (the encoding of ``schema``'s values) typed as
    :func:`~connect_spark.columnar.types.to_spark_type` types it, the condition for rows it converts exactly
    (``None``: all), and whether the column differs from ``c``.

    Raises:
        NotVectorizable: a map whose keys have a semantic type.
    """
    from pyspark.sql import functions as F

    found = semantic_type(schema)
    if found is not None:
        column = found.column
        if column == "date":
            return F.date_from_unix_date(c), c.isNull() | c.between(MIN_DAY, MAX_DAY), True
        if column == "timestamp_ntz":
            value, exact = _local_date_time(c, found.unit)
            return value, c.isNull() | exact, True
        if column == "timestamp":
            parsed = c.try_cast("timestamp")  # the text ends in Z: no session time zone takes part
            exact = c.rlike(CANONICAL_ZONED_TIMESTAMP) & parsed.isNotNull()
            return F.when(exact, parsed), c.isNull() | exact, True
        if column == "decimal":
            return F.lit(None).cast(to_spark_type(schema)), c.isNull(), True
        return c, None, False
    t = schema.type
    if t is Type.STRUCT:
        if not has_semantic_types(schema):
            return c, None, False
        parts, guard, changed = [], None, False
        for f in schema.fields:
            fc = c[f.name]
            converted, child_guard, child_changed = typed_column(fc, f.schema)
            parts.append(converted.alias(f.name))
            guard = _and(guard, child_guard)
            changed = changed or child_changed
        guard = None if guard is None else c.isNull() | guard
        if not changed:
            return c, guard, False
        return F.when(c.isNull(), F.lit(None)).otherwise(F.struct(*parts)), guard, True
    if t is Type.ARRAY or t is Type.MAP:
        if t is Type.MAP and has_semantic_types(schema.key_schema):
            raise NotVectorizable("maps whose keys have a Debezium semantic type are not vectorized")
        element = schema.value_schema
        if not has_semantic_types(element) or not _changes(element):
            return c, None, False

        def convert(x: "Column") -> "Column":
            return typed_column(x, element)[0]

        def check(x: "Column") -> "Column":
            g = typed_column(x, element)[1]
            return F.lit(True) if g is None else g

        if t is Type.ARRAY:
            return F.transform(c, convert), c.isNull() | F.forall(c, check), True
        return F.transform_values(c, lambda k, v: convert(v)), c.isNull() | F.forall(F.map_values(c), check), True
    return c, None, False


def typed_part(part: Part) -> tuple[Part, "Column | None"]:
    """``part`` (the key or value, its column the Connect encoding) with its column typed, and the guard of
    the rows it converts exactly (``None``: every row). A schemaless part is returned as it is."""
    schema = part.schema
    if schema is None or not has_semantic_types(schema):
        return part, None
    if part.fields is not None and part.null is not None and schema.type is Type.STRUCT \
            and [name for name, _, _ in part.fields] == [f.name for f in schema.fields]:
        return _typed_fields(part, schema)
    column, guard, changed = typed_column(part.column, schema)
    if not changed:
        return part, guard
    return Part(column, schema, part.null_schema, to_spark_type(schema)), guard


def _typed_fields(part: Part, schema: Schema) -> tuple[Part, "Column | None"]:
    """:func:`typed_part` of a struct a transform built (its field columns and null condition known): each field
    typed from its own column, not read back out of the struct's (which would copy the struct's expression
    into every field)."""
    from pyspark.sql import functions as F

    columns, guard, changed = [], None, False
    for (name, field_column, _), f in zip(part.fields or (), schema.fields):
        converted, field_guard, field_changed = typed_column(field_column, f.schema)
        columns.append(converted.alias(name))
        guard = _and(guard, field_guard)
        changed = changed or field_changed
    guard = None if guard is None else part.null | guard
    if not changed:
        return part, guard
    # the struct evaluated once, then picked or not (as the transforms build theirs)
    column = F.get(F.array(F.struct(*columns)), F.when(part.null, F.lit(None)).otherwise(F.lit(0)))
    return Part(column, schema, part.null_schema, to_spark_type(schema)), guard


def typed_record(record: "RecordColumns") -> "RecordColumns":
    """The record with its key and value typed (:func:`typed_part`), rows that would not convert exactly
    required to take the per-record path."""
    from dataclasses import replace

    key, key_guard = typed_part(record.key)
    value, value_guard = typed_part(record.value)
    record = replace(record, key=key, value=value)
    for guard in (key_guard, value_guard):
        if guard is not None:
            record = record.require(guard)
    return record

