"""The error reports of one task that are not yet known to be durable.

:class:`~connect_spark.runtime.errors.ErrorHandler` owns one :class:`PendingReports`: it sends every
failure to its reporters through :meth:`PendingReports.report` (from :meth:`ErrorHandler.execute` and
:meth:`ErrorHandler.report_put_error`), and :meth:`ErrorHandler.await_reports`, which the task loop calls
before every offset commit, waits here with :meth:`PendingReports.await_all` until every dead letter
queue write is acknowledged.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, wait
from typing import Iterable, Sequence

from connect_spark.api.errors import ConnectException
from connect_spark.runtime.errors.context import ErrorContext
from connect_spark.runtime.errors.reporters import Reporter

__all__ = ["ErrantRecordFuture", "PendingReports"]

log = logging.getLogger(__name__)


class ErrantRecordFuture(Future):
    """The future :meth:`ErrorHandler.report_put_error` returns: done when every reporter is done.

    It cannot be cancelled (``cancel()`` returns ``False``): a report, once made, is always completed,
    as in Kafka Connect.
    """

    def cancel(self) -> bool:  # noqa: D102 - documented on the class
        return False


def _all_of(futures: Sequence["Future[None]"]) -> ErrantRecordFuture:
    """A future completed when all ``futures`` are; failed with the first failure among them."""
    combined = ErrantRecordFuture()
    if not futures:
        combined.set_result(None)
        return combined
    remaining = [len(futures)]
    lock = threading.Lock()

    def done(_: "Future[None]") -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0]:
                return
        for future in futures:
            error = future.exception()
            if error is not None:
                combined.set_exception(error)
                return
        combined.set_result(None)

    for future in futures:
        future.add_done_callback(done)
    return combined


class PendingReports:
    """Sends failures to reporters and remembers each report until it is durable; thread-safe.

    Args:
        label: the task, ``<connector>-<task>``, for log lines and messages.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()

    def report(self, reporters: Iterable[Reporter], context: ErrorContext) -> ErrantRecordFuture:
        """Send ``context`` to every reporter; a reporter that raises does not stop the others.

        Returns:
            A future done when every reporter is done with the record; a reporter's exception fails it
            (and every later :meth:`await_all`).
        """
        futures: list[Future[None]] = []
        for reporter in reporters:
            try:
                future = reporter.report(context)
            except Exception as e:  # a reporter must not stop the others; its failure fails the commit
                log.error("%s: error reporter %r failed on %s: %s", self.label, reporter, context.coordinates(), e)
                future = Future()
                failure = ConnectException(f"Error reporter {reporter!r} failed on {context.coordinates()}: {e}")
                failure.__cause__ = e
                future.set_exception(failure)
            if future is not None:
                futures.append(future)
        with self._lock:
            for future in futures:
                if not (future.done() and future.exception() is None):
                    self._pending.append(future)
        return _all_of(futures)

    def await_all(self, timeout: float | None = None) -> None:
        """Block until every report made so far is durable; see :meth:`ErrorHandler.await_reports`.

        Raises:
            ConnectException: a report failed (the first failure is the ``__cause__``; failed reports
                stay pending, so every later call raises again), or the timeout expired.
        """
        with self._lock:
            pending = list(self._pending)
        if not pending:
            return
        done, not_done = wait(pending, timeout=timeout)
        failures = [f.exception() for f in done if f.exception() is not None]
        with self._lock:
            succeeded = {id(f) for f in done if f.exception() is None}
            self._pending = [f for f in self._pending if id(f) not in succeeded]
        if failures:
            first = failures[0]
            raise ConnectException(
                f"Task {self.label}: {len(failures)} error report(s) failed, so offsets cannot be committed past "
                f"them; first failure: {first}"
            ) from first
        if not_done:
            raise ConnectException(
                f"Task {self.label}: timed out after {timeout} s waiting for {len(not_done)} dead letter queue "
                f"write(s) to be acknowledged"
            )

    def count(self) -> int:
        """Reports not yet known to be durable (failed ones included)."""
        with self._lock:
            return sum(1 for f in self._pending if not (f.done() and f.exception() is None))
