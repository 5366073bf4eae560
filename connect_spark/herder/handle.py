"""The herder's view of one running connector: :class:`ConnectorHandle`, and its adapter over ConnectorRunner.

The herder drives each connector only through this small protocol, from its supervisor thread (never
from a REST request thread), so the runtime that runs a connector can change without touching it.

:class:`RunnerHandle` adapts today's :class:`~connect_spark.runtime.worker.connector_runner.ConnectorRunner`
(``start``/``tick``/``stop``/``state``). Where the runner has no such feature yet it is conservative:

* ``pause()``/``resume()`` are the runner's: the query stops between batches while the tasks stay
  started with their partitions open, and resumes as a new query generation from where delivery stopped.
* per-task states: the runner fails as a whole, so every task shows the connector-level outcome (all
  RUNNING, or all FAILED with the same trace). A runner callback per task will replace this.
* task configs: the runner's once it started; before that generated here with the connector class
  (``start`` → ``task_configs(tasks.max)`` → ``stop`` on a separate instance), as the runner does.
"""

from __future__ import annotations

import logging
import threading
import traceback
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["ConnectorHandle", "TaskFailure", "RunnerHandle", "generate_task_configs", "format_trace"]

log = logging.getLogger(__name__)


def format_trace(error: BaseException) -> str:
    """The stack trace ``connect-status`` keeps for a FAILED instance (a TaskFailedError's own trace if it has one)."""
    trace = getattr(error, "trace", None)
    if isinstance(trace, str) and trace:
        return f"{type(error).__name__}: {error}\n{trace}"
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


class TaskFailure(Exception):
    """Raised by :meth:`ConnectorHandle.tick` when tasks failed while the connector itself is fine.

    Attributes:
        traces: task id → stack trace of every failed task.
    """

    def __init__(self, traces: dict[int, str]) -> None:
        super().__init__(f"task(s) {', '.join(map(str, sorted(traces)))} failed")
        self.traces = traces


class ConnectorHandle(Protocol):
    """One connector as the herder drives it. Every method is called from the herder's supervisor thread.

    Lifecycle: ``start()`` once (or never, for a connector created PAUSED), then ``tick()`` every few
    hundred milliseconds while running, ``pause()``/``resume()`` on target-state changes, and ``stop()``
    exactly once at the end (STOPPED, deleted, reconfigured, restarted, worker shutdown).
    """

    name: str

    def start(self) -> None:
        """Start the connector and its tasks. An exception means the *connector* FAILED (its trace is kept)."""

    def tick(self) -> bool:
        """Supervise: False once the connector has ended by itself (a drained AvailableNow run).

        Raises:
            TaskFailure: tasks failed (they become FAILED; the connector stays RUNNING, as in Connect).
            Exception: anything else fails the connector.
        """

    def pause(self) -> None:
        """Stop delivering records; committed offsets stay where ``pre_commit`` left them."""

    def resume(self) -> None:
        """Deliver records again, from where the paused connector left off."""

    def stop(self, failed: bool = False) -> None:
        """Stop for good: final ``pre_commit`` → ``close`` → commit → ``stop`` (only what was safe after a failure)."""

    def task_configs(self) -> list[dict[str, str]]:
        """The task configurations the connector generated (empty before ``start``)."""

    def task_ids(self) -> list[int]:
        """The ids of the connector's tasks (from its task configs)."""

    def stall(self) -> str | None:
        """Called after each healthy ``tick``: what the connector's stall detection reports now (``None``:
        making progress, or no detection configured)."""


def generate_task_configs(config: "ConnectorConfig") -> list[dict[str, str]]:
    """The task configs a connector generates: ``start`` → ``task_configs(tasks.max)`` → ``stop``, as the runner does.

    Each gets ``topics`` (or ``topics.regex``) when the connector left it out, as the runner adds it.
    """
    from connect_spark import plugins

    connector_cls = plugins.resolve("connector", config.connector_class, key="connector.class")
    connector = connector_cls()
    connector.start({k: str(v) for k, v in config.resolved.items()})
    try:
        generated = connector.task_configs(config.tasks_max)[: config.tasks_max]
    finally:
        try:
            connector.stop()
        except Exception as e:  # stop failing must not hide the configs
            log.warning("%s: connector stop raised %r while generating task configs", config.name, e)
    result = []
    for task_config in generated:
        task_config = {str(k): str(v) for k, v in dict(task_config).items()}
        if config.topics:
            task_config.setdefault("topics", ",".join(config.topics))
        else:
            task_config.setdefault("topics.regex", str(config.topics_regex))
        result.append(task_config)
    return result


class RunnerHandle:
    """A :class:`ConnectorHandle` over :class:`~connect_spark.runtime.worker.connector_runner.ConnectorRunner`.

    Args:
        spark: returns the session to run queries in (built on first use, from the supervisor thread).
        worker: the worker configuration.
        config: the validated connector configuration.
        offset_store: the worker's offset store.
    """

    def __init__(
        self,
        spark: Callable[[], "SparkSession"],
        worker: "WorkerConfig",
        config: "ConnectorConfig",
        offset_store: "OffsetStore",
    ) -> None:
        self.name = config.name
        self._spark = spark
        self._worker = worker
        self._config = config
        self._offset_store = offset_store
        self._runner: Any = None
        self._task_configs: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        from connect_spark.runtime.worker.connector_runner import ConnectorRunner

        self._task_configs = generate_task_configs(self._config)
        runner = ConnectorRunner(self._spark(), self._worker, self._config, self._offset_store)
        self._runner = runner
        try:
            runner.start()
        except BaseException:
            self._runner = None
            try:
                runner.stop(failed=True)
            except Exception as e:
                log.debug("%s: cleaning up after a failed start raised %r", self.name, e)
            raise

    def tick(self) -> bool:
        runner = self._runner
        if runner is None:
            return True
        try:
            return runner.tick()
        except Exception as e:
            # The runner fails as a whole when a task fails: every task gets the same trace.
            self._runner = None
            try:
                runner.stop(failed=True)
            except Exception as stop_error:
                log.warning("%s: stopping after a task failure raised %r", self.name, stop_error)
            trace = format_trace(e)
            raise TaskFailure({task_id: trace for task_id in self.task_ids()}) from e

    def pause(self) -> None:
        # The runner stops its query between batches and keeps its tasks and their partitions open.
        if self._runner is not None:
            self._runner.pause()

    def resume(self) -> None:
        if self._runner is None:
            self.start()
        else:
            self._runner.resume()

    def stop(self, failed: bool = False) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop(failed=failed)

    def stall(self) -> str | None:
        runner = self._runner
        return runner.stalls.stall if runner is not None else None

    def metrics(self) -> dict[str, Any] | None:
        """The running connector's metrics (``ConnectorRunner.metrics()``), or None when it is not running.
        Called from REST threads."""
        runner = self._runner
        return runner.metrics() if runner is not None else None

    def task_configs(self) -> list[dict[str, str]]:
        runner = self._runner
        if runner is not None and runner.task_configs:
            return [dict(c) for c in runner.task_configs]
        return [dict(c) for c in self._task_configs]

    def task_ids(self) -> list[int]:
        return list(range(len(self._task_configs) or self._config.tasks_max))
