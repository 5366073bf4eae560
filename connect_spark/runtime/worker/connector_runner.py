"""Runs one sink connector: its lifecycle, with the batches left to the processor of its task shape.

The runner starts the connector plugin, asks it for task configurations, chooses the processor of
the task shape once (:func:`~connect_spark.runtime.processors.remote_batches.processor_for`; on Spark Connect, one
whose batch function runs on the server), looks up the partitions and where each starts, and starts the
streaming query (:class:`~connect_spark.streaming.query.QueryGenerations`, a checkpoint generation per start). Then it
supervises: :meth:`ConnectorRunner.tick` restarts the query when the processor needs records again
from other offsets, notices a drained AvailableNow run or a failure, and gives the processor its idle
ticks; :meth:`~ConnectorRunner.pause`, :meth:`~ConnectorRunner.resume` and :meth:`~ConnectorRunner.stop`
come from the herder, the standalone worker or a notebook. Everything that happens to a micro-batch is
the processor's.

Used by :class:`connect_spark.runtime.worker.standalone.StandaloneWorker` (CLI, ``jobs/``, notebooks) and
:class:`connect_spark.herder.handle.RunnerHandle` (the REST herder).

Threads: Spark calls :meth:`~ConnectorRunner.on_batch` from its streaming thread, the supervisor
:meth:`~ConnectorRunner.tick` from its own; one lock serialises every call into the processor, and the query
is only stopped between batches (a stop inside ``foreachBatch`` can crash Spark's interruption handling).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from connect_spark import plugins
from connect_spark.api.connector import ConnectorContext, SinkConnector
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.kafka.clients import consumer_settings, kafka_client_kwargs
from connect_spark.metrics.freshness import FreshnessTracker
from connect_spark.metrics.snapshot import connector_snapshot, progress_line
from connect_spark.runtime.conversion.header_reads import headers_needed
from connect_spark.runtime.worker.graceful_stop import take_batch_lock
from connect_spark.runtime.worker.partitions import PartitionDirectory
from connect_spark.runtime.processors.base import BatchProcessor, ProcessorSetup
from connect_spark.runtime.processors.remote_batches import processor_for
from connect_spark.runtime.realtime.commits import transactional_ids
from connect_spark.runtime.worker.stalls import StallDetector
from connect_spark.runtime.tasks.worker_task import TaskFailedError
from connect_spark.storage.connector_commits import ConnectorCommits
from connect_spark.streaming.query import QueryGenerations, query_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["ConnectorRunner", "ConnectorState"]

log = logging.getLogger(__name__)


class ConnectorState:
    """Connector states as ``connect-status`` names them."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class RunnerConnectorContext(ConnectorContext):
    """The ``ConnectorContext`` a connector plugin gets from its runner."""

    def __init__(self, runner: "ConnectorRunner") -> None:
        self.runner = runner

    def request_task_reconfiguration(self) -> None:
        log.warning("%s: task reconfiguration requested; it takes effect when the connector restarts",
                    self.runner.name)

    def raise_error(self, error: BaseException) -> None:
        self.runner.fail(error)


