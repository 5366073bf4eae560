"""Rows the vectorized plan cannot convert, converted per record inside the one-pass write itself.

A batch with ``k`` odd rows among ``n`` (a field sent as a string now and then, a ``-0.0``) would otherwise
cost a second pass over all ``n``: the checked way of :mod:`connect_spark.runtime.processors.dataframe_batches`
persists the whole batch to find and convert the ``k``. Here the write job converts them where it meets them:
the frame handed to the sink is :meth:`~connect_spark.columnar.plan.PlanOutput.converted_in_write`, where an
Arrow UDF receives the raw columns of the rows that fall back (a null for every row Spark converted, so the
good rows cost a null each) and returns, for each, the record frame's columns in the good rows' types and
whether the row is written. The batch is read from Kafka once, persisted nowhere, and its odd rows cost what
converting them costs.

On the executor (:class:`FallbackConversion`, called by Spark's Python worker for each write task, with the
task's Arrow batches) the rows are converted by the connector's own converters and transforms under ``errors.*``, as
the driver would: tolerated failures are logged (``errors.log.enable``), sent to the dead letter queue
(``errors.deadletterqueue.*``, by the Python worker's own producer) and counted, and survivors whose key or
value conflicts with the good rows' types are reported as misfits. A task's dead letters are held until it
has converted its last row, then written and acknowledged (:mod:`connect_spark.runtime.errors.held`): before
the task ends, so before the sink commits the batch, and never by a task that failed. What the executors did
reaches the driver through an accumulator (:class:`InWriteReport`): how many rows fell back, which of them
were not written, and the error counters, which the driver adds to the task's metrics.

A row the frame cannot hold (a field the good rows lack, which needs the table's schema to grow), and any
error the connector does not tolerate, makes the UDF raise :data:`~connect_spark.columnar.plan.NEEDS_RECORD_PATH`:
the write commits nothing and the batch takes the checked way, which grows the schema or fails the task
with the connector's own error. The rows reported by the write's tasks that completed are left out of that
second pass; a task that failed reported to no accumulator, and wrote no dead letter. A row a failed task
logged is logged again. Only a task that wrote its dead letters and was then cancelled, before it completed,
leaves them to be written again: dead letters are written at least once, as Kafka Connect writes them again
for the records it delivers again after a failure.

Chosen by :class:`~connect_spark.runtime.processors.driver_dataframes.DataFrameProcessor` for classic sessions
on Spark 4.1 and later (``arrow_udf``); on Spark 4.0 or Spark Connect, batches with such rows take the
checked way.
"""

from __future__ import annotations

import json
import logging
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import numpy as np
import pyarrow as pa
from pyspark.accumulators import AccumulatorParam

from connect_spark.columnar.plan import FRAME_DATA_COLUMNS, NEEDS_RECORD_PATH
from connect_spark.columnar.fit_to_frame import arrow_fitted, spark_arrow_type
from connect_spark.columnar.records import fit_records_to_frame, split_conflicting
from connect_spark.runtime.conversion.sink_records import cycle_collection_paused, raw_records
from connect_spark.runtime.errors.held import held_reporters, hold_dead_letters
from connect_spark.runtime.processors.rejected_rows import report_misfits
from connect_spark.runtime.python_worker.run_cache import RunCache
from connect_spark.streaming.raw_batch import RAW_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from connect_spark.columnar.plan import PlanOutput
    from connect_spark.runtime.tasks.builder import TaskPlugins

__all__ = ["InWriteConversion", "InWriteReport", "ReportSum", "FallbackConversion", "in_write_supported",
           "arrow_batches_by_count", "ARROW_BYTES_KEY"]

log = logging.getLogger(__name__)

Coordinates = tuple[str, int, int]


@dataclass
class InWriteReport:
    """What the executors' conversions of one batch did, summed by Spark's accumulator.

    Attributes:
        fallback: rows converted per record.
        unwritten: coordinates of those rows that were not written (tolerated errors, misfits, rows a
            transform dropped).
        counters: error counters to add to the task's metrics (Kafka's metric names).
    """

    fallback: int = 0
    unwritten: set[Coordinates] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)

    def merge(self, other: "InWriteReport") -> "InWriteReport":
        self.fallback += other.fallback
        self.unwritten |= other.unwritten
        for name, count in other.counters.items():
            self.counters[name] = self.counters.get(name, 0) + count
        return self


