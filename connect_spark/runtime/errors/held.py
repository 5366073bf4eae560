"""A reporter that holds its reports until they are sent together: the dead letters of one Spark task.

A one-pass write converts the rows the vectorized plan cannot prove inside its own Spark tasks
(:mod:`connect_spark.runtime.processors.fallback_in_write`). If such a task wrote its dead letters as it met
them and then failed (a later row needs the table to grow, so the write is abandoned), the driver could not
know which letters the queue already holds: a failed task's accumulator updates never reach it, and the
batch's second pass would write those letters again. So the task's dead letter queue reporter is wrapped in a
:class:`HeldReporter`: its letters are kept until the task has converted its last row, then sent and
acknowledged at once (:meth:`HeldReporter.send_held`), before the task ends and so before the sink commits. A
task that fails before that point has written none.
"""

from __future__ import annotations

from concurrent.futures import Future

from connect_spark.runtime.errors.context import ErrorContext
from connect_spark.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from connect_spark.runtime.errors.handler import ErrorHandler
from connect_spark.runtime.errors.metrics import ErrorMetrics
from connect_spark.runtime.errors.reporters import Reporter

__all__ = ["HeldReporter", "hold_dead_letters", "held_reporters"]


class HeldReporter(Reporter):
    """Keeps every report for ``inner`` until :meth:`send_held`; counts into the same metrics as ``inner``.

    Built by the in-write conversion around a task's dead letter queue reporter, in the Python worker that
    converts the task's rows; :meth:`report` is called by the error handler per failed record,
    :meth:`drop_held` when a Spark task starts (letters of an earlier task that did not finish are not its
    own) and :meth:`send_held` when the task's last row is converted.
    """

    def __init__(self, inner: Reporter) -> None:
        self.inner = inner
        self._held: list[ErrorContext] = []

    def attach_metrics(self, metrics: ErrorMetrics) -> None:
        super().attach_metrics(metrics)
        self.inner.attach_metrics(metrics)

    @property
    def held(self) -> int:
        """Reports kept and not yet sent."""
        return len(self._held)

    def report(self, context: ErrorContext) -> None:
        self._held.append(context)
        return None

    def send_held(self, timeout: float | None = None) -> None:
        """Hand every held report to ``inner`` in the order they were made, and wait until each is durable.

        Raises:
            Exception: the first report that could not be made durable (its future's exception), or
                ``TimeoutError`` when ``timeout`` seconds passed first.
        """
        contexts, self._held = self._held, []
        futures: list[Future[None]] = [f for f in (self.inner.report(c) for c in contexts) if f is not None]
        for future in futures:
            future.result(timeout)

    def drop_held(self) -> None:
        """Forget the held reports without sending them."""
        self._held.clear()

    def close(self) -> None:
        """Forget what is held (its task did not finish) and close ``inner``."""
        self._held.clear()
        self.inner.close()

    def __repr__(self) -> str:
        return f"HeldReporter({self.inner!r}, held={len(self._held)})"


def hold_dead_letters(handler: ErrorHandler) -> None:
    """Wrap ``handler``'s dead letter queue reporters in :class:`HeldReporter`, counting into its metrics.

    Called by the in-write conversion when it builds a task's converters and reporters in a Python worker.
    """
    handler.reporters = [HeldReporter(r) if isinstance(r, DeadLetterQueueReporter) else r for r in handler.reporters]
    for reporter in held_reporters(handler):
        reporter.attach_metrics(handler.metrics)


def held_reporters(handler: ErrorHandler) -> list[HeldReporter]:
    """``handler``'s reporters that hold their reports (none unless :func:`hold_dead_letters` wrapped them)."""
    return [r for r in handler.reporters if isinstance(r, HeldReporter)]
