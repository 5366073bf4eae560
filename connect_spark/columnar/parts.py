"""The key or value under construction (:class:`~connect_spark.columnar.column_converter.Part`): reading its
fields, rebuilding it as a struct, and the conditions a transform puts on its rows.

Called by the compiled transforms (:mod:`connect_spark.columnar.transforms`,
:mod:`connect_spark.columnar.debezium_transforms`) while :meth:`~connect_spark.columnar.plan.ColumnarPlan.apply`
builds a batch's projection. Every helper returns new parts (:func:`dataclasses.replace`); none reads data.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from connect_spark.api.data import Schema, Type

if TYPE_CHECKING:
    from pyspark.sql import Column

    from connect_spark.columnar.column_converter import Part
    from connect_spark.columnar.plan import RecordColumns

__all__ = ["Fields", "assembled", "defaults_guard", "evaluated_once", "is_null", "null_of", "null_only", "operated",
           "scalar", "struct_fields", "unless", "upsert", "with_operated", "within"]

#: Field triples of a struct part under construction: (name, column, Spark type).
Fields = list[tuple[str, "Column", Any]]


def operated(r: RecordColumns, on_key: bool) -> "Part":
    """The key (``on_key``) or the value of ``r``."""
    return r.key if on_key else r.value


def with_operated(r: RecordColumns, on_key: bool, part: "Part") -> RecordColumns:
    """``r`` with its key (``on_key``) or value replaced by ``part``."""
    return replace(r, key=part) if on_key else replace(r, value=part)


def struct_fields(part: "Part") -> Fields | None:
    """The fields of a struct part (a Connect Struct or a schemaless map), or ``None`` for any other part."""
    from pyspark.sql import types as T

    if not isinstance(part.spark_type, T.StructType):
        return None
    if part.schema is not None and part.schema.type is not Type.STRUCT:
        return None
    if part.fields is not None:
        return list(part.fields)
    whole = evaluated_once(part.column)
    return [(f.name, whole[f.name], f.dataType) for f in part.spark_type.fields]


def evaluated_once(column: "Column") -> "Column":
    """``column`` wrapped so that reading several of its fields evaluates it once per row.

    Spark pushes a field extraction into the branches of a converter's ``CASE WHEN ... ELSE
    <parsed JSON>``, where common subexpression elimination does not reach: every field would parse
    the JSON again. ``get(array(column), i)`` (``i`` null exactly when ``column`` is) is the same value,
    is not rewritten, and is one common subexpression for all the fields read from it.
    """
    from pyspark.sql import functions as F

    return F.get(F.array(column), F.when(column.isNull(), F.lit(None)).otherwise(F.lit(0)))


def is_null(part: "Part") -> "Column":
    """The condition under which ``part`` is null (cheap for struct parts built here)."""
    return part.null if part.fields is not None and part.null is not None else part.column.isNull()


def upsert(fields: Fields, name: str, column: "Column", spark_type: Any) -> Fields:
    """``fields`` with ``name`` set as a Python dict assignment does: replaced in place, or appended."""
    for i, (existing, _, _) in enumerate(fields):
        if existing == name:
            return fields[:i] + [(name, column, spark_type)] + fields[i + 1:]
    return fields + [(name, column, spark_type)]


def assembled(part: "Part", fields: Fields, schema: Schema | None, spark_type: Any = None,
               keep_null: bool = True) -> "Part":
    """``part`` rebuilt as a struct of ``fields`` (null where ``part`` is null when ``keep_null``)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    struct = F.struct(*[c.alias(n) for n, c, _ in fields])
    null = is_null(part) if keep_null else F.lit(False)
    column = unless(null, struct) if keep_null else struct
    if spark_type is None:
        spark_type = T.StructType([T.StructField(n, t, True) for n, _, t in fields])
    return replace(part, column=column, schema=schema, spark_type=spark_type, fields=tuple(fields), null=null)


def unless(null: "Column", struct: "Column") -> "Column":
    """``struct``, or null where ``null`` holds, with ``struct`` in an always-evaluated position.

    ``when(null, None).otherwise(struct)`` would put the fields in a conditional branch, where Spark's
    common subexpression elimination does not look: each field would re-evaluate the parsed value
    it reads (a full JSON-to-struct cast per field, several times slower). ``get(array(struct), i)``
    evaluates the struct once and picks it, or nothing (a null index gives null).
    """
    from pyspark.sql import functions as F

    return F.get(F.array(struct), F.when(null, F.lit(None)).otherwise(F.lit(0)))


def scalar(part: "Part", column: "Column", schema: Schema | None, spark_type: Any, **changes: Any) -> "Part":
    """``part`` holding a new (non-struct-built) column: drops the field cache."""
    return replace(part, column=column, schema=schema, spark_type=spark_type, fields=None, null=None, **changes)


def null_only(r: RecordColumns, on_key: bool) -> RecordColumns:
    """Rows whose operated part is not null go to the fallback (the per-record transform raises for them)."""
    return r.require(is_null(operated(r, on_key)))


def defaults_guard(r: RecordColumns, part: "Part", replace_null_with_default: bool) -> RecordColumns:
    """Require non-null struct fields where the per-record transform would substitute the field's default.

    Transforms copying fields with ``field_value(struct, field, replace.null.with.default)`` read a null
    field that has a default as the default; the plan carries the null, so such rows fall back.
    """
    if part.schema is None or part.schema.type is not Type.STRUCT or not replace_null_with_default:
        return r
    for f in part.schema.fields:
        if f.schema.default_value is not None:
            column = dict((n, c) for n, c, _ in struct_fields(part) or [])[f.name]
            r = r.require(is_null(part) | column.isNotNull())
    return r


def within(part: "Part", c: "Column") -> "Column":
    """``c`` as a field of ``part``: null where ``part`` is null.

    A non-nullable field (a literal) under a null struct breaks the frame's Arrow conversion, and a
    condition on the data is one the optimizer cannot fold away.
    """
    from pyspark.sql import functions as F

    return F.when(is_null(part), F.lit(None)).otherwise(c)



def null_of(spark_type: Any) -> "Column":
    """A null literal of ``spark_type``."""
    from pyspark.sql import functions as F

    return F.lit(None).cast(spark_type)