class ReportSum(AccumulatorParam):
    """How Spark sums :class:`InWriteReport` accumulator updates (the driver's value and each task's)."""

    def zero(self, value: InWriteReport) -> InWriteReport:
        return InWriteReport()

    def addInPlace(self, first: InWriteReport, second: InWriteReport) -> InWriteReport:
        return first.merge(second)


def in_write_supported(spark: "SparkSession") -> bool:
    """Whether ``spark`` can convert fallback rows inside a write: a classic session with ``arrow_udf``."""
    try:
        from pyspark.sql.functions import arrow_udf  # noqa: F401 (Spark 4.1 and later)
    except ImportError:
        return False
    return getattr(spark, "_jsparkSession", None) is not None


#: Spark's byte bound of the Arrow batches a Python UDF receives; ``Int.MaxValue`` turns the check off
ARROW_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
_UNBOUNDED = str(2**31 - 1)


@contextmanager
def arrow_batches_by_count(session: "SparkSession") -> Iterator[None]:
    """Within the block, ``session``'s Arrow batches for Python UDFs are bounded by their record count alone
    (``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000 by default); the setting is restored after.

    Called by :class:`~connect_spark.runtime.processors.dataframe_batches.FrameBatches` around the write of a
    frame from :meth:`InWriteConversion.frame`, in the thread that runs the micro-batch; ``session`` is the
    batch's own (a streaming query runs its batches in a clone of the user's session, so no other query sees
    the change). Spark checks its byte bound by walking the batch's Arrow vectors after every row it adds,
    which cost the write more than half of what converting inside it adds to a clean write (measured: 250,000
    rows with 1 % falling back, 1.0 against 0.45 CPU-s above the clean write). In this UDF's input only the
    rows that fall back carry their raw bytes; every other row is a null.
    """
    previous = session.conf.get(ARROW_BYTES_KEY, None)
    session.conf.set(ARROW_BYTES_KEY, _UNBOUNDED)
    try:
        yield
    finally:
        if previous is None:
            session.conf.unset(ARROW_BYTES_KEY)
        else:
            session.conf.set(ARROW_BYTES_KEY, previous)


class InWriteConversion:
    """The driver's side: builds each batch's frame and reads back what the executors reported.

    Created by :class:`~connect_spark.runtime.processors.dataframe_batches.FrameBatches` for a connector on a
    classic session; ``connector_props`` and ``worker_props`` are the resolved configurations the executors
    build the converters from, ``run_id`` tells one start of the connector from the next.
    """

    def __init__(self, spark: "SparkSession", connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                 run_id: str, task_id: int = 0) -> None:
        self.spark = spark
        self.connector_props = dict(connector_props)
        self.worker_props = dict(worker_props)
        self.run_id = run_id
        self.task_id = task_id
        self.reports = spark.sparkContext.accumulator(InWriteReport(), ReportSum())

    def frame(self, output: "PlanOutput", skip: frozenset[Coordinates] = frozenset()) -> "DataFrame":
        """The batch's record frame with its fallback rows converted by the write's own tasks, except those
        at ``skip`` (reported by an earlier attempt at the batch: left out); resets the report (read it with
        :meth:`take_report` after the write)."""
        from pyspark.sql.functions import arrow_udf
        from pyspark.sql.pandas.functions import ArrowUDFType
        from pyspark.sql.types import BooleanType, StructField, StructType

        self.reports.value = InWriteReport()
        good = output.good.schema
        returned = StructType([StructField("keep", BooleanType()),
                               *[StructField(name, _nullable(good[name].dataType)) for name in FRAME_DATA_COLUMNS]])
        conversion = FallbackConversion(self.run_id, self.task_id, self.connector_props, self.worker_props,
                                        returned.json(), self.reports, skip)
        # nondeterministic (it reports errors): Spark then evaluates it once per row, never again in a
        # filter pushed below it
        with warnings.catch_warnings():  # PySpark prefers type hints, which a callable object cannot give it
            warnings.simplefilter("ignore", UserWarning)
            convert = arrow_udf(conversion, returned, ArrowUDFType.SCALAR_ITER).asNondeterministic()

        def converted(raw: "Column") -> "Column":
            return convert(raw)

        return output.converted_in_write(converted)

    def take_report(self) -> InWriteReport:
        """What the executors reported since the last :meth:`frame` (tasks that completed only)."""
        report = self.reports.value
        self.reports.value = InWriteReport()
        return report


