"""Runs one sink connector as a Spark streaming query, with its tasks resident on the driver.

Position and committed offsets
------------------------------
Spark's checkpoint only records how far a query has *read*; the offset store records how far the
tasks said records are *safe*. connect_spark makes the offset store the single source of truth:

* every query starts a new checkpoint *generation* (``<checkpoint.location>/<name>/gen-<n>``) whose
  ``startingOffsets`` are the committed offsets (concrete numbers for every partition; the reset
  policy for partitions with none). A crash, a deleted checkpoint or a kill -9 therefore re-delivers
  exactly ``[committed, position)`` — nothing ``pre_commit`` did not return is ever skipped;
* when a running task needs records again — it called ``context.offset(...)``, its ``pre_commit``
  raised, or it resumed a paused partition — the runner lets the current batch finish, stops the
  query between batches, and starts the next generation from the rewound offsets (the other
  partitions continue from what they consumed). Rewinds are rare, and a fresh generation keeps
  Spark's own exactly-once bookkeeping consistent instead of patching ranges into batches.

Threads: Spark calls :meth:`ConnectorRunner._on_batch` from its streaming thread; the supervisor
calls :meth:`tick` from the main thread. One lock serialises every call into the tasks, and the
query is only ever stopped between batches (stopping it inside a Python ``foreachBatch`` call can
crash Spark's interruption handling).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from connect_spark import plugins
from connect_spark.api.bulk import DataFrameSinkTask
from connect_spark.api.connector import ConnectorContext, SinkConnector
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.metrics.sink_task import SinkTaskMetrics
from connect_spark.metrics.snapshot import connector_snapshot, progress_line
from connect_spark.runtime.assignment import extend_assignment, range_assignment
from connect_spark.runtime.conversion import cycle_collection_paused, raw_records
from connect_spark.runtime.dataframe_mode import FrameBatches
from connect_spark.runtime.errors import WorkerErrantRecordReporter
from connect_spark.runtime.executor_mode import EXECUTOR_MODE_MAX_OFFSETS_PER_TRIGGER, ExecutorTasks
from connect_spark.runtime.header_reads import headers_needed
from connect_spark.runtime.partitions import PartitionDirectory
from connect_spark.runtime.task_builder import TaskPlugins, build_task_plugins
from connect_spark.runtime.task_context import WorkerSinkTaskContext
from connect_spark.runtime.worker_task import TaskFailedError, WorkerSinkTask
from connect_spark.streaming.offset_log import batch_ranges
from connect_spark.streaming.source import kafka_source_options, raw_columns, read_kafka_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["ConnectorRunner", "ConnectorState", "DRIVER_MODE_MAX_OFFSETS_PER_TRIGGER"]

log = logging.getLogger(__name__)

#: Batch bound in driver mode when the worker sets no ``max.offsets.per.trigger``: every record of a
#: batch passes through the driver, so a backlog must not arrive as one batch.
DRIVER_MODE_MAX_OFFSETS_PER_TRIGGER = 50_000


class ConnectorState:
    """Connector states as ``connect-status`` names them."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class _RunnerConnectorContext(ConnectorContext):
    def __init__(self, runner: "ConnectorRunner") -> None:
        self._runner = runner

    def request_task_reconfiguration(self) -> None:
        log.warning("%s: task reconfiguration requested; it takes effect when the connector restarts",
                    self._runner.name)

    def raise_error(self, error: BaseException) -> None:
        self._runner.fail(error)


class _Task:
    """A worker task, its plugins, and the raw records of its last batch (for the errant record reporter)."""

    def __init__(self, task_plugins: TaskPlugins) -> None:
        self.plugins = task_plugins
        self.worker_task: WorkerSinkTask = None  # type: ignore[assignment]  # set right after construction
        self.raw_index: dict[tuple[str, int, int], Any] = {}

    def raw_of(self, record: Any) -> Any:
        return self.raw_index.get((record.original_topic, record.original_kafka_partition,
                                   record.original_kafka_offset))


