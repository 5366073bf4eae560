"""The ``task-error-metrics`` group of one task: counters with Kafka Connect's names.

The error handler and the reporters update one :class:`ErrorMetrics` per task; the runtime reads it
with :meth:`ErrorMetrics.as_dict` (for the REST API, the status topic or logs). Updates may come from
the task's thread and from a Kafka producer's I/O thread (dead letter queue acknowledgements), so every
update takes a lock.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Mapping

__all__ = ["ErrorMetrics", "METRIC_NAMES"]

#: The metric names, in Kafka's order (``kafka.connect:type=task-error-metrics,connector=…,task=…``).
METRIC_NAMES = (
    "total-record-failures",
    "total-record-errors",
    "total-records-skipped",
    "total-retries",
    "total-errors-logged",
    "deadletterqueue-produce-requests",
    "deadletterqueue-produce-failures",
    "last-error-timestamp",
)


#: Each counter's metric name and attribute.
_ATTRIBUTES = {
    "total-record-failures": "record_failures",
    "total-record-errors": "record_errors",
    "total-records-skipped": "records_skipped",
    "total-retries": "retries",
    "total-errors-logged": "errors_logged",
    "deadletterqueue-produce-requests": "dlq_produce_requests",
    "deadletterqueue-produce-failures": "dlq_produce_failures",
}


class ErrorMetrics:
    """Error counters of one task.

    Args:
        wall_clock: seconds since the epoch, for ``last-error-timestamp`` (injected in tests).

    Meaning of each counter, as in Kafka Connect:

    * ``total-record-failures``: every failed attempt of an operation, each retried attempt included,
      and every record reported through the errant record reporter.
    * ``total-record-errors``: records that ended failed (after retries), and reports that exceeded the
      tolerance.
    * ``total-records-skipped``: records dropped because of an error.
    * ``total-retries``: back-offs followed by another attempt.
    * ``total-errors-logged``: lines written by the log reporter.
    * ``deadletterqueue-produce-requests`` / ``deadletterqueue-produce-failures``: dead letter queue
      writes attempted / failed.
    * ``last-error-timestamp``: epoch milliseconds of the last failed record, ``0`` before any.
    """

    def __init__(self, wall_clock: Callable[[], float] = time.time) -> None:
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self.record_failures = 0
        self.record_errors = 0
        self.records_skipped = 0
        self.retries = 0
        self.errors_logged = 0
        self.dlq_produce_requests = 0
        self.dlq_produce_failures = 0
        self.last_error_timestamp = 0

    def record_failure(self) -> None:
        """One attempt of an operation failed (or one record was reported by the task)."""
        with self._lock:
            self.record_failures += 1

    def record_error(self) -> None:
        """One record ended in error."""
        with self._lock:
            self.record_errors += 1

    def record_skipped(self) -> None:
        """One record was dropped because of an error."""
        with self._lock:
            self.records_skipped += 1

    def record_retry(self) -> None:
        """One more attempt follows a back-off."""
        with self._lock:
            self.retries += 1

    def record_error_logged(self) -> None:
        """The log reporter wrote one line."""
        with self._lock:
            self.errors_logged += 1

    def record_dlq_produce_request(self) -> None:
        """One dead letter queue write was attempted."""
        with self._lock:
            self.dlq_produce_requests += 1

    def record_dlq_produce_failure(self) -> None:
        """One dead letter queue write failed (or could not be attempted)."""
        with self._lock:
            self.dlq_produce_failures += 1

    def record_error_timestamp(self) -> None:
        """Set ``last-error-timestamp`` to now."""
        now = int(self._wall_clock() * 1000)
        with self._lock:
            self.last_error_timestamp = now

    def add(self, counts: Mapping[str, int]) -> None:
        """Add counts keyed by Kafka's metric names: what another copy of this task's error handling counted,
        e.g. on executors converting rows inside a write (``last-error-timestamp``: the later one is kept)."""
        attributes = {name: attribute for name, attribute in _ATTRIBUTES.items() if name in counts}
        with self._lock:
            for name, attribute in attributes.items():
                setattr(self, attribute, getattr(self, attribute) + int(counts[name]))
            self.last_error_timestamp = max(self.last_error_timestamp, int(counts.get("last-error-timestamp", 0)))

    def as_dict(self) -> dict[str, int]:
        """A consistent snapshot keyed by Kafka's metric names (see :data:`METRIC_NAMES`)."""
        with self._lock:
            return {
                "total-record-failures": self.record_failures,
                "total-record-errors": self.record_errors,
                "total-records-skipped": self.records_skipped,
                "total-retries": self.retries,
                "total-errors-logged": self.errors_logged,
                "deadletterqueue-produce-requests": self.dlq_produce_requests,
                "deadletterqueue-produce-failures": self.dlq_produce_failures,
                "last-error-timestamp": self.last_error_timestamp,
            }

    def __repr__(self) -> str:
        return f"ErrorMetrics({self.as_dict()})"
