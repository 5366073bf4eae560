"""Error reporters: where the error handler sends each failure (Kafka Connect's ``ErrorReporter``).

A task has a list of reporters: a :class:`LogReporter` when ``errors.log.enable=true`` and a
:class:`~connect_spark.runtime.errors.DeadLetterQueueReporter` when
``errors.deadletterqueue.topic.name`` is set (:func:`~connect_spark.runtime.errors.create_reporters`
builds that list). The :class:`~connect_spark.runtime.errors.ErrorHandler` calls every reporter's
:meth:`Reporter.report` once per failed record, in the task's thread, whatever the tolerance, and
:meth:`Reporter.close` when the task ends.
"""

from __future__ import annotations

import abc
import logging
from concurrent.futures import Future

from connect_spark.runtime.errors.context import ErrorContext
from connect_spark.runtime.errors.metrics import ErrorMetrics

__all__ = ["Reporter", "LogReporter", "task_label"]

log = logging.getLogger(__name__)


def task_label(connector_name: str, task_id: int) -> str:
    """``<connector>-<task>``, how Kafka Connect names a task (``ConnectorTaskId.toString``)."""
    return f"{connector_name}-{task_id}"


class Reporter(abc.ABC):
    """Receives every failure of one task.

    The handler attaches its :class:`ErrorMetrics` with :meth:`attach_metrics` when it is built, so a
    reporter counts into the task's metrics; until then it counts into a private instance.
    """

    _metrics: ErrorMetrics | None = None

    @property
    def metrics(self) -> ErrorMetrics:
        """The metrics this reporter updates."""
        if self._metrics is None:
            self._metrics = ErrorMetrics()
        return self._metrics

    def attach_metrics(self, metrics: ErrorMetrics) -> None:
        """Count into ``metrics`` from now on. Called by the handler's constructor."""
        self._metrics = metrics

    @abc.abstractmethod
    def report(self, context: ErrorContext) -> "Future[None] | None":
        """Report one failure.

        Called by the handler in the task's thread. Must not raise for a problem of its own (a write
        that cannot be done is a failed future instead), and must not block longer than it takes to hand
        the write over.

        Returns:
            ``None`` when the report is complete on return, otherwise a future completed when it is
            durable (and failed when it could not be made durable).
        """

    def close(self) -> None:
        """Release resources after a last attempt to complete pending reports. Called once by the handler."""


class LogReporter(Reporter):
    """Logs each failure at ERROR on this module's logger, with the exception and its traceback.

    The line is Kafka Connect's, e.g. ``Error encountered in task my-sink-0. Executing stage
    'VALUE_CONVERTER' with class 'org.apache.kafka.connect.json.JsonConverter', where consumed record
    is {topic='orders', partition=2, offset=41, timestamp=1700000000000, timestampType=CreateTime}.``
    The ``where consumed record is`` part appears only with ``include_messages``; record keys, values
    and headers are never logged.

    Args:
        connector_name: the connector's name.
        task_id: the task number.
        include_messages: ``errors.log.include.messages``.
    """

    def __init__(self, connector_name: str, task_id: int, include_messages: bool = False) -> None:
        self.connector_name = connector_name
        self.task_id = task_id
        self.include_messages = include_messages

    def message(self, context: ErrorContext) -> str:
        """The line logged for ``context`` (without the traceback)."""
        return (
            f"Error encountered in task {task_label(self.connector_name, self.task_id)}. "
            f"{context.describe(self.include_messages)}"
        )

    def report(self, context: ErrorContext) -> None:
        log.error("%s", self.message(context), exc_info=context.error)
        self.metrics.record_error_logged()
        return None