class ConnectorRunner:
    """One connector: its connector instance, its tasks, its offset commits and its streaming query.

    Args:
        spark: the session queries run in.
        worker: the worker configuration.
        connector: the connector configuration (validated).
        offset_store: where committed offsets are read and written.
        available_now: drain what exists and stop, instead of the worker's trigger.
    """

    def __init__(
        self,
        spark: "SparkSession",
        worker: "WorkerConfig",
        connector: "ConnectorConfig",
        offset_store: "OffsetStore",
        available_now: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spark = spark
        self.worker = worker
        self.config = connector
        self.name = connector.name
        self.offset_store = offset_store
        self.available_now = available_now or worker.trigger == "available-now"
        self._clock = clock
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._query: StreamingQuery | None = None
        self._generation = 0
        self._tasks: list[_Task] = []
        self._task_of: dict[TopicPartition, _Task] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._restart_from: dict[TopicPartition, int] | None = None
        self._held: dict[TopicPartition, int] = {}
        self._failure: BaseException | None = None
        self._last_activity = clock()
        self._connector: SinkConnector | None = None
        self._directory: PartitionDirectory | None = None
        self._executor: ExecutorTasks | None = None
        self._frames = False
        self._frame_plan: Any = None
        self._frame_batches: FrameBatches | None = None
        self._query_checkpoint: Path | None = None  # the running query's checkpoint and start positions
        self._query_started_from: dict[TopicPartition, int] = {}
        self._include_headers = True
        self.task_configs: list[dict[str, str]] = []
        self.execution_mode = "driver"
        self.state = ConnectorState.UNASSIGNED
        self.batches = 0
        self.records_read = 0
        self.committed: dict[TopicPartition, int] = {}  # what the offset store holds (for lag metrics)
        self.last_progress: dict[str, Any] | None = None  # Spark's progress of the last batch (listener)
        self._executor_metrics = SinkTaskMetrics(clock)  # executor mode: all tasks' totals in one group

    # -- start ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the connector and its tasks, open their partitions, and start the first query."""
        connector_cls = plugins.resolve("connector", self.config.connector_class, key="connector.class")
        self._connector = connector_cls()
        self._connector.initialize(_RunnerConnectorContext(self))
        props = {k: str(v) for k, v in self.config.resolved.items()}
        self._connector.start(props)
        task_configs = self._connector.task_configs(self.config.tasks_max)[: self.config.tasks_max]
        if not task_configs:
            raise ConnectException(f"Connector {self.name} produced no task configurations")
        task_class = self._connector.task_class()
        task_configs = [self._with_topics(dict(c)) for c in task_configs]
        self.task_configs = [dict(c) for c in task_configs]
        self.execution_mode = self.config.execution_mode(self.worker)
        self._include_headers, why = headers_needed(task_class, self.config, self.worker)
        log.info("%s: record headers %s: %s", self.name, "read" if self._include_headers else "not read", why)
        if self.execution_mode == "executor" and not issubclass(task_class, DataFrameSinkTask):
            self._executor = ExecutorTasks(
                self.spark, self.name, task_class, task_configs,
                self.config.resolved, self.worker.resolved, self._client_config(), self._commit,
                self.worker.offset_flush_interval_ms, include_headers=self._include_headers,
            )
        else:
            self.execution_mode = "driver"
            if issubclass(task_class, DataFrameSinkTask):
                # One driver-side instance owns every partition; Spark parallelises its DataFrame work.
                if len(task_configs) > 1:
                    log.info("%s: %s takes whole micro-batches as DataFrames; running 1 task instead of %d",
                             self.name, task_class.__name__, len(task_configs))
                task_configs = task_configs[:1]
                from connect_spark.columnar.plan import compile_plan

                self._frame_plan = compile_plan(self.config, self.worker)
                self._frames = True
            for task_id, task_config in enumerate(task_configs):
                self._tasks.append(self._build_task(task_id, task_class, task_config))
            for task in self._tasks:
                task.worker_task.start()

        self._directory = PartitionDirectory(self._client_kwargs(), self.config.topics or None,
                                             self.config.topics_regex)
        partitions = self._directory.partitions()
        committed = self.offset_store.read(self.name)
        self.committed = dict(committed)
        positions = self._directory.positions(partitions, committed, self.config.auto_offset_reset)
        log.info("%s: starting from %s (%s mode)", self.name, _fmt(positions) or "(no partitions yet)",
                 self.execution_mode)
        self._positions = positions
        if self._executor is not None:
            self._executor.open(positions)
        else:
            assignment = range_assignment(partitions, len(self._tasks))
            for task_id, owned in assignment.items():
                self._open(self._tasks[task_id], {tp: positions[tp] for tp in owned})
            for task in self._tasks:
                self._positions.update(task.worker_task.take_rewinds())
        self._start_query(self._positions)
        self.state = ConnectorState.RUNNING

    def _with_topics(self, task_config: dict[str, str]) -> dict[str, str]:
        if self.config.topics:
            task_config.setdefault("topics", ",".join(self.config.topics))
        else:
            task_config.setdefault("topics.regex", str(self.config.topics_regex))
        return task_config

    def _build_task(self, task_id: int, task_class: type, task_config: dict[str, str]) -> _Task:
        task_plugins = build_task_plugins(self.config, self.worker, task_id)
        task = _Task(task_plugins)
        reporter = None
        if self.config.dlq_topic or self.config.errors_log_enable:
            reporter = WorkerErrantRecordReporter(task_plugins.error_handler, task.raw_of)
        context = WorkerSinkTaskContext(task_config, reporter)
        task.worker_task = WorkerSinkTask(
            self.name, task_id, task_class(), task_config,
            commit=self._commit,
            offset_flush_interval_ms=self.worker.offset_flush_interval_ms,
            context=context,
            before_commit=task_plugins.error_handler.await_reports,
            clock=self._clock,
        )
        return task

    def _open(self, task: _Task, positions: dict[TopicPartition, int]) -> None:
        task.worker_task.open(positions)
        for tp in positions:
            self._task_of[tp] = task

    def _commit(self, offsets) -> None:
        self.offset_store.write(self.name, offsets, self.config.consumer_group_id)
        self.committed.update(offsets)

    def _client_config(self) -> dict[str, Any]:
        """Kafka client settings for Spark's source, with Kafka's names."""
        client_config = {**self.worker.kafka_client_config(), **self.worker.consumer_config(),
                         **self.config.consumer_overrides}
        client_config["bootstrap.servers"] = self.worker.bootstrap_servers
        return client_config

    def _client_kwargs(self) -> dict[str, Any]:
        from kafka import KafkaConsumer

        from connect_spark.storage.kafka_util import kafka_client_kwargs

        settings = {**self.worker.kafka_client_config(), **self.worker.consumer_config(),
                    **self.config.consumer_overrides}
        kwargs = kafka_client_kwargs(settings, KafkaConsumer)
        kwargs.setdefault("bootstrap_servers", self.worker.bootstrap_servers)
        return kwargs

    # -- the query --------------------------------------------------------------------------

    def _checkpoint_root(self) -> Path:
        return Path(self.worker.checkpoint_location) / self.name

    def _start_query(self, positions: dict[TopicPartition, int]) -> None:
        root = self._checkpoint_root()
        self._generation += 1
        checkpoint = root / f"gen-{int(time.time() * 1000)}-{self._generation}"
        if root.exists():
            for old in root.iterdir():
                shutil.rmtree(old, ignore_errors=True)
        default_max = (EXECUTOR_MODE_MAX_OFFSETS_PER_TRIGGER if self._executor is not None
                       else DRIVER_MODE_MAX_OFFSETS_PER_TRIGGER)
        max_offsets = self.worker.max_offsets_per_trigger or default_max
        options = kafka_source_options(self._client_config(), self.config.topics or None, self.config.topics_regex,
                                       positions, max_offsets, include_headers=self._include_headers)
        stream = raw_columns(read_kafka_stream(self.spark, options))
        writer = (
            stream.writeStream.queryName(f"connect-spark-{self.name}")
            .foreachBatch(self._on_batch)
            .option("checkpointLocation", str(checkpoint))
        )
        if self.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{int(self.worker.trigger)} milliseconds")
        self._query_checkpoint, self._query_started_from = checkpoint, dict(positions)
        self._halt.clear()
        self._watch_progress()
        self._query = writer.start()
        log.info("%s: query generation %d started (checkpoint %s)", self.name, self._generation, checkpoint)

    def _on_batch(self, batch_df: "DataFrame", batch_id: int) -> None:
        """Spark's ``foreachBatch`` callback: one poll of Connect's loop for every task."""
        while not self._lock.acquire(timeout=0.1):
            if self._halt.is_set():
                return
        try:
            if self._halt.is_set():
                return
            self._process_batch(batch_df, batch_id)
        except BaseException as e:  # recorded and handled between batches; never raised into Spark
            self._failure = e
            self._halt.set()
        finally:
            self._last_activity = self._clock()
            self._lock.release()

    def _process_batch(self, batch_df: "DataFrame", batch_id: int) -> None:
        if self._executor is not None:
            read_before, put_before = self._executor.records_read, self._executor.records_put
            self._executor.process(batch_df, batch_id)
            self.batches += 1
            self.records_read = self._executor.records_read
            self._executor_metrics.record_read(self._executor.records_read - read_before)
            self._executor_metrics.record_sent(self._executor.records_put - put_before)
            return
        if self._frames:
            self._process_frame_batch(batch_df, batch_id)
            return
        table = batch_df.toArrow()
        self.batches += 1
        self.records_read += table.num_rows
        by_task: dict[_Task, list] = defaultdict(list)
        new_partitions: dict[TopicPartition, int] = {}
        with cycle_collection_paused():
            raws = list(raw_records(table))
        for raw in raws:
            tp = TopicPartition(raw.topic, raw.partition)
            if tp in self._held:
                continue
            task = self._task_of.get(tp)
            if task is None:
                new_partitions.setdefault(tp, raw.offset)
                by_task[None].append(raw)  # type: ignore[index]
                continue
            if tp in task.worker_task.context.paused:
                self._held.setdefault(tp, self._positions.get(tp, raw.offset))
                continue
            by_task[task].append(raw)
        if new_partitions:
            self._assign_new(new_partitions)
            for raw in by_task.pop(None, []):  # type: ignore[call-overload]
                by_task[self._task_of[TopicPartition(raw.topic, raw.partition)]].append(raw)

        for task in self._tasks:
            raws = by_task.get(task, [])
            task.worker_task.metrics.record_read(len(raws))
            with cycle_collection_paused():
                converted = task.plugins.converter.convert(iter(raws))
            task.raw_index = converted.raw_by_coordinates
            self._deliver(task, converted.records, converted.consumed)
            self._positions.update(converted.consumed)
            task.worker_task.maybe_commit()
        self._collect_rewinds()

    def _process_frame_batch(self, batch_df: "DataFrame", batch_id: int) -> None:
        """A micro-batch for a DataFrameSinkTask: its offset ranges from the query's offset log, then one
        ``put_dataframe_batch`` with the converted batch (see :mod:`~connect_spark.runtime.dataframe_mode`)."""
        task = self._tasks[0]
        if self._frame_batches is None:
            self._frame_batches = FrameBatches(self.spark, self._frame_plan, task.plugins.converter)
        ranges = None
        if self._query_checkpoint is not None:
            ranges = batch_ranges(self._query_checkpoint, batch_id, self._query_started_from)
        if ranges is None:  # not in the log (e.g. a partition that appeared mid-query): one aggregation
            from connect_spark.columnar.plan import batch_offset_ranges

            ranges = batch_offset_ranges(batch_df)
        first = {tp: start for tp, (start, _) in ranges.items()}
        consumed = {tp: end for tp, (_, end) in ranges.items()}
        self.batches += 1
        read = sum(end - start for start, end in ranges.values())
        self.records_read += read
        task.worker_task.metrics.record_read(read)
        new = {tp: off for tp, off in first.items() if tp not in self._task_of}
        if new:
            self._assign_new(new)
        sink = task.worker_task.task
        frames = self._frame_batches

        def put() -> None:
            frames.deliver(batch_df, ranges, lambda frame: sink.put_dataframe_batch(frame, batch_id, ranges),
                           sink.writes_atomically())

        delivered = task.worker_task.deliver_call(put, consumed)
        while not delivered:
            if not self._back_off(task.worker_task):
                return
            delivered = task.worker_task.deliver_call(put, {})
        task.worker_task.metrics.record_sent(read)
        self._positions.update(consumed)
        task.worker_task.maybe_commit()
        self._collect_rewinds()

    def _deliver(self, task: _Task, records, consumed) -> None:
        worker_task = task.worker_task
        delivered = worker_task.deliver(records, consumed)
        while not delivered:
            if not self._back_off(worker_task):
                return
            worker_task.maybe_commit()
            delivered = worker_task.redeliver()

    def _back_off(self, worker_task: WorkerSinkTask) -> bool:
        """Wait the task's retry back-off after a ``RetriableException``; False when a stop interrupted it."""
        deadline = self._clock() + worker_task.retry_backoff_ms() / 1000.0
        while self._clock() < deadline:
            if self._halt.is_set():
                return False
            time.sleep(min(0.05, max(0.0, deadline - self._clock())))
        return True

    def _assign_new(self, first_offsets: dict[TopicPartition, int]) -> None:
        current = {i: set(t.worker_task.assignment) for i, t in enumerate(self._tasks)}
        additions = extend_assignment(current, first_offsets)
        for task_id, added in additions.items():
            log.info("%s: new partitions %s for task %d", self.name, sorted(map(str, added)), task_id)
            self._open(self._tasks[task_id], {tp: first_offsets[tp] for tp in added})

    def _collect_rewinds(self) -> None:
        rewinds: dict[TopicPartition, int] = {}
        for task in self._tasks:
            rewinds.update(task.worker_task.take_rewinds())
            resumed = [tp for tp in self._held if tp in task.worker_task.assignment
                       and tp not in task.worker_task.context.paused]
            for tp in resumed:
                rewinds.setdefault(tp, self._held.pop(tp))
        if rewinds:
            log.info("%s: re-reading %s in a new query generation", self.name, _fmt(rewinds))
            self._restart_from = {**self._positions, **rewinds}
            self._halt.set()

    # -- metrics ------------------------------------------------------------------------------

    def _watch_progress(self) -> None:
        """Have the session's progress listener call :meth:`_on_progress` after each batch of our query."""
        try:
            from connect_spark.metrics.listener import listener_for

            listener_for(self.spark).register(f"connect-spark-{self.name}", self._on_progress)
        except Exception as e:  # e.g. a session without listener support: metrics lose the lag, nothing else
            log.warning("%s: no streaming progress listener (%r); lag metrics come from lastProgress", self.name, e)

    def _on_progress(self, progress: dict[str, Any]) -> None:
        """Called by Spark's listener thread after each micro-batch: keep the progress, log the progress line."""
        self.last_progress = progress
        log.info("%s", progress_line(self.name, progress, dict(self.committed)))

    def metrics(self) -> dict[str, Any]:
        """The connector's metrics (Kafka Connect's sink-task and task-error names per task, lag per
        partition); called from REST threads at any time."""
        progress = self.last_progress
        if progress is None and self._query is not None:
            try:
                progress = self._query.lastProgress
            except Exception:
                progress = None
        tasks: dict[int | str, dict[str, Any]] = {}
        if self._executor is not None:
            values = self._executor_metrics.as_dict()
            values["partition-count"] = len(self._positions)
            tasks["all"] = values
        for task in self._tasks:
            values = task.worker_task.metrics.as_dict()
            values["partition-count"] = len(task.worker_task.assignment)
            values["offset-commit-seq-no"] = task.worker_task.commit_seqno
            values.update(task.plugins.error_handler.metrics.as_dict())
            tasks[task.worker_task.task_id] = values
        return connector_snapshot(self.name, self.state, self.execution_mode, self.batches, self.records_read,
                                  tasks, dict(self.committed), progress)

    # -- supervision (main thread) ----------------------------------------------------------

    @property
    def query(self) -> "StreamingQuery | None":
        return self._query

    def fail(self, error: BaseException) -> None:
        self._failure = error
        self._halt.set()

    def pause(self) -> None:
        """Stop delivering records (target state PAUSED): the query stops between batches, the tasks stay
        started with their partitions open, and nothing is committed beyond what ``pre_commit`` returned."""
        if self.state != ConnectorState.RUNNING:
            return
        self.state = ConnectorState.PAUSED  # first: the supervisor's tick must not take the stop for a failure
        self._stop_query()
        self._query = None
        log.info("%s: paused", self.name)

    def resume(self) -> None:
        """Deliver records again after :meth:`pause`: a new query generation from where delivery stopped
        (driver mode: the tasks' delivered positions; executor mode: the committed offsets)."""
        if self.state != ConnectorState.PAUSED:
            return
        if self._executor is not None:
            self._executor.position = dict(self._executor.committed)
            self._positions = dict(self._executor.committed)
        self._start_query(self._positions)
        self.state = ConnectorState.RUNNING
        log.info("%s: resumed", self.name)

    def tick(self) -> bool:
        """Called by the supervisor every few hundred ms. Returns False once the connector has ended.

        Restarts the query after a rewind, notices a drained AvailableNow run or a failure, and on
        idle intervals gives each task an empty ``put`` and a commit tick, as Connect's poll loop does.
        """
        if self._failure is not None:
            raise self._failure_error()
        if self.state == ConnectorState.PAUSED:
            return True
        query = self._query
        if self._restart_from is not None:
            self._stop_query()
            positions, self._restart_from = self._restart_from, None
            self._positions = dict(positions)
            self._start_query(self._positions)
            return True
        if query is not None and not query.isActive:
            error = query.exception()
            if error is not None:
                raise ConnectException(f"The streaming query of connector {self.name} failed: {error}")
            if self.available_now:
                if self._executor is not None:
                    self._drain_redeliveries()
                log.info("%s: drained what was available", self.name)
                return False
            raise ConnectException(f"The streaming query of connector {self.name} stopped unexpectedly")
        idle_for = self._clock() - self._last_activity
        if idle_for >= max(1.0, (self.worker.trigger if isinstance(self.worker.trigger, int) else 0) / 1000.0):
            if self._lock.acquire(timeout=0.05):
                try:
                    if self._failure is not None:
                        raise self._failure_error()
                    if self._executor is not None and self._executor.pending_ranges():
                        self._executor.process(None, -1)
                    for task in self._tasks:
                        if task.worker_task.assignment and not task.worker_task.paused_for_redelivery:
                            if not self._frames:  # Connect's empty put; bulk tasks get only real batches
                                task.worker_task.deliver([], {})
                            task.worker_task.maybe_commit()
                    self._collect_rewinds()
                except BaseException as e:
                    self._failure = e
                    self._halt.set()
                finally:
                    self._last_activity = self._clock()
                    self._lock.release()
            if self._failure is not None:
                raise self._failure_error()
        return True

    def _drain_redeliveries(self) -> None:
        """After an AvailableNow run: re-deliver ``[committed, position)`` until the tasks commit it all,
        or a round commits nothing more (what stays uncommitted is delivered again on the next run)."""
        executor = self._executor
        assert executor is not None
        while executor.pending_ranges():
            before = dict(executor.committed)
            with self._lock:
                executor.process(None, -1)
            if executor.committed == before:
                log.info("%s: tasks did not commit %s; it is delivered again on the next run", self.name,
                         _fmt({tp: a for tp, (a, _) in executor.pending_ranges().items()}))
                return

    def _failure_error(self) -> BaseException:
        failure = self._failure
        if isinstance(failure, ConnectException):
            return failure
        return TaskFailedError(f"Connector {self.name} failed: {failure!r}", -1, failure)  # type: ignore[arg-type]

    def _stop_query(self) -> None:
        """Stop the query between batches: halt new work, wait for the batch in flight, then stop."""
        self._halt.set()
        with self._lock:
            pass
        if self._query is not None:
            try:
                self._query.stop()
            except Exception as e:
                log.warning("%s: stopping the query raised %r", self.name, e)

    def stop(self, failed: bool = False) -> None:
        """Stop the query, then for each task ``pre_commit`` → ``close`` → commit → ``stop``; then the connector.

        After a failure only the offsets of batches ``put`` accepted are committed (the failed batch
        never became current).
        """
        for task in self._tasks:  # a record in a retry back-off must not hold the lock forever
            task.plugins.stop()
        self._stop_query()
        with self._lock:
            for task in self._tasks:
                try:
                    if task.worker_task.started:
                        task.worker_task.close_all()
                except Exception as e:
                    log.error("%s: final commit of task %d failed: %r", self.name, task.worker_task.task_id, e)
                if task.worker_task.started:
                    task.worker_task.stop()
                task.plugins.close()
        if self._connector is not None:
            try:
                self._connector.stop()
            except Exception as e:
                log.warning("%s: connector stop raised %r", self.name, e)
        if self._directory is not None:
            self._directory.close()
        try:
            from connect_spark.metrics.listener import listener_for

            listener_for(self.spark).unregister(f"connect-spark-{self.name}")
        except Exception:
            pass
        self.state = ConnectorState.FAILED if failed else ConnectorState.STOPPED


def _fmt(offsets: dict[TopicPartition, int]) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]@{off}" for tp, off in sorted(offsets.items()))
