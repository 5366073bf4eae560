"""The ``sink-task-metrics`` of one task: totals, windowed rates and put timings.

The runtime updates them: :class:`~connect_spark.runtime.tasks.worker_task.WorkerSinkTask` around ``put`` and
each commit, the processors (:mod:`connect_spark.runtime.processors.base`) for records read. REST
threads read :meth:`SinkTaskMetrics.as_dict` at any time; a lock keeps every snapshot consistent.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

__all__ = ["SinkTaskMetrics", "WindowedRate", "RATE_WINDOW_SECONDS"]

#: Rates average over this window, like Kafka's default metrics sample window (2 samples × 30 s, roughly).
RATE_WINDOW_SECONDS = 60.0


class WindowedRate:
    """Events per second over the last ``window`` seconds (or since creation, when younger).

    Args:
        clock: monotonic seconds; injected for tests.
        window: the averaging window in seconds.
    """

    def __init__(self, clock: Callable[[], float], window: float = RATE_WINDOW_SECONDS) -> None:
        self._clock = clock
        self._window = window
        self._created = clock()
        self._events: deque[tuple[float, float]] = deque()

    def record(self, amount: float = 1.0) -> None:
        now = self._clock()
        self._events.append((now, amount))
        self._expire(now)

    def rate(self) -> float:
        now = self._clock()
        self._expire(now)
        elapsed = min(self._window, now - self._created)
        if elapsed <= 0:
            return 0.0
        return sum(amount for _, amount in self._events) / elapsed

    def _expire(self, now: float) -> None:
        while self._events and self._events[0][0] < now - self._window:
            self._events.popleft()


class SinkTaskMetrics:
    """Counters of one sink task, named as Kafka Connect's ``sink-task-metrics`` group.

    Args:
        clock: monotonic seconds; injected for tests.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._read = WindowedRate(clock)
        self._sent = WindowedRate(clock)
        self._completed = WindowedRate(clock)
        self._skipped = WindowedRate(clock)
        self.read_total = 0
        self.sent_total = 0
        self.commit_completed_total = 0
        self.commit_skipped_total = 0
        self.commit_seqno = 0
        self.partition_count = 0
        self.active_count = 0
        self.put_batches = 0
        self.put_time_total_ms = 0.0
        self.put_time_max_ms = 0.0

    def record_read(self, count: int) -> None:
        """``count`` records were read from Kafka for this task (before transforms and converters)."""
        with self._lock:
            self.read_total += count
            self.active_count += count
            self._read.record(count)

    def record_sent(self, count: int) -> None:
        """``count`` records were accepted by ``put``."""
        with self._lock:
            self.sent_total += count
            self._sent.record(count)

    def record_put_time(self, millis: float) -> None:
        """One ``put`` call (successful or not) took ``millis``."""
        with self._lock:
            self.put_batches += 1
            self.put_time_total_ms += millis
            self.put_time_max_ms = max(self.put_time_max_ms, millis)

    def record_commit_completed(self, seqno: int) -> None:
        """Commit number ``seqno`` was written to the offset store."""
        with self._lock:
            self.commit_seqno = seqno
            self.commit_completed_total += 1
            self.active_count = 0
            self._completed.record()

    def record_commit_skipped(self, seqno: int) -> None:
        """Commit number ``seqno`` wrote nothing (the task returned no offsets, or nothing changed)."""
        with self._lock:
            self.commit_seqno = seqno
            self.commit_skipped_total += 1
            self._skipped.record()

    def set_partition_count(self, count: int) -> None:
        with self._lock:
            self.partition_count = count

    def as_dict(self) -> dict[str, float]:
        """A consistent snapshot keyed by Kafka's metric names."""
        with self._lock:
            avg = self.put_time_total_ms / self.put_batches if self.put_batches else 0.0
            return {
                "sink-record-read-rate": round(self._read.rate(), 3),
                "sink-record-read-total": self.read_total,
                "sink-record-send-rate": round(self._sent.rate(), 3),
                "sink-record-send-total": self.sent_total,
                "sink-record-active-count": self.active_count,
                "partition-count": self.partition_count,
                "offset-commit-seq-no": self.commit_seqno,
                "offset-commit-completion-rate": round(self._completed.rate(), 3),
                "offset-commit-completion-total": self.commit_completed_total,
                "offset-commit-skip-rate": round(self._skipped.rate(), 3),
                "offset-commit-skip-total": self.commit_skipped_total,
                "put-batch-avg-time-ms": round(avg, 3),
                "put-batch-max-time-ms": round(self.put_time_max_ms, 3),
            }
