"""The task loop shared by every processor, driver side and executor side alike.

Written once here, used by the driver processors (:mod:`connect_spark.runtime.processors.driver_tasks` and the processors built on
it) and by executor generations (:mod:`.generation`):

* :class:`TaskUnit` — task assembly: the task instance, its converters/transforms/error handler
  (:func:`~connect_spark.runtime.tasks.builder.build_task_plugins`), its errant record reporter, its
  context, and Kafka Connect's offset bookkeeping around it (:class:`~.worker_task.WorkerSinkTask`);
* :func:`select_rows` — which rows of a batch a task may be given: rows of partitions it owns that
  are not paused (or being re-read) and not below a seek;
* :func:`deliver_records` / :func:`deliver_arrow` / :func:`hand_over` — ``put`` (``put_arrow``,
  ``put_dataframe``) with the retriable back-off. The wait between attempts is injected (the driver
  interrupts it when the connector stops; an executor generation just waits): nothing here sleeps.

Nothing here touches Spark.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion.sink_records import ConvertedBatch, cycle_collection_paused, raw_records
from connect_spark.runtime.errors import WorkerErrantRecordReporter
from connect_spark.runtime.tasks.builder import TaskPlugins, build_task_plugins
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext
from connect_spark.runtime.tasks.worker_task import CommitFunction, WorkerSinkTask

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["TaskUnit", "Wait", "select_rows", "offset_ranges", "deliver_records", "deliver_arrow", "hand_over"]

log = logging.getLogger(__name__)

#: Waits up to the given seconds before a retry; returns False when a stop interrupted the wait.
Wait = Callable[[float], bool]


class TaskUnit:
    """One task instance with everything the loop needs around it.

    Built by a driver processor once per task at start, and by an executor's Python worker once per
    (run, task id) (:mod:`.generation` caches it). :meth:`new_loop` puts a fresh Connect bookkeeping
    (:class:`WorkerSinkTask`) around the instance: the driver keeps one for the task's life, an
    executor makes one per generation.

    Args:
        connector, worker: the connector's and the worker's configuration.
        task_id: the task's number.
        task_class: the connector's task class.
        task_config: what the task's ``start`` receives.
        clock: monotonic seconds, for the commit tick (tests inject one).
    """

    def __init__(self, connector: "ConnectorConfig", worker: "WorkerConfig", task_id: int, task_class: type,
                 task_config: Mapping[str, str], clock: Callable[[], float] = time.monotonic) -> None:
        self.connector_name = connector.name
        self.task_id = task_id
        self.task_config = dict(task_config)
        self.offset_flush_interval_ms = worker.offset_flush_interval_ms
        self.clock = clock
        self.plugins: TaskPlugins = build_task_plugins(connector, worker, task_id)
        #: The raw records of the task's last batch by coordinates (what the errant record reporter sends).
        self.raw_index: Mapping[tuple[str, int, int], Any] = {}
        reporter = None
        if connector.dlq_topic or connector.errors_log_enable:
            reporter = WorkerErrantRecordReporter(self.plugins.error_handler, self.raw_of)
        self.context = WorkerSinkTaskContext(self.task_config, reporter)
        self.task = task_class()
        self.bulk_arrow = isinstance(self.task, ArrowSinkTask)
        self.worker_task: WorkerSinkTask = self.new_loop(lambda offsets: None)

    def raw_of(self, record: Any) -> Any:
        """The consumed raw record behind ``record`` (called by the errant record reporter)."""
        return self.raw_index.get((record.original_topic, record.original_kafka_partition,
                                   record.original_kafka_offset))

    def new_loop(self, commit: CommitFunction) -> WorkerSinkTask:
        """A fresh :class:`WorkerSinkTask` around the instance, writing commits through ``commit``."""
        self.worker_task = WorkerSinkTask(
            self.connector_name, self.task_id, self.task, self.task_config,
            commit=commit,
            offset_flush_interval_ms=self.offset_flush_interval_ms,
            context=self.context,
            before_commit=self.plugins.error_handler.await_reports,
            clock=self.clock,
        )
        return self.worker_task

    def fresh_loop(self, commit: CommitFunction, paused: Iterable[TopicPartition] = ()) -> WorkerSinkTask:
        """A new loop around the already started instance (:meth:`new_loop`, marked started), with the context's
        requests of the previous loop dropped (offsets, timeout, commit) and ``paused`` as its paused partitions.

        Called where one started task serves loop after loop: executor mode at each micro-batch's generation
        (:mod:`connect_spark.runtime.tasks.generation`), real-time mode at each long batch of a partition
        (:mod:`connect_spark.runtime.realtime.partition_task`).
        """
        loop = self.new_loop(commit)
        loop.started = True
        self.context.pending_offsets.clear()
        self.context.pending_timeout_ms = -1
        self.context.commit_requested = False
        self.context.paused = set(paused)
        return loop

    def await_dead_letters(self) -> None:
        """Block until every dead letter queue write made so far is acknowledged; raises when one failed."""
        self.plugins.error_handler.await_reports()


def offset_ranges(batch: pa.RecordBatch | pa.Table) -> dict[TopicPartition, tuple[int, int]]:
    """Per topic-partition of ``batch``: its first offset and the offset after its last, in one Arrow pass.

    A batch of one partition (the common case: Spark's Kafka partitions are the batches) is answered
    with three min/max kernels; only mixed batches need a group-by.
    """
    if batch.num_rows == 0:
        return {}
    topics, partitions = batch.column("topic"), batch.column("partition")
    partition_range = pc.min_max(partitions)
    if partition_range["min"] == partition_range["max"] and pc.count_distinct(topics).as_py() == 1:
        offset_range = pc.min_max(batch.column("offset"))
        tp = TopicPartition(topics[0].as_py(), partition_range["min"].as_py())
        return {tp: (offset_range["min"].as_py(), offset_range["max"].as_py() + 1)}
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    grouped = (table.select(["topic", "partition", "offset"])
               .group_by(["topic", "partition"]).aggregate([("offset", "min"), ("offset", "max")]))
    return {TopicPartition(topic, partition): (first, last + 1)
            for topic, partition, first, last in zip(grouped.column("topic").to_pylist(),
                                                     grouped.column("partition").to_pylist(),
                                                     grouped.column("offset_min").to_pylist(),
                                                     grouped.column("offset_max").to_pylist())}


def select_rows(
    batch: pa.RecordBatch | pa.Table,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    owned: Collection[TopicPartition],
    excluded: Collection[TopicPartition] = (),
    lower_bounds: Mapping[TopicPartition, int] | None = None,
) -> pa.RecordBatch | pa.Table:
    """The rows of ``batch`` a task may be given: its ``owned`` partitions, not ``excluded`` (paused,
    being re-read), and at or above a partition's lower bound (a forward seek).

    ``ranges`` is :func:`offset_ranges` of ``batch``. A batch that needs no filtering is returned as is.
    """
    bounds = lower_bounds or {}
    present = ranges.keys()
    if all(tp in owned and tp not in excluded and tp not in bounds for tp in present):
        return batch
    if not any(tp in owned and tp not in excluded for tp in present):
        return batch.slice(0, 0)
    topics, partitions, offsets = batch.column("topic"), batch.column("partition"), batch.column("offset")
    keep = None
    for tp in present:
        in_tp = pc.and_(pc.equal(topics, tp.topic), pc.equal(partitions, tp.partition))
        if tp not in owned or tp in excluded:
            drop = in_tp
        elif tp in bounds:
            drop = pc.and_(in_tp, pc.less(offsets, bounds[tp]))
        else:
            continue
        keep = pc.invert(drop) if keep is None else pc.and_(keep, pc.invert(drop))
    return batch if keep is None else batch.filter(keep)


def _until_accepted(worker_task: WorkerSinkTask, delivered: bool, retry: Callable[[], bool], wait: Wait,
                    between: Callable[[], None] | None) -> bool:
    """Retry a ``put`` that raised ``RetriableException`` after the task's back-off, until accepted.

    Returns False when a stop interrupted the wait (the records stay pending in the task loop).
    """
    while not delivered:
        if not wait(worker_task.retry_backoff_ms() / 1000.0):
            return False
        if between is not None:
            between()
        delivered = retry()
    return True


def deliver_records(unit: TaskUnit, batch: pa.RecordBatch | pa.Table, wait: Wait, direct: Any = None,
                    between: Callable[[], None] | None = None) -> tuple[int, bool]:
    """Convert ``batch`` (raw Kafka columns) and ``put`` the records; returns (records put, accepted).

    ``direct`` is a :class:`~connect_spark.runtime.conversion.direct_records.DirectRecordBuilder` that builds the
    records straight from Arrow when the converters allow it; otherwise the per-record path converts
    them under ``errors.*``. ``between`` runs before each retry (the driver's commit tick).
    """
    with cycle_collection_paused():
        if batch.num_rows == 0:
            converted = ConvertedBatch([], {}, {})
        else:
            converted = direct.build(batch) if direct is not None else None
        if converted is None:
            converted = unit.plugins.converter.convert(raw_records(batch))
    unit.raw_index = converted.raw_by_coordinates
    worker_task = unit.worker_task
    delivered = worker_task.deliver(converted.records, converted.consumed)
    accepted = _until_accepted(worker_task, delivered, worker_task.redeliver, wait, between)
    return len(converted.records), accepted


def deliver_arrow(unit: TaskUnit, batch: pa.RecordBatch | pa.Table, wait: Wait, frames: Any = None) -> tuple[int, bool]:
    """One ``put_arrow`` for an :class:`~connect_spark.api.bulk.ArrowSinkTask`; returns (rows put, accepted).

    The table is built by Arrow when ``frames`` (an :class:`~connect_spark.runtime.conversion.record_frames.ArrowFrameBuilder`)
    can, else from records converted under ``errors.*`` (records whose key or value does not fit the
    frame's columns are reported there too, see :mod:`~connect_spark.runtime.processors.rejected_rows`).
    """
    table = frames.build(batch) if frames is not None else None
    if table is not None:
        consumed = {tp: end for tp, (_, end) in offset_ranges(batch).items()}
    else:
        from connect_spark.columnar.records import fit_records_to_frame, with_connect_schemas
        from connect_spark.runtime.processors.rejected_rows import report_misfits

        with cycle_collection_paused():
            converted = unit.plugins.converter.convert(raw_records(batch))
        unit.raw_index = converted.raw_by_coordinates
        consumed = converted.consumed
        built = fit_records_to_frame(converted.records, unit.plugins.converter.header_converter)
        report_misfits(unit.plugins.error_handler, built.misfits, unit.raw_of)  # records the frame cannot hold
        table = with_connect_schemas(built.table, built.key_schema, built.value_schema)
    accepted = hand_over(unit, lambda: unit.task.put_arrow(table), consumed, wait)  # type: ignore[attr-defined]
    return table.num_rows, accepted


def hand_over(unit: TaskUnit, put: Callable[[], None], consumed: Mapping[TopicPartition, int], wait: Wait) -> bool:
    """Hand a converted bulk batch to the task: the commit order of a bulk batch.

    A bulk sink may commit its data, with the offsets it covers, inside ``put_arrow`` /
    ``put_dataframe`` (the Delta sink's table commit, the files sink's published file). So, per batch:

    1. every dead letter queue write made while converting the batch is acknowledged; a failed write
       raises here and the batch fails before any of its data is handed over (nothing is committed
       past a record whose report was lost);
    2. ``put`` — the sink may commit data and offsets now;
    3. a ``RetriableException`` hands the same batch over again after the task's back-off (no new
       offsets meanwhile); a stop during the back-off returns False;
    4. the offsets of ``consumed`` become the task's delivered offsets; they reach the offset store
       only through :meth:`WorkerSinkTask.commit_offsets` (DLQ flushed → ``pre_commit`` → store),
       called by the processor's commit tick.
    """
    # 1.
    unit.await_dead_letters()
    # 2. and 4.
    worker_task = unit.worker_task
    delivered = worker_task.deliver_call(put, consumed)
    # 3.
    return _until_accepted(worker_task, delivered, lambda: worker_task.deliver_call(put, {}), wait, None)
