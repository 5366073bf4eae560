"""The retry schedule of ``errors.retry.timeout`` and ``errors.retry.delay.max.ms``.

Pure functions of the connector's :class:`~connect_spark.runtime.errors.ErrorHandlingConfig`, an
injected clock and random source, so the schedule is tested without sleeping.
:meth:`ErrorHandler.execute <connect_spark.runtime.errors.ErrorHandler.execute>` asks :func:`can_retry`
after each ``RetriableException`` and waits :func:`backoff_delay_ms` before the next attempt.
"""

from __future__ import annotations

import random
from typing import Callable

from connect_spark.runtime.errors.config import ErrorHandlingConfig

__all__ = ["RETRIES_DELAY_MIN_MS", "backoff_delay_ms", "can_retry"]

#: The first back-off, in milliseconds; it doubles with every further attempt.
RETRIES_DELAY_MIN_MS = 300

# 300 << 62 is far beyond any errors.retry.delay.max.ms (a Java long); keeps the shift cheap.
_MAX_SHIFT = 62


def can_retry(config: ErrorHandlingConfig, start: float, clock: Callable[[], float]) -> bool:
    """Whether an operation that started at ``start`` (``clock`` seconds) may run again.

    ``errors.retry.timeout=-1`` always may; otherwise only while the timeout has not elapsed.
    """
    timeout_ms = config.retry_timeout_ms
    if timeout_ms < 0:
        return True
    return (clock() - start) * 1000.0 < timeout_ms


def backoff_delay_ms(
    config: ErrorHandlingConfig, attempt: int, start: float, clock: Callable[[], float], rng: random.Random
) -> float:
    """The back-off after failed ``attempt`` (1-based) of an operation that started at ``start``.

    ``300 << (attempt - 1)`` ms; once that exceeds ``errors.retry.delay.max.ms``, a random value in
    ``[0, max)``; never past the ``errors.retry.timeout`` deadline.
    """
    delay_max = config.retry_delay_max_ms
    delay: float = RETRIES_DELAY_MIN_MS << min(attempt - 1, _MAX_SHIFT)
    if delay > delay_max:
        delay = rng.randrange(delay_max) if delay_max > 0 else 0
    timeout_ms = config.retry_timeout_ms
    if timeout_ms >= 0:
        remaining = (start + timeout_ms / 1000.0 - clock()) * 1000.0
        if delay > remaining:
            delay = max(remaining, 0.0)
    return delay
