"""How long a sink task keeps asking for re-delivery after failed puts: ``max.retries`` failures, and beyond
while ``errors.retry.timeout`` has not run out since the first of them (-1: forever).

Called by a sink task from its ``put`` when a write failed in a way that may pass (the cluster or database
unreachable): while :meth:`RetryBudget.failed` is True the task raises ``RetriableException``, else it fails.
The clock is injected so the rule is tested without waiting.
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["RetryBudget"]


class RetryBudget:
    """Consecutive failed puts of one task, against ``max.retries`` and ``errors.retry.timeout``."""

    def __init__(self, max_retries: int, timeout_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_retries = max_retries
        self.timeout_ms = timeout_ms
        self.clock = clock
        self.failures = 0
        self._first: float | None = None

    def failed(self) -> bool:
        """Count one more failure; True while another re-delivery is allowed."""
        now = self.clock()
        if self._first is None:
            self._first = now
        self.failures += 1
        within_timeout = self.timeout_ms < 0 or (now - self._first) * 1000 < self.timeout_ms
        return self.failures <= self.max_retries or within_timeout

    def succeeded(self) -> None:
        """A put went through: the next failure starts a new count."""
        self.failures, self._first = 0, None
