"""Debezium's ExtractNewRecordState as column expressions, for :mod:`connect_spark.columnar.transforms`.

Called by :func:`~connect_spark.columnar.transforms.transform_step` when the connector starts:
:func:`extract_new_record_state` compiles a configured transform (raising :class:`NotVectorizable` for the
keys it has no column form of), and the compiled function runs once per micro-batch in
:meth:`~connect_spark.columnar.plan.ColumnarPlan.apply`. The per-record transform
(:mod:`connect_spark.transforms.debezium.extract_new_record_state`) is the reference: every row the plan keeps
must get its exact record, schema included.

Within a batch the value carries one schema (the converter's learned one; rows with another fall back), so
whether the value is a change event is decided once per batch, and per row only which kind of record it is:

* a tombstone (null value) is kept or dropped by the delete handling mode, unchanged;
* a value whose schema is no envelope (a heartbeat, a schema change event) passes unchanged;
* a change event with neither ``before`` nor ``after`` (a truncate) is dropped;
* a delete (``after`` null) becomes what the mode says: dropped, a null value with ``after``'s schema, a
  tombstone, or the ``before`` row marked ``__deleted=true``;
* any other change event becomes its ``after`` row (marked ``__deleted=false`` in the rewrite modes),
  rebuilt with the ``add.fields`` fields of the event.

Rows whose record the columns cannot hold in the batch's one output shape fall back: deletes whose
``before`` schema differs from ``after``'s in the rewrite modes, kept tombstones whose schema differs from
a delete's, rows whose null fields would take defaults when marked. ``add.headers``, ``route.by.field`` and
``drop.fields.header.name`` have no column form: a transform using them runs per record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.java_semantics import is_blank
from connect_spark.api.errors import DataException
from connect_spark.columnar.column_converter import Part
from connect_spark.columnar.parts import Fields, defaults_guard, is_null, scalar, struct_fields, unless
from connect_spark.columnar.variant_schema import NotVectorizable
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.delete_handling import DELETED_FIELD, DeleteAction
from connect_spark.transforms.debezium.extract_new_record_state import ExtractNewRecordState

if TYPE_CHECKING:
    from pyspark.sql import Column

    from connect_spark.columnar.plan import RecordColumns
    from connect_spark.transforms.debezium.field_reference import FieldReference

__all__ = ["extract_new_record_state"]


def extract_new_record_state(transform: ExtractNewRecordState) -> Callable[[RecordColumns], RecordColumns]:
    """The column form of a configured ExtractNewRecordState.

    Raises:
        NotVectorizable: ``add.headers``, ``route.by.field`` or ``drop.fields.header.name`` is set.
    """
    per_record = [key for key, used in (("add.headers", transform.additional_headers),
                                        ("route.by.field", transform.route_by_field),
                                        ("drop.fields.header.name", not is_blank(transform.drop_fields_header)))
                  if used]
    if per_record:
        raise NotVectorizable(f"ExtractNewRecordState with {', '.join(per_record)} runs per record")
    keep_tombstones = transform.strategy.handling.keep_tombstones

    def apply(r: RecordColumns) -> RecordColumns:
        schema = r.value.schema
        if schema is not None and envelope.is_envelope_schema(schema):
            r = _hoisted_event(transform, r)
        tombstone = is_null(r.value)
        if not keep_tombstones:
            r = replace(r, keep=r.keep & ~tombstone)
        if schema is None or not envelope.is_envelope_schema(schema):
            return r
        return _unwrapped(transform, r, tombstone)
    return apply


def _hoisted_event(transform: ExtractNewRecordState, r: RecordColumns) -> RecordColumns:
    """``r`` whose value (a change event) has the fields the transform reads, and its null condition, computed
    once per row in projection columns of their own: each is read several times, and a read of the converted
    event's expression would copy it whole (Spark does not share a subexpression in conditional branches);
    fields nothing reads (``source``, unless ``add.fields`` names it) are never materialized."""
    event = r.value
    fields = struct_fields(event)
    if fields is None:
        return r
    used = {envelope.AFTER, envelope.BEFORE}
    for reference in transform.additional_fields:
        used |= {reference.struct or reference.field, reference.field}
    hoisted = []
    for name, column, spark_type in fields:
        if name in used:
            r, column = r.hoist(f"__debezium_{name}", column)
        hoisted.append((name, column, spark_type))
    r, null = r.hoist("__debezium_null", is_null(event))
    return replace(r, value=replace(event, fields=tuple(hoisted), null=null))


def _unwrapped(transform: ExtractNewRecordState, r: RecordColumns, tombstone: "Column") -> RecordColumns:
    """``r`` with each change event of the batch replaced by its row (the value schema is an envelope)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    event = r.value
    strategy = transform.strategy
    action = strategy.handling.on_delete
    fields = {name: (column, spark_type) for name, column, spark_type in struct_fields(event) or []}
    after_field, before_field = event.schema.field(envelope.AFTER), event.schema.field(envelope.BEFORE)
    if after_field is None or before_field is None or after_field.schema.type is not Type.STRUCT \
            or envelope.AFTER not in fields or envelope.BEFORE not in fields:
        return r.require(tombstone)  # the per-record transform raises for every change event
    after = scalar(event, fields[envelope.AFTER][0], after_field.schema, fields[envelope.AFTER][1])
    before = scalar(event, fields[envelope.BEFORE][0], before_field.schema, fields[envelope.BEFORE][1])
    live = ~tombstone
    deleted = live & is_null(after)
    r = replace(r, keep=r.keep & ~(deleted & is_null(before)))  # truncates and empty messages: dropped
    null_schema = event.null_schema
    if action is DeleteAction.DROP:
        r = replace(r, keep=r.keep & ~deleted)
    elif action is DeleteAction.NULL_VALUE:
        null_schema = after.schema
    elif action is DeleteAction.TOMBSTONE:
        null_schema = None
    if strategy.handling.keep_tombstones and null_schema != event.null_schema:  # kept tombstones: another schema
        r = r.require(~tombstone)

    rewrites = action is DeleteAction.REWRITE
    row_schema = after.schema
    row_fields = struct_fields(after) or []
    null = tombstone | is_null(after)
    if rewrites:
        if before.schema != after.schema or before.spark_type != after.spark_type:
            r = r.require(~deleted)
        else:
            row_fields = [(name, F.when(deleted, old).otherwise(new), spark_type)
                          for (name, new, spark_type), (_, old, _) in zip(row_fields, struct_fields(before) or [])]
            null = tombstone | (is_null(after) & is_null(before))
        r = defaults_guard(r, replace(after, column=F.lit(None), fields=tuple(row_fields), null=null),
                           strategy.replace_null_with_default)
        row_schema = strategy.marked_schema(after.schema, deleted=False)
        marker = F.when(null, F.lit(None)).otherwise(F.when(deleted, F.lit("true")).otherwise(F.lit("false")))
        row_fields = row_fields + [(DELETED_FIELD, marker, T.StringType())]
    try:
        schema = transform.row_schema(row_schema, event.schema)
    except DataException:  # an add.fields struct the envelope lacks: every change event raises
        return r.require(tombstone)
    for reference in transform.additional_fields:
        added = _added_field(reference, event.schema, fields)
        if added is not None:
            column, spark_type = added
            row_fields = row_fields + [(reference.new_field, F.when(null, F.lit(None)).otherwise(column), spark_type)]
    spark_type = T.StructType([T.StructField(name, spark_type, True) for name, _, spark_type in row_fields])
    column = unless(null, F.struct(*[c.alias(name) for name, c, _ in row_fields]))
    row = Part(column, schema, null_schema, spark_type, fields=tuple(row_fields), null=null)
    return replace(r, value=row)


def _added_field(reference: "FieldReference", envelope_schema: Schema,
                 fields: dict[str, tuple["Column", Any]]) -> tuple["Column", Any] | None:
    """(column, Spark type) of an ``add.fields`` entry, or ``None`` when the event has no such field (left out),
    read as :meth:`~connect_spark.transforms.debezium.field_reference.FieldReference.value_in` reads it."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if reference.schema_in(envelope_schema) is None:
        return None
    if reference.struct is None:
        return fields[reference.field]
    holder_column, holder_type = fields[reference.struct]
    if not isinstance(holder_type, T.StructType):
        raise NotVectorizable(f"add.fields entry {reference.struct}.{reference.field}: {reference.struct} is no struct")
    holder_schema = envelope_schema.field(reference.struct).schema
    if holder_schema.field(reference.field) is not None:
        found = next(f for f in holder_type.fields if f.name == reference.field)
        column, spark_type = holder_column[reference.field], found.dataType
    else:  # a field the struct lacks is read from the envelope itself, still null when the struct is
        column, spark_type = fields[reference.field]
    return F.when(holder_column.isNull(), F.lit(None)).otherwise(column), spark_type
