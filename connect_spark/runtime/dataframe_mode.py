"""Builds the record frame a :class:`~connect_spark.api.bulk.DataFrameSinkTask` receives, per micro-batch.

Called by :class:`connect_spark.runtime.driver_frames.DataFrameProcessor` on the driver, inside ``foreachBatch``:

* with a vectorized plan (:func:`connect_spark.columnar.plan.compile_plan`), the plan's staged
  projection (raw columns, converted columns, ok flag) is persisted, so the batch is read from Kafka
  and converted once: one aggregation gives the offset ranges and counts the rows the plan could not
  prove convertible, those rows alone are collected and converted per record under ``errors.*``
  (tolerated ones go to the log / dead letter queue), and the frame the task writes is read from the
  same cache. When a fallback row survives conversion, the batch is rebuilt from records so the task
  still gets one frame in offset order (exactly-once sinks rely on that);
* without a plan (a custom transform, an unsupported converter), the raw batch is persisted and
  converted per record on the driver, and handed over as a DataFrame built from Arrow.

The caller keeps the batch's cache until ``put_dataframe`` returned, then calls :meth:`FrameBatch.release`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from pyspark import StorageLevel

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion import RecordConverter, raw_records
from connect_spark.runtime.errors import RawRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FrameBatch", "build_frame_batch"]

log = logging.getLogger(__name__)


@dataclass
class FrameBatch:
    """A batch ready for ``put_dataframe``: the frame (``None`` when no record survived) and offsets.

    ``release`` drops the batch's cache; the caller calls it once the frame is no longer read.
    """

    frame: "DataFrame | None"
    first: dict[TopicPartition, int]
    consumed: dict[TopicPartition, int]
    release: Callable[[], None] = lambda: None


def build_frame_batch(spark: "SparkSession", raw: "DataFrame", plan: Any, converter: RecordConverter) -> FrameBatch:
    """Convert a raw batch (``RAW_COLUMNS``, not persisted) into a record frame (see the module docstring)."""
    if plan is None:
        return _from_records(spark, raw, converter)
    output, counts = _staged_batch(raw, plan)
    try:
        first = {tp: start for tp, (start, _) in counts.ranges.items()}
        consumed = {tp: end for tp, (_, end) in counts.ranges.items()}
        frame = output.good if consumed else None
        if counts.fallback_rows:
            converted = converter.convert(raw_records(output.fallback.toArrow()))
            if converted.records:
                log.info("%d records of this batch needed the per-record path; the batch is handed over from "
                         "records", len(converted.records))
                records = output.to_records(output.good.toArrow()) + converted.records
                frame = _frame_of_records(spark, records, converter, converted.raw_by_coordinates, raw)
    except BaseException:
        output.unpersist()
        raise
    return FrameBatch(frame, first, consumed, output.unpersist)


#: A batch converted with shapes learned from earlier batches is converted again, with shapes learned
#: from its own sample, when more than this share of its rows fell back.
RELEARN_FALLBACK_SHARE = 0.1


def _staged_batch(raw: "DataFrame", plan: Any) -> tuple[Any, Any]:
    """The plan's persisted output for ``raw`` and its counts, learning the shapes again if they went stale."""
    output = plan.apply(raw).persisted()
    try:
        counts = output.offset_ranges()
        if plan.reused_samples and counts.fallback_rows > RELEARN_FALLBACK_SHARE * counts.rows:
            log.info("%d of %d records did not match the shapes learned from earlier batches; learning them "
                     "from this batch", counts.fallback_rows, counts.rows)
            output.unpersist()
            plan.forget_samples()
            output = plan.apply(raw).persisted()
            counts = output.offset_ranges()
    except BaseException:
        output.unpersist()
        raise
    return output, counts


def _from_records(spark: "SparkSession", raw: "DataFrame", converter: RecordConverter) -> FrameBatch:
    """The batch converted per record on the driver (no vectorized plan)."""
    from connect_spark.columnar.plan import batch_offset_ranges

    cached = raw.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        ranges = batch_offset_ranges(cached)
        first = {tp: start for tp, (start, _) in ranges.items()}
        consumed = {tp: end for tp, (_, end) in ranges.items()}
        converted = converter.convert(raw_records(cached.toArrow())) if consumed else None
        frame = _frame_of_records(spark, converted.records, converter, converted.raw_by_coordinates,
                                  cached) if converted else None
    finally:
        cached.unpersist()
    return FrameBatch(frame, first, consumed)


def _frame_of_records(spark: "SparkSession", records: list, converter: RecordConverter,
                      raws: dict[tuple[str, int, int], RawRecord], raw: "DataFrame") -> "DataFrame | None":
    """A frame in offset order per original partition, built from records through Arrow; ``None`` if empty.

    Records whose key or value does not fit the frame's columns are reported under ``errors.*``
    (:mod:`connect_spark.runtime.frame_errors`); their consumed bytes come from ``raws`` or, for rows the
    plan converted, from the raw batch ``raw``.
    """
    if not records:
        return None
    from connect_spark.columnar.records import fit_records_to_frame
    from connect_spark.runtime.frame_errors import raw_rows, report_misfits

    records.sort(key=lambda r: (r.original_topic, r.original_kafka_partition, r.original_kafka_offset))
    built = fit_records_to_frame(records, converter.header_converter)
    if built.misfits:
        missing = [r for r, _ in built.misfits if _coordinates(r) not in raws]
        if missing:
            raws = {**raws, **raw_rows(raw, map(_coordinates, missing))}
        report_misfits(converter.errors, built.misfits, lambda r: raws.get(_coordinates(r)))
    if built.table.num_rows == 0:
        return None
    return spark.createDataFrame(built.table)


def _coordinates(record: Any) -> tuple[str, int, int]:
    return record.original_topic, record.original_kafka_partition, record.original_kafka_offset
