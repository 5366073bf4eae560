"""The standalone worker: one streaming query per connector in this driver, like ``connect-standalone``.

Used by ``connect-spark standalone``, the ``jobs/`` spark-submit entry point and the notebook entry
point. It owns the supervision loop: it ticks each connector runner, stops everything on request
(SIGINT/SIGTERM) between batches, and turns the outcome into an exit code.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Sequence

from connect_spark.api.errors import ConnectException
from connect_spark.runtime.worker.connector_runner import ConnectorRunner
from connect_spark.runtime.worker.jvm_signals import JvmStopSignals
from connect_spark.runtime.worker.restarts import RestartPolicy, RestartTracker
from connect_spark.runtime.tasks.worker_task import TaskFailedError
from connect_spark.storage.owner import build_offset_store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["StandaloneWorker", "EXIT_OK", "EXIT_FAILED"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
_TICK_SECONDS = 0.2


class StandaloneWorker:
    """Runs the given connectors until they drain (AvailableNow), fail, or a stop is requested.

    Args:
        worker: the validated worker configuration.
        connectors: validated connector configurations, one query each.
        spark: an existing session (notebooks); built from the worker's ``spark.*`` keys otherwise.
        available_now: drain and stop instead of the worker's trigger.
    """

    def __init__(
        self,
        worker: "WorkerConfig",
        connectors: Sequence["ConnectorConfig"],
        spark: "SparkSession | None" = None,
        available_now: bool = False,
    ) -> None:
        self.worker = worker
        self.connectors = list(connectors)
        self._spark = spark
        self.available_now = available_now
        self._stop_requested = threading.Event()
        self.runners: list[ConnectorRunner] = []
        self.failures: list[tuple[str, BaseException]] = []
        self._offset_store: OffsetStore | None = None
        self.started = threading.Event()
        self.restarts: dict[str, RestartTracker] = {}  # the restart policy's state per connector
        self._waiting: list[ConnectorConfig] = []  # failed connectors with an automatic restart planned
        #: Set by :func:`~connect_spark.runtime.worker.launcher.install_signal_handlers` when this process
        #: owns its signals: SIGTERM/SIGINT to Spark's driver JVM then stop gracefully too, while the
        #: worker runs in a session it built itself (see :mod:`~connect_spark.runtime.worker.jvm_signals`).
        self.stop_on_jvm_signals = False

    def request_stop(self) -> None:
        """Ask for a graceful stop: finish the batch in flight, commit, close, stop. Safe from signal handlers."""
        self._stop_requested.set()

    def run(self) -> int:
        """Start every connector and supervise them; returns the process exit code."""
        from connect_spark.spark_session import artifact_sets_for, get_or_create_session
        from connect_spark.streaming.realtime_query import realtime_session_conf

        # The offset store first: a cluster that refuses the credentials fails before Spark starts.
        self._offset_store = build_offset_store(self.worker)
        self._offset_store.start()
        active: list[ConnectorRunner] = []
        jvm_signals: JvmStopSignals | None = None
        try:
            spark = get_or_create_session(
                self._spark, app_name="connect-spark", conf=realtime_session_conf(self.worker, self.connectors),
                optional_sets=artifact_sets_for(c.connector_class for c in self.connectors),
                keep_interrupt_handler=True)  # Ctrl-C stays the caller's (the CLI's: a graceful stop)
            if self.stop_on_jvm_signals and self._spark is None:  # a session passed in keeps its JVM's ways
                jvm_signals = JvmStopSignals.install(spark, self.request_stop)
            for config in self.connectors:
                runner = ConnectorRunner(spark, self.worker, config, self._offset_store, self.available_now)
                self.runners.append(runner)
                try:
                    runner.start()
                except Exception as e:
                    self._failed(runner, e)
                    continue
                active.append(runner)
            self.started.set()
            while (active or self._waiting) and not self._stop_requested.is_set():
                for runner in list(active):
                    try:
                        alive = runner.tick()
                    except Exception as e:
                        active.remove(runner)
                        self._failed(runner, e)
                        continue
                    if not alive:
                        runner.stop()
                        active.remove(runner)
                    else:
                        self._tracker(runner.config).on_running()
                active.extend(self._restart_due(spark))
                time.sleep(_TICK_SECONDS)
            if active:
                log.info("Stop requested: finishing the batch in flight, committing and stopping")
            deadline = time.monotonic() + self.worker.task_shutdown_graceful_timeout_ms / 1000.0
            for runner in active:
                runner.halt()
            for runner in active:
                runner.stop(graceful_deadline=deadline)
            for config in self._waiting:  # stopped while FAILED, before its automatic restart came
                self.failures.append((config.name, ConnectException(f"Connector {config.name} was stopped while "
                                                                    "waiting for an automatic restart")))
        finally:
            self.started.set()
            self._offset_store.stop()
            if jvm_signals is not None:
                jvm_signals.close()
        return EXIT_FAILED if self.failures else EXIT_OK

    def _tracker(self, config: "ConnectorConfig") -> RestartTracker:
        if config.name not in self.restarts:
            self.restarts[config.name] = RestartTracker(RestartPolicy.of(self.worker, config))
        return self.restarts[config.name]

    def _failed(self, runner: ConnectorRunner, error: BaseException) -> None:
        """A runner failed (start or tick): stop it, then plan its automatic restart or record the failure."""
        runner.stop(failed=True)
        plan = self._tracker(runner.config).on_failure(error)
        if plan is None:
            self._record_failure(runner, error)
            return
        log.error("Connector %s FAILED: %s; %s", runner.name, error, plan.describe())
        self._waiting.append(runner.config)

    def _restart_due(self, spark: "SparkSession") -> list[ConnectorRunner]:
        """Start the failed connectors whose back-off has passed, from their committed offsets."""
        started = []
        for config in [c for c in self._waiting if self._tracker(c).due()]:
            self._waiting.remove(config)
            tracker = self._tracker(config)
            assert self._offset_store is not None
            runner = ConnectorRunner(spark, self.worker, config, self._offset_store, self.available_now)
            self.runners.append(runner)
            log.info("Connector %s: automatic restart, attempt %d", config.name, tracker.attempts)
            tracker.started()
            try:
                runner.start()
            except Exception as e:
                self._failed(runner, e)
                continue
            started.append(runner)
        return started

    def _record_failure(self, runner: ConnectorRunner, error: BaseException) -> None:
        self.failures.append((runner.name, error))
        trace = getattr(error, "trace", None)
        if isinstance(error, TaskFailedError) or isinstance(error, ConnectException):
            log.error("Connector %s FAILED: %s%s", runner.name, error, f"\n{trace}" if trace else "")
        else:
            log.exception("Connector %s FAILED", runner.name, exc_info=error)
