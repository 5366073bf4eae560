"""Executor mode's Arrow tasks fed by a vectorized plan: the rows Spark converted are the frame.

When a connector's converters and transforms compile to a plan (:func:`connect_spark.columnar.plan.compile_plan`),
the driver (:class:`~connect_spark.runtime.processors.executor_tasks.ExecutorTasks`) projects each micro-batch through
it before ``mapInArrow`` (:meth:`~connect_spark.columnar.plan.PlanOutput.split`): every row arrives in the
task's Python worker with its raw Kafka columns, the record frame's columns Spark converted, and its kind
(good, falls back, dropped by a ``Filter``). :func:`deliver_split`, called by
:func:`connect_spark.runtime.tasks.generation.run_generation` per batch, then

1. takes the good rows' converted columns as the record frame, as they are (no Python object per row);
2. converts the rows that fall back with the task's :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`
   (``errors.*``: tolerated failures logged or sent to the dead letter queue, exactly as on the per-record
   path); survivors whose key or value conflicts with the good rows' column types (a string where they
   hold a double) are reported under ``errors.*`` at once, as the misfits of the batch they are
   (:func:`~connect_spark.columnar.records.split_conflicting`); the others go beside the good rows, cast to
   their column types, in offset order per partition. Only when those do not fit (a field the others
   lack) is the whole batch rebuilt from records, records that fit no column reported under ``errors.*``;
3. hands the frame, with the Connect schemas of its key and value in the field metadata
   (:func:`~connect_spark.columnar.records.with_connect_schemas`), to ``put_arrow``; the offsets consumed
   are those of every row of the batch (good, fallback and filtered).

Records the task reports through the errant record reporter that were converted by Spark have no raw
record kept; the reporter serializes them back with the task's converters (as Kafka Connect's reporter does).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.data import Schema
from connect_spark.columnar.fit_to_frame import CannotFit, arrow_fitted
from connect_spark.columnar.records import (
    FRAME_HEADERS_TYPE,
    fit_records_to_frame,
    frame_to_records,
    split_conflicting,
    with_connect_schemas,
)
from connect_spark.runtime.conversion.sink_records import cycle_collection_paused, raw_records
from connect_spark.runtime.processors.rejected_rows import report_misfits
from connect_spark.runtime.tasks.loop import TaskUnit, Wait, hand_over, offset_ranges
from connect_spark.streaming.raw_batch import RAW_COLUMNS

__all__ = ["FrameSchemas", "SplitDelivery", "deliver_split", "good_frame"]

log = logging.getLogger(__name__)

_UTC_MICROS = pa.timestamp("us", tz="UTC")
_ORDER = [("original_topic", "ascending"), ("original_partition", "ascending"), ("original_offset", "ascending")]


@dataclass(frozen=True)
class FrameSchemas:
    """The Connect schemas of a plan's good rows for one micro-batch (from :class:`~connect_spark.columnar.plan.PlanOutput`).

    Attributes:
        key_schema, value_schema: schemas of non-null keys / values (``None``: schemaless).
        null_key_schema, null_value_schema: the schemas a record with a null key / value carries.
    """

    key_schema: Schema | None
    value_schema: Schema | None
    null_key_schema: Schema | None
    null_value_schema: Schema | None


@dataclass
class SplitDelivery:
    """What one :func:`deliver_split` did: rows handed over, rows converted per record, and whether the
    task accepted the frame (False: a stop interrupted the retriable back-off)."""

    put: int
    fallback: int
    accepted: bool


def good_frame(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """The record frame (``RECORD_FRAME_COLUMNS``) of split rows' converted columns (``frame_*``)."""
    c = batch.column
    names = batch.schema.names
    headers = c("frame_headers") if "frame_headers" in names else pa.nulls(batch.num_rows, FRAME_HEADERS_TYPE)
    timestamp = c("frame_timestamp")
    if timestamp.type != _UTC_MICROS:
        timestamp = timestamp.cast(_UTC_MICROS)
    return pa.table({
        "topic": c("frame_topic"),
        "partition": c("frame_partition").cast(pa.int32()),
        "offset": c("offset").cast(pa.int64()),
        "timestamp": timestamp,
        "timestamp_type": c("frame_timestamp_type").cast(pa.int32()),
        "key": c("frame_key"),
        "value": c("frame_value"),
        "headers": headers,
        "original_topic": c("topic"),
        "original_partition": c("partition").cast(pa.int32()),
        "original_offset": c("offset").cast(pa.int64()),
    })


def deliver_split(unit: TaskUnit, batch: pa.RecordBatch, wait: Wait, schemas: FrameSchemas) -> SplitDelivery:
    """One ``put_arrow`` of a split batch's deliverable rows (see the module docstring)."""
    consumed = {tp: end for tp, (_, end) in offset_ranges(batch).items()}
    kind = batch.column("row_kind")
    good_rows = batch.filter(pc.equal(kind, 1))
    fallback_rows = batch.filter(pc.equal(kind, 0))
    table = with_connect_schemas(good_frame(good_rows), schemas.key_schema, schemas.value_schema)
    unit.raw_index = {}
    if fallback_rows.num_rows:
        table = _with_fallback(unit, table, fallback_rows, schemas)
    accepted = hand_over(unit, lambda: unit.task.put_arrow(table), consumed, wait)  # type: ignore[attr-defined]
    return SplitDelivery(table.num_rows, fallback_rows.num_rows, accepted)


def _with_fallback(unit: TaskUnit, good: pa.Table, fallback_rows: pa.RecordBatch, schemas: FrameSchemas) -> pa.Table:
    """The good rows' frame with the fallback rows, converted per record under ``errors.*``, beside them."""
    converter = unit.plugins.converter
    raw = pa.Table.from_batches([fallback_rows]).select(list(RAW_COLUMNS))
    with cycle_collection_paused():
        converted = converter.convert(raw_records(raw))
    unit.raw_index = converted.raw_by_coordinates
    survivors = converted.records
    if survivors and len(survivors) < good.num_rows:
        survivors, conflicts = split_conflicting(survivors, good.schema.field("key").type,
                                                 good.schema.field("value").type)
        report_misfits(unit.plugins.error_handler, conflicts, unit.raw_of)
    if not survivors:
        return good
    built = fit_records_to_frame(survivors, converter.header_converter)
    if not built.misfits and good.num_rows:
        try:
            extra = arrow_fitted(built.table, good.schema)  # Arrow's own cast would drop fields the others lack
            return pa.concat_tables([good, extra]).sort_by(_ORDER)
        except (CannotFit, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError, TypeError) as e:
            log.info("%d records of this batch converted per record do not fit the others' types (%s); the batch "
                     "is handed over from records", len(survivors), e)
    records: list[Any] = frame_to_records(good, schemas.key_schema, schemas.value_schema,
                                          null_key_schema=schemas.null_key_schema,
                                          null_value_schema=schemas.null_value_schema,
                                          header_converter=converter.header_converter) + survivors
    records.sort(key=lambda r: (r.original_topic, r.original_kafka_partition, r.original_kafka_offset))
    rebuilt = fit_records_to_frame(records, converter.header_converter)
    report_misfits(unit.plugins.error_handler, rebuilt.misfits, unit.raw_of)
    return with_connect_schemas(rebuilt.table, rebuilt.key_schema, rebuilt.value_schema)