class FallbackConversion:
    """The Arrow UDF's function, pickled to the executors: raw rows (a struct of ``RAW_COLUMNS``, null for rows
    Spark converted) in, ``keep`` and the record frame's columns out (see the module docstring).

    Called by Spark's Python worker once per write task, with the task's Arrow batches as an iterator. The
    converters, transforms and error reporters are built once per Python worker and run (:func:`_plugins`),
    and rebuilt after a failure; the task's dead letters are held and sent when its last batch is converted
    (:class:`~connect_spark.runtime.errors.held.HeldReporter`).
    """

    def __init__(self, run_id: str, task_id: int, connector_props: dict[str, Any], worker_props: dict[str, Any],
                 returned_json: str, reports: Any, skip: frozenset[Coordinates] = frozenset()) -> None:
        self.skip = skip
        self.run_id = run_id
        self.task_id = task_id
        self.connector_props = connector_props
        self.worker_props = worker_props
        self.returned_json = returned_json
        self.reports = reports

    def __call__(self, batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        plugins = _plugins_by_run.peek(self.run_id, self.task_id)
        for reporter in held_reporters(plugins.error_handler) if plugins is not None else []:
            reporter.drop_held()  # an earlier task of this worker that did not finish: not this task's letters
        for raw in batches:
            yield self._converted(raw)
        plugins = _plugins_by_run.peek(self.run_id, self.task_id)
        if plugins is not None and any(r.held for r in held_reporters(plugins.error_handler)):
            self._send_held(plugins)

    def _send_held(self, plugins: "TaskPlugins") -> None:
        """Send the task's held dead letters and wait for them; their counters go to the driver's report."""
        before = plugins.error_handler.metrics.as_dict()
        try:
            for reporter in held_reporters(plugins.error_handler):
                reporter.send_held()
        except BaseException as e:
            _forget(self.run_id, self.task_id)
            raise RuntimeError(f"{NEEDS_RECORD_PATH}: dead letters not written: {type(e).__name__}: {e}") from e
        self.reports.add(InWriteReport(0, set(), _changes(before, plugins.error_handler.metrics.as_dict())))

    def _converted(self, raw: pa.Array) -> pa.Array:
        """One Arrow batch of the task: its rows that fall back converted and placed, the others null."""
        returned = _returned_type(self.returned_json)
        if isinstance(raw, pa.ChunkedArray):
            raw = raw.combine_chunks()
        # positions of the rows that fall back, without a Python object per row of the batch
        rows = np.flatnonzero(raw.is_valid().to_numpy(zero_copy_only=False)).tolist()
        skipped = self._skipped(raw, rows) if self.skip else []
        if skipped:
            left_out = set(skipped)
            rows = [i for i in rows if i not in left_out]
        if not rows:
            return _placed(None, [], len(raw), returned, dict.fromkeys(skipped, False))
        plugins = _plugins(self)
        try:
            placed, unwritten, counters = _convert(plugins, raw, rows, returned, skipped)
        except BaseException as e:
            _forget(self.run_id, self.task_id)
            raise RuntimeError(f"{NEEDS_RECORD_PATH}: {type(e).__name__}: {e}") from e
        self.reports.add(InWriteReport(len(rows), unwritten, counters))
        return placed

    def _skipped(self, raw: pa.StructArray, rows: list[int]) -> list[int]:
        """Positions of ``rows`` already reported by an earlier attempt at this batch: not converted again."""
        topics, partitions, offsets = (raw.field(name).to_pylist() for name in ("topic", "partition", "offset"))
        return [i for i in rows if (topics[i], partitions[i], offsets[i]) in self.skip]


def _convert(plugins: "TaskPlugins", raw: pa.StructArray, rows: list[int], returned: pa.StructType,
             skipped: list[int]) -> tuple[pa.StructArray, set[Coordinates], dict[str, int]]:
    """Convert the ``rows`` of ``raw`` and place them (``skipped`` rows are not written): the UDF's result
    and what to report."""
    converter = plugins.converter
    handler = plugins.error_handler
    before = handler.metrics.as_dict()
    table = pa.Table.from_struct_array(raw.take(pa.array(rows, pa.int64()))).select(list(RAW_COLUMNS))
    with cycle_collection_paused():
        converted = converter.convert(raw_records(table))
    survivors = converted.records
    key_type, value_type = returned.field("key").type, returned.field("value").type
    if survivors:
        survivors, conflicts = split_conflicting(survivors, key_type, value_type)
        report_misfits(handler, conflicts, lambda r: converted.raw_by_coordinates.get(_coordinates(r)))
    frame_types = pa.schema([returned.field(name) for name in FRAME_DATA_COLUMNS])
    fitted = None
    if survivors:
        built = fit_records_to_frame(survivors, converter.header_converter)
        if built.misfits:
            raise ValueError(f"{len(built.misfits)} converted record(s) fit no common column: {built.misfits[0][1]}")
        fitted = arrow_fitted(built.table.select(list(FRAME_DATA_COLUMNS)), frame_types)
    handler.await_reports()  # every report made before these rows can be written
    position = {(t, p, o): i for i, t, p, o in zip(rows, *(table.column(c).to_pylist()
                                                          for c in ("topic", "partition", "offset")))}
    order = [position[_coordinates(r)] for r in survivors]
    keep = dict.fromkeys([*rows, *skipped], False)  # the rows this batch decided on; the others Spark converted
    keep.update(dict.fromkeys(order, True))
    written = set(order)
    unwritten = {coordinates for coordinates, i in position.items() if i not in written}
    placed = _placed(fitted, order, len(raw), returned, keep)
    return placed, unwritten, _changes(before, handler.metrics.as_dict())


def _changes(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The error counters that moved from ``before`` to ``after``, as increments (the last error's time as is)."""
    counters = {name: after[name] - before[name] for name in after if after[name] != before[name]}
    if "last-error-timestamp" in counters:
        counters["last-error-timestamp"] = after["last-error-timestamp"]
    return counters


def _nullable(data_type: Any) -> Any:
    """``data_type`` with every field, element and map value nullable: the UDF returns nulls for the rows it
    does not write, and the frame's own columns are ``when(falls back, converted, else good)`` anyway."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _placed(fitted: pa.Table | None, order: list[int], size: int, returned: pa.StructType,
            keep: dict[int, bool]) -> pa.StructArray:
    """The UDF's result: ``fitted``'s row ``j`` at position ``order[j]``, nulls elsewhere. ``keep`` holds the
    rows this batch decided on (written or not); every other row is a null struct (a row Spark converted).
    Built with numpy: no Python object per row of the batch."""
    slot = np.full(size, -1, dtype=np.int64)
    slot[order] = np.arange(len(order), dtype=np.int64)
    undecided = np.ones(size, dtype=bool)
    undecided[list(keep)] = False
    written = np.zeros(size, dtype=bool)
    written[[i for i, k in keep.items() if k]] = True
    arrays = [pa.array(written, pa.bool_(), mask=undecided)]
    take = pa.array(slot, pa.int64(), mask=slot < 0)
    for name in FRAME_DATA_COLUMNS:
        field_type = returned.field(name).type
        arrays.append(fitted.column(name).combine_chunks().take(take) if fitted is not None
                      else pa.nulls(size, field_type))
    return pa.StructArray.from_arrays(arrays, fields=list(returned), mask=pa.array(undecided, pa.bool_()))


def _coordinates(record: Any) -> Coordinates:
    return record.original_topic, record.original_kafka_partition, record.original_kafka_offset


_returned_types: dict[str, pa.StructType] = {}


def _returned_type(returned_json: str) -> pa.StructType:
    """The Arrow type of the UDF's result, from Spark's type (as the worker hands results back)."""
    cached = _returned_types.get(returned_json)
    if cached is None:
        from pyspark.sql.types import StructType

        cached = _returned_types[returned_json] = spark_arrow_type(StructType.fromJson(json.loads(returned_json)))
    return cached


def _close(plugins: "TaskPlugins") -> None:
    plugins.stop()
    plugins.close()


#: this Python worker's converters and reporters, by (run id, task id)
_plugins_by_run: "RunCache[TaskPlugins]" = RunCache("converters", _close)


def _plugins(conversion: FallbackConversion) -> "TaskPlugins":
    """This Python worker's converters and reporters for the connector's run (those of earlier runs closed);
    the dead letter queue reporter holds its letters until the task's end."""
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.runtime.tasks.builder import build_task_plugins

    def build() -> "TaskPlugins":
        plugins = build_task_plugins(ConnectorConfig(conversion.connector_props),
                                     WorkerConfig(conversion.worker_props), conversion.task_id)
        hold_dead_letters(plugins.error_handler)
        return plugins

    return _plugins_by_run.get(conversion.run_id, conversion.task_id, build)



def _forget(run_id: str, task_id: int) -> None:
    """Drop (and close) the plugins after a failure: the next batch starts from fresh converters and handler."""
    _plugins_by_run.evict(run_id, task_id)
