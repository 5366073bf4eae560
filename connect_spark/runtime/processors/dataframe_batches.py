"""Hands each micro-batch to a :class:`~connect_spark.api.bulk.DataFrameSinkTask` as one record frame.

Called by :class:`connect_spark.runtime.processors.driver_dataframes.DataFrameProcessor` on the driver, inside
``foreachBatch``, through :meth:`FrameBatches.deliver` (as the task's put step, so a retriable failure
delivers the batch again). The batch's offset ranges
come from the query's offset log (:mod:`connect_spark.streaming.offset_log`), not from its rows.

With a vectorized plan (:func:`connect_spark.columnar.plan.compile_plan`) a batch takes one of three ways:

* **one pass** (the common case, for a task whose writes are atomic, see
  :meth:`~connect_spark.api.bulk.DataFrameSinkTask.writes_atomically`): the task gets the plan's
  :attr:`~connect_spark.columnar.plan.PlanOutput.guarded` frame. Its write reads the batch from Kafka,
  converts it and writes it in one Spark job; nothing is persisted, nothing aggregated. Computing that
  frame raises as soon as one row needs the per-record path; the write then commits nothing, and the
  batch takes the checked way (so a batch is read from Kafka at most twice). After a batch that had
  such rows, the next batch goes the checked way directly; after a clean one, the one-pass way again.
  A batch whose shapes are learned from its sample (its head, read on the driver) goes the checked way
  directly when rows of the sample need the per-record path.
* **one pass converting its odd rows** (with an :class:`~connect_spark.runtime.processors.fallback_in_write.InWriteConversion`:
  classic sessions of Spark 4.1+): a batch expected to hold rows that need the per-record path (its
  sample has some, or the last batch had some), or whose guarded write
  was abandoned, is written from :meth:`~connect_spark.columnar.plan.PlanOutput.converted_in_write`: the
  write's own tasks convert those rows per record, so the batch is still read once and nothing is
  persisted. A converted row the frame cannot hold abandons that write too, and the batch takes the
  checked way (leaving out the rows the write's completed tasks already reported).
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
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from connect_spark.runtime.processors.fallback_in_write import InWriteConversion

__all__ = ["FrameBatches", "RELEARN_FALLBACK_SHARE"]

log = logging.getLogger(__name__)

#: A batch converted with shapes learned from earlier batches is converted again, with shapes learned
#: from its own sample, when more than this share of its rows fell back.
RELEARN_FALLBACK_SHARE = 0.1

Put = Callable[["DataFrame"], None]


class FrameBatches:
    """The frame path of one connector: its plan (or ``None``) and converter, and which way the next
    batch takes (see the module docstring). One instance per connector, created at start."""

    def __init__(self, spark: "SparkSession", plan: Any, converter: RecordConverter, sampler: Any = None,
                 in_write: "InWriteConversion | None" = None) -> None:
        self.spark = spark
        self.plan = plan
        self.converter = converter
        #: converts the rows that fall back inside a one-pass write (classic sessions, Spark 4.1+); ``None``:
        #: such rows make the batch take the checked way
        self.in_write = in_write
        #: rows of the batch being delivered that an earlier, failed attempt already reported under ``errors.*``
        self._reported: set[tuple[str, int, int]] = set()
        #: reads a batch's head with a Kafka client when the plan must learn shapes
        #: (:class:`~connect_spark.runtime.conversion.batch_sample.BatchSampler`); ``None``: the plan samples with Spark
        self.sampler = sampler
        self.one_pass_next = True
        #: the last batch had rows needing the per-record path: the next one expects some too
        self.odd_rows_last = False
        #: counters for tests and diagnostics
        self.one_pass_batches = 0
        self.checked_batches = 0
        self.fallback_rows = 0

    def deliver(self, raw: "DataFrame", ranges: Mapping[TopicPartition, tuple[int, int]], put: Put,
                atomic: bool, acknowledge: Callable[[], None] = lambda: None,
                single_job: Callable[["DataFrame"], bool] = lambda frame: True,
                put_guarded: Put | None = None) -> None:
        """Hand the raw batch (``RAW_COLUMNS``, covering ``ranges``) to ``put`` as a record frame; ``put``
        is not called when no record survived. ``atomic``: the task's writes are all-or-nothing.
        ``acknowledge`` waits for the dead letter queue writes of the per-record conversions; it is called
        before every ``put`` that follows such conversions. ``single_job``: whether ``put`` reads a frame in
        one Spark job (a frame that converts rows inside the write is never computed twice).
        ``put_guarded``: ``put`` for the one-pass write's guarded frame, where a row the task rejects raises
        like a row needing the per-record path instead of being looked for first (default: ``put``)."""
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
            odd = self.odd_rows_last or (sample is not None and self._falls_back_in(sample))
            if odd and self.in_write is not None:
                if self._written_in_one_pass(output, put, ranges, single_job):
                    return
            elif odd:
                self.one_pass_next = False
                log.info("Rows of this batch's sample need the per-record path; the batch takes the checked way")
            else:
                try:
                    (put_guarded or put)(output.guarded)
                    self.one_pass_batches += 1
                    self.odd_rows_last = False
                    return
                except Exception as e:
                    if NEEDS_RECORD_PATH not in str(e):
                        raise
                    log.info("A row of this batch needs the per-record path (%s); the one-pass write committed "
                             "nothing (Spark logs the abandoned task) and the batch is handed over again",
                             _needing_row(str(e), NEEDS_RECORD_PATH))
                if self.in_write is not None and self._written_in_one_pass(output, put, ranges, single_job):
                    return
        self._checked(raw, ranges, put, acknowledge)
        self._reported.clear()

    def _written_in_one_pass(self, output: Any, put: Put, ranges: Mapping[TopicPartition, tuple[int, int]],
                             single_job: Callable[["DataFrame"], bool]) -> bool:
        """``put`` the frame whose rows that fall back are converted inside the write; False when the sink
        would read it twice, or a row could not be placed (the write committed nothing): the batch then takes
        the checked way. What the executors reported counts either way, and the rows they reported are not
        reported again by a later attempt."""
        from connect_spark.columnar.plan import NEEDS_RECORD_PATH

        from connect_spark.runtime.processors.fallback_in_write import arrow_batches_by_count

        assert self.in_write is not None
        frame = self.in_write.frame(output, frozenset(self._reported))
        if not single_job(frame):
            return False
        try:
            with arrow_batches_by_count(frame.sparkSession):
                put(frame)
        except Exception as e:
            self._take_report(ranges)
            if NEEDS_RECORD_PATH not in str(e):
                raise
            self.one_pass_next = False
            log.info("A row of this batch converted per record does not fit the others' types (%s); the write "
                     "committed nothing and the batch takes the checked way", _needing_row(str(e), NEEDS_RECORD_PATH))
            return False
        fallback = self._take_report(ranges)
        self._reported.clear()
        self.one_pass_batches += 1
        self.odd_rows_last = fallback > 0
        return True

    def _take_report(self, ranges: Mapping[TopicPartition, tuple[int, int]]) -> int:
        """Count what the executors' conversions did (see :class:`InWriteReport`) and return how many rows fell
        back; a batch where more than ``RELEARN_FALLBACK_SHARE`` of the rows fell back under reused shapes makes
        the next one learn again."""
        assert self.in_write is not None
        report = self.in_write.take_report()
        self.converter.errors.metrics.add(report.counters)
        self.fallback_rows += report.fallback
        self._reported |= report.unwritten
        rows = sum(end - start for start, end in ranges.values())
        if report.fallback and self.plan.reused_samples and report.fallback > RELEARN_FALLBACK_SHARE * rows:
            log.info("%d of %d records did not match the shapes learned from earlier batches; the next batch learns "
                     "them again", report.fallback, rows)
            self.plan.forget_samples()
        return report.fallback

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
            if self._reported:
                fallback = fallback.filter(_not_in(fallback, self._reported))
            self.checked_batches += 1
            self.fallback_rows += fallback.num_rows
            self.one_pass_next = fallback.num_rows == 0 or self.in_write is not None
            self.odd_rows_last = fallback.num_rows > 0
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
        from connect_spark.columnar.types import record_frame_spark_schema
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
            extra = fitted(self.spark.createDataFrame(built.table, record_frame_spark_schema(
                built.table, built.key_schema, built.value_schema)), good.schema)
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
    from connect_spark.columnar.types import record_frame_spark_schema

    # typed from the Connect schemas: Spark would read a timestamp_ntz's naive Arrow timestamps as local time
    return spark.createDataFrame(built.table, record_frame_spark_schema(built.table, built.key_schema,
                                                                        built.value_schema))


def _not_in(rows: "pa.Table", coordinates: set[tuple[str, int, int]]) -> "pa.Array":
    """A mask of the raw ``rows`` whose coordinates are not in ``coordinates``."""
    import pyarrow as pa

    columns = (rows.column(name).to_pylist() for name in ("topic", "partition", "offset"))
    return pa.array([c not in coordinates for c in zip(*columns)], pa.bool_())


def _coordinates(record: Any) -> tuple[str, int, int]:
    return record.original_topic, record.original_kafka_partition, record.original_kafka_offset
