"""Hands each micro-batch to a :class:`~connect_spark.api.bulk.DataFrameSinkTask` as one record frame.

Called by :class:`connect_spark.runtime.processors.driver_dataframes.DataFrameProcessor` on the driver, inside
``foreachBatch``, through :meth:`FrameBatches.deliver` (as the task's put step, so a retriable failure
delivers the batch again). The batch's offset ranges
come from the query's offset log (:mod:`connect_spark.streaming.offset_log`), not from its rows.

With a vectorized plan (:func:`connect_spark.columnar.plan.compile_plan`) a batch takes one of two ways:

* **one pass** (the common case, for a task whose writes are atomic, see
  :meth:`~connect_spark.api.bulk.DataFrameSinkTask.writes_atomically`): the task gets the plan's
  :attr:`~connect_spark.columnar.plan.PlanOutput.guarded` frame. Its write reads the batch from Kafka,
  converts it and writes it in one Spark job; nothing is persisted, nothing aggregated. Computing that
  frame raises as soon as one row needs the per-record path; the write then commits nothing, and the
  batch takes the checked way (so a batch is read from Kafka at most twice). After a batch that had
  such rows, the next batch goes the checked way directly; after a clean one, the one-pass way again.
  A batch whose shapes are learned from its sample (its head, read on the driver) goes the checked way
  directly when rows of the sample need the per-record path.
* **checked**: the plan's staged projection is persisted and the rows needing the per-record path are
  collected from it (the job that fills the cache). Those rows alone are converted per record under
  ``errors.*`` (tolerated failures go to the log / dead letter queue); the survivors become a small
  frame put beside the good rows (``unionByName``, fitted to the good rows' types), which are read from
  the cache and never collected. A survivor whose key or value conflicts with the good rows' types (a
  string where they hold a double) is reported under ``errors.*`` at once, as the misfit of the batch it
  is (:func:`~connect_spark.columnar.records.split_conflicting`). Only a survivor that still does not fit
  (a field the others lack) makes the whole batch be rebuilt from records; records that fit no column of
  that frame are reported under ``errors.*`` (:mod:`connect_spark.runtime.processors.rejected_rows`).

Without a plan (a custom transform, an unsupported converter) the raw batch is converted per record on
the driver and handed over as a DataFrame built from Arrow.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pyspark import StorageLevel

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion.sink_records import RecordConverter, raw_records
from connect_spark.runtime.errors import RawRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FrameBatches", "RELEARN_FALLBACK_SHARE"]

log = logging.getLogger(__name__)

#: A batch converted with shapes learned from earlier batches is converted again, with shapes learned
#: from its own sample, when more than this share of its rows fell back.
RELEARN_FALLBACK_SHARE = 0.1

Put = Callable[["DataFrame"], None]


class FrameBatches:
    """The frame path of one connector: its plan (or ``None``) and converter, and which way the next
    batch takes (see the module docstring). One instance per connector, created at start."""

    def __init__(self, spark: "SparkSession", plan: Any, converter: RecordConverter, sampler: Any = None) -> None:
        self.spark = spark
        self.plan = plan
        self.converter = converter
        #: reads a batch's head with a Kafka client when the plan must learn shapes
        #: (:class:`~connect_spark.runtime.conversion.batch_sample.BatchSampler`); ``None``: the plan samples with Spark
        self.sampler = sampler
        self.one_pass_next = True
        #: counters for tests and diagnostics
        self.one_pass_batches = 0
        self.checked_batches = 0
        self.fallback_rows = 0

    def deliver(self, raw: "DataFrame", ranges: Mapping[TopicPartition, tuple[int, int]], put: Put,
                atomic: bool, acknowledge: Callable[[], None] = lambda: None) -> None:
        """Hand the raw batch (``RAW_COLUMNS``, covering ``ranges``) to ``put`` as a record frame; ``put``
        is not called when no record survived. ``atomic``: the task's writes are all-or-nothing.
        ``acknowledge`` waits for the dead letter queue writes of the per-record conversions; it is called
        before every ``put`` that follows such conversions."""
        if not ranges:
            return
        if self.plan is None:
            frame = self._from_records(raw)
            acknowledge()
            if frame is not None:
                put(frame)
            return
        if atomic and self.one_pass_next:
            from connect_spark.columnar.plan import NEEDS_RECORD_PATH

            sample = self._sample(ranges)
            output = self.plan.apply(raw, sample)
            if sample is not None and self._falls_back_in(sample):
                self.one_pass_next = False
                log.info("Rows of this batch's sample need the per-record path; the batch takes the checked way")
            else:
                try:
                    put(output.guarded)
                    self.one_pass_batches += 1
                    return
                except Exception as e:
                    if NEEDS_RECORD_PATH not in str(e):
                        raise
                    log.info("A row of this batch needs the per-record path (%s); the one-pass write committed "
                             "nothing (Spark logs the abandoned task) and the batch is handed over again",
                             _needing_row(str(e), NEEDS_RECORD_PATH))
        self._checked(raw, ranges, put, acknowledge)

    def _falls_back_in(self, sample: "DataFrame") -> bool:
        """Whether rows of the batch's sample (a local frame: Spark answers on the driver) need the
        per-record path, which spares a one-pass write bound to be abandoned (the sample is the batch's head)."""
        return self.plan.apply(sample).falls_back()

    def _checked(self, raw: "DataFrame", ranges: Mapping[TopicPartition, tuple[int, int]], put: Put,
                 acknowledge: Callable[[], None]) -> None:
        """The checked way: persisted staged rows, fallback rows converted alone, survivors put beside."""
        rows = sum(end - start for start, end in ranges.values())
        output = self.plan.apply(raw, self._sample(ranges)).persisted()
        try:
            fallback = output.fallback.toArrow()  # fills the cache: the batch's one read from Kafka
            if self.plan.reused_samples and fallback.num_rows > RELEARN_FALLBACK_SHARE * rows:
                log.info("%d of %d records did not match the shapes learned from earlier batches; learning them "
                         "from this batch", fallback.num_rows, rows)
                output.unpersist()
                self.plan.forget_samples()
                output = self.plan.apply(raw, self._sample(ranges)).persisted()
                fallback = output.fallback.toArrow()
            self.checked_batches += 1
            self.fallback_rows += fallback.num_rows
            self.one_pass_next = fallback.num_rows == 0
            frame = output.good
            if fallback.num_rows:
                converted = self.converter.convert(raw_records(fallback))
                if converted.records:
                    frame = self._beside(output, converted.records, converted.raw_by_coordinates, raw,
                                         rows - fallback.num_rows)
                acknowledge()
            if frame is not None:
                put(frame)
        finally:
            output.unpersist()

    def _sample(self, ranges: Mapping[TopicPartition, tuple[int, int]]) -> "DataFrame | None":
        """The batch's head read by the sampler when the plan will learn shapes from it, else ``None``."""
        if self.sampler is None or not self.plan.needs_sample():
            return None
        return self.sampler.sample(ranges)

    def _beside(self, output: Any, survivors: list, raws: dict[tuple[str, int, int], RawRecord],
                raw: "DataFrame", good_rows: int) -> "DataFrame | None":
        """The good rows (about ``good_rows`` of them) with the survivors of the per-record path beside them,
        as one frame; survivors that conflict with the good rows' types are reported under ``errors.*``."""
        from connect_spark.columnar.fit_to_frame import CannotFit, arrow_types, fitted
        from connect_spark.columnar.records import fit_records_to_frame, split_conflicting
        from connect_spark.runtime.processors.rejected_rows import report_misfits

        good = output.good
        if len(survivors) < good_rows:
            survivors, conflicts = split_conflicting(survivors, *arrow_types(good.schema, "key", "value"))
            report_misfits(self.converter.errors, conflicts, lambda r: raws.get(_coordinates(r)))
            if not survivors:
                return good
        built = fit_records_to_frame(survivors, self.converter.header_converter)
        try:
            if built.misfits:
                raise CannotFit(f"{len(built.misfits)} of them fit no common column")
            extra = fitted(self.spark.createDataFrame(built.table), good.schema)
        except CannotFit as e:
            log.info("%d records of this batch converted per record do not fit the others' types (%s); the batch "
                     "is handed over from records", len(survivors), e)
            records = output.to_records(good.toArrow()) + survivors
            return _frame_of_records(self.spark, records, self.converter, raws, raw)
        log.info("%d records of this batch were converted per record and are written beside the others",
                 len(survivors))
        return good.unionByName(extra)

    def _from_records(self, raw: "DataFrame") -> "DataFrame | None":
        """The batch converted per record on the driver (no vectorized plan)."""
        cached = raw.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            converted = self.converter.convert(raw_records(cached.toArrow()))
            return _frame_of_records(self.spark, converted.records, self.converter, converted.raw_by_coordinates,
                                     cached)
        finally:
            cached.unpersist()


def _needing_row(message: str, marker: str) -> str:
    """``topic[partition]@offset`` from the guard's error message (best effort, for the log)."""
    at = message.find(marker)
    return message[at + len(marker) + 2:].split()[0] if at >= 0 else "?"


def _frame_of_records(spark: "SparkSession", records: list, converter: RecordConverter,
                      raws: dict[tuple[str, int, int], RawRecord], raw: "DataFrame") -> "DataFrame | None":
    """A frame in offset order per original partition, built from records through Arrow; ``None`` if empty.

    Records whose key or value does not fit the frame's columns are reported under ``errors.*``
    (:mod:`connect_spark.runtime.processors.rejected_rows`); their consumed bytes come from ``raws`` or, for rows the
    plan converted, from the raw batch ``raw``.
    """
    if not records:
        return None
    from connect_spark.columnar.records import fit_records_to_frame
    from connect_spark.runtime.processors.rejected_rows import raw_rows, report_misfits

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