class ConnectorRunner:
    """One connector: its connector instance, its processor, its offset commits and its streaming query.

    Args:
        spark: the session queries run in.
        worker: the worker configuration.
        connector: the connector configuration (validated).
        offset_store: where committed offsets are read and written.
        available_now: drain what exists and stop, instead of the worker's trigger.
        clock: monotonic seconds (tests inject one).
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
        self._failure: BaseException | None = None
        self._last_activity = clock()
        self._connector: SinkConnector | None = None
        self._directory: PartitionDirectory | None = None
        self._processor: BatchProcessor | None = None
        self._stream: QueryGenerations | None = None
        self.task_configs: list[dict[str, str]] = []
        self.execution_mode = "driver"
        self.state = ConnectorState.UNASSIGNED
        self.committed: dict[TopicPartition, int] = {}  # what the offset store holds (for lag metrics)
        self._commits = ConnectorCommits(offset_store, self.name, connector.consumer_group_id,
                                         self._offsets_written, self.fail)  # fenced: fails, the query stops
        self.last_progress: dict[str, Any] | None = None  # Spark's progress of the last batch (listener)
        self.stalls = StallDetector.of(worker, connector, clock)  # errors.stall.*: checked by tick
        self._batch_started: float | None = None  # when the micro-batch in flight began (stall detection)
        self.freshness = FreshnessTracker(self._client_kwargs)  # the newest committed record's age, per partition

    # -- start ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the connector, choose and open its processor, and start the first query generation."""
        from connect_spark.spark_session import require_session_support

        connector_cls = plugins.resolve("connector", self.config.connector_class, key="connector.class")
        self._connector = connector_cls()
        require_session_support(self.spark, self._connector.required_spark_support(), self.name)
        self._connector.initialize(RunnerConnectorContext(self))
        props = {k: str(v) for k, v in self.config.resolved.items()}
        self._connector.start(props)
        task_configs = self._connector.task_configs(self.config.tasks_max)[: self.config.tasks_max]
        if not task_configs:
            raise ConnectException(f"Connector {self.name} produced no task configurations")
        task_class = self._connector.task_class()
        self.task_configs = [self._with_topics(dict(c)) for c in task_configs]
        include_headers, why = headers_needed(task_class, self.config, self.worker)
        log.info("%s: record headers %s: %s", self.name, "read" if include_headers else "not read", why)
        client_config = {**consumer_settings(self.worker, self.config),  # with Kafka's names, for Spark's source
                         "bootstrap.servers": self.worker.bootstrap_servers}
        self._processor = processor_for(ProcessorSetup(
            spark=self.spark, connector=self.config, worker=self.worker, task_class=task_class,
            task_configs=[dict(c) for c in self.task_configs], client_config=client_config, wait=self._wait,
            include_headers=include_headers, commit=self._commit, clock=self._clock, observed=self._offsets_written,
            batch_ranges=lambda batch_id: self._stream.batch_ranges(batch_id) if self._stream else None,
        ), read_committed=lambda: self.offset_store.read(self.name))
        self.execution_mode = self._processor.execution_mode

        self._directory = PartitionDirectory(self._client_kwargs(), self.config.topics or None,
                                             self.config.topics_regex)
        partitions = self._directory.partitions()
        realtime = transactional_ids(self.name, partitions) if self.execution_mode == "realtime" else []
        self._commits.claim(realtime)  # fences every earlier writer of the offsets: before reading them
        committed = self.offset_store.read(self.name)
        self.committed = dict(committed)
        positions = self._directory.positions(partitions, committed, self.config.auto_offset_reset)
        log.info("%s: starting from %s (%s mode)", self.name, offsets_text(positions) or "(no partitions yet)",
                 self.execution_mode)
        positions = self._processor.open(positions)
        self._stream = self._processor.query_generations(  # micro-batch or real-time
            self.spark, self.name, self.worker.checkpoint_location, client_config,
            self.config.topics or None, self.config.topics_regex,
            self.worker.max_offsets_per_trigger_for(self._processor.collects_batches), include_headers,
            None if self.available_now else int(self.worker.trigger),
        )
        self._start_query(positions)
        self.state = ConnectorState.RUNNING

    def _with_topics(self, task_config: dict[str, str]) -> dict[str, str]:
        if self.config.topics:
            task_config.setdefault("topics", ",".join(self.config.topics))
        else:
            task_config.setdefault("topics.regex", str(self.config.topics_regex))
        return task_config

    def _commit(self, offsets) -> None:
        """Called by the processor's commits once the data is durable: hand them to the in-order background
        committer (:mod:`connect_spark.storage.connector_commits`). Raises the previous write's failure."""
        self._commits.submit(offsets)

    def _offsets_written(self, offsets) -> None:
        """Called by the committer after a write: the runner's view of the store (lag metrics)."""
        self.committed.update({tp: off for tp, off in offsets.items() if off is not None})
        self.freshness.on_committed(offsets)

    def _wait(self, seconds: float) -> bool:
        """The processor's back-off wait before a retried ``put``: False as soon as a stop interrupts it."""
        return not self._halt.wait(seconds)

    def _client_kwargs(self) -> dict[str, Any]:
        """The same settings as kafka-python consumer arguments (partition lookups, freshness)."""
        from kafka import KafkaConsumer

        kwargs = kafka_client_kwargs(consumer_settings(self.worker, self.config), KafkaConsumer)
        kwargs.setdefault("bootstrap_servers", self.worker.bootstrap_servers)
        return kwargs

    # -- the query --------------------------------------------------------------------------

    def _start_query(self, positions: dict[TopicPartition, int]) -> None:
        assert self._stream is not None
        self._halt.clear()
        self._watch_progress()
        batch_function = getattr(self._processor, "batch_function", None)  # Spark Connect: runs on the server
        self._stream.start(positions, batch_function(positions) if batch_function else self.on_batch)

    def on_batch(self, batch_df: "DataFrame", batch_id: int) -> None:
        """Spark's ``foreachBatch`` callback: hand the micro-batch to the processor, under the lock."""
        while not self._lock.acquire(timeout=0.1):
            if self._halt.is_set():
                return
        self._batch_started = self._clock()
        try:
            if self._halt.is_set():
                return
            assert self._processor is not None
            self._processor.process(batch_df, batch_id)
            if self._processor.restart_from is not None:
                self._halt.set()  # no further batch of this generation: the next one re-reads
        except BaseException as e:  # recorded and handled between batches; never raised into Spark
            self._failure = e
            self._halt.set()
        finally:
            self._last_activity = self._clock()
            self._batch_started = None
            self._lock.release()

    # -- metrics ------------------------------------------------------------------------------

    def _watch_progress(self) -> None:
        """Have the session's progress listener call :meth:`_on_progress` after each batch of our query."""
        try:
            from connect_spark.metrics.listener import listener_for

            listener_for(self.spark).register(query_name(self.name), self._on_progress)
        except Exception as e:  # e.g. a session without listener support: metrics lose the lag, nothing else
            log.warning("%s: no streaming progress listener (%r); lag metrics come from lastProgress", self.name, e)

    def _on_progress(self, progress: dict[str, Any]) -> None:
        """Called by Spark's listener thread after each micro-batch: keep the progress, log the progress line."""
        self.last_progress = progress
        log.info("%s%s", progress_line(self.name, progress, dict(self.committed)), self.freshness.describe())

    def metrics(self) -> dict[str, Any]:
        """The connector's metrics (Kafka Connect's sink-task and task-error names per task, lag per
        partition); called from REST threads at any time."""
        progress = self.last_progress
        if progress is None and self._stream is not None:
            progress = self._stream.last_progress()
        processor = self._processor
        tasks = processor.task_metrics() if processor is not None else {}
        batches = processor.batches if processor is not None else 0
        records_read = processor.records_read if processor is not None else 0
        snapshot = connector_snapshot(self.name, self.state, self.execution_mode, batches, records_read,
                                      tasks, dict(self.committed), progress)
        self.freshness.add_to(snapshot)
        return {**snapshot, "stall": self.stalls.snapshot()}

    # -- supervision --------------------------------------------------------------------------

    @property
    def query(self) -> "StreamingQuery | None":
        """The streaming query of the current generation (None before the start and while paused)."""
        return self._stream.query if self._stream is not None else None

    def fail(self, error: BaseException) -> None:
        """Fail the connector (the connector plugin's ``raise_error``); the next :meth:`tick` raises it."""
        self._failure = error
        self._halt.set()

    def pause(self) -> None:
        """Stop delivering records (target state PAUSED): the query stops between batches, the tasks stay
        started with their partitions open, and nothing is committed beyond what ``pre_commit`` returned."""
        if self.state != ConnectorState.RUNNING:
            return
        self.state = ConnectorState.PAUSED  # first: the supervisor's tick must not take the stop for a failure
        self._stop_query(forget=True)
        log.info("%s: paused", self.name)

    def resume(self) -> None:
        """Deliver records again after :meth:`pause`: a new query generation from where the processor
        says delivery resumes (driver: the tasks' delivered positions; executor: the committed offsets)."""
        if self.state != ConnectorState.PAUSED:
            return
        assert self._processor is not None
        self._start_query(self._processor.resume_positions())
        self.state = ConnectorState.RUNNING
        log.info("%s: resumed", self.name)

    def tick(self) -> bool:
        """Called by the supervisor every few hundred ms. Returns False once the connector has ended.

        Restarts the query when the processor must re-read records, notices a drained AvailableNow run
        or a failure, and on idle intervals gives the processor its idle tick (Connect's empty poll).
        """
        if self._failure is not None:
            raise self._failure_error()
        if self.state == ConnectorState.PAUSED:
            return True
        processor = self._processor
        assert processor is not None
        query = self.query
        if processor.restart_from is not None:
            self._stop_query()
            positions = processor.take_restart()
            self._start_query(dict(positions or {}))
            return True
        if query is not None and not query.isActive:
            error = query.exception()
            if error is not None:
                raise ConnectException(f"The streaming query of connector {self.name} failed: {error}")
            if self.available_now:
                processor.drain(self._lock)
                log.info("%s: drained what was available", self.name)
                return False
            raise ConnectException(f"The streaming query of connector {self.name} stopped unexpectedly")
        self.stalls.check(self.committed, self.last_progress, self._batch_started)
        idle_for = self._clock() - self._last_activity
        if idle_for >= max(1.0, (self.worker.trigger if isinstance(self.worker.trigger, int) else 0) / 1000.0):
            if self._lock.acquire(timeout=0.05):
                try:
                    if self._failure is not None:
                        raise self._failure_error()
                    processor.idle()
                    if processor.restart_from is not None:
                        self._halt.set()
                except BaseException as e:
                    self._failure = e
                    self._halt.set()
                finally:
                    self._last_activity = self._clock()
                    self._lock.release()
            if self._failure is not None:
                raise self._failure_error()
        return True

    def _failure_error(self) -> BaseException:
        failure = self._failure
        if isinstance(failure, ConnectException):
            return failure
        return TaskFailedError(f"Connector {self.name} failed: {failure!r}", -1, failure)  # type: ignore[arg-type]

    def _stop_query(self, forget: bool = False, graceful_deadline: float | None = None) -> bool:
        """Stop the query between batches: halt new work, wait for the batch in flight, then stop. Returns
        whether it stopped between batches: with a ``graceful_deadline``, see :mod:`.graceful_stop`."""
        self._halt.set()
        if not take_batch_lock(self._lock, graceful_deadline, self.spark, self.name,
                               self.worker.task_shutdown_graceful_timeout_ms):
            return False
        self._lock.release()
        if self._stream is not None:
            self._stream.stop(forget=forget)
        return True

    def halt(self) -> None:
        """Start no batch after the one in flight; interrupt retries. Called by :meth:`stop`, and before by the
        standalone worker on every connector, so that their batches in flight end within one timeout."""
        if self._processor is not None:
            self._processor.interrupt()
        self._halt.set()

    def stop(self, failed: bool = False, graceful_deadline: float | None = None) -> None:
        """Stop the query, then the processor (each task's ``pre_commit`` → ``close`` → commit → ``stop``),
        wait for every commit to be written, then stop the connector. After a failure only the offsets of
        batches ``put`` accepted are committed. ``graceful_deadline``: see :mod:`.graceful_stop`."""
        self.halt()
        if self._stop_query(graceful_deadline=graceful_deadline):
            with self._lock:
                if self._processor is not None:
                    self._processor.close()
        try:
            self._commits.close()  # the tasks' final commits too, before the stop returns; then the claim goes
        except Exception as e:
            log.error("%s: final offset commit failed: %r", self.name, e)
        if self._connector is not None:
            try:
                self._connector.stop()
            except Exception as e:
                log.warning("%s: connector stop raised %r", self.name, e)
        if self._directory is not None:
            self._directory.close()
        try:
            from connect_spark.metrics.listener import listener_for

            self.freshness.close()
            listener_for(self.spark).unregister(query_name(self.name))
        except Exception:
            pass
        self.state = ConnectorState.FAILED if failed else ConnectorState.STOPPED
