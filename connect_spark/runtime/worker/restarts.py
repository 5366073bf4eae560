"""The restart policy: a FAILED connector comes back by itself after an exponential back-off.

Kafka Connect leaves a failed task FAILED until someone calls ``POST .../restart``. Under
``errors.restart.max.attempts`` (see :mod:`connect_spark.config.self_healing`) the process that runs the
connector restarts it instead, from its committed offsets, after ``min * 2^(attempt-1)`` milliseconds
(capped at the maximum, with jitter). The attempt count starts again after a healthy period. A
:class:`~connect_spark.api.errors.ConfigException` or
:class:`~connect_spark.api.errors.NonRestartableException` (anywhere in the failure's causes or in its
remote trace) is never restarted.

Who calls what: the standalone worker's loop and the herder's supervisor keep one :class:`RestartTracker`
per connector. On a failure they call :meth:`RestartTracker.on_failure`; a plan means "stop it now and
start it again when :meth:`RestartTracker.due`"; its :meth:`RestartPlan.describe` text goes into the
status trace. While the connector runs they call :meth:`RestartTracker.on_running` each tick.
"""

from __future__ import annotations

import datetime
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from connect_spark.api.errors import ConfigException, NonRestartableException
from connect_spark.config.self_healing import self_healing_value

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["RestartPolicy", "RestartPlan", "RestartTracker", "is_restartable"]

_NEVER = (ConfigException, NonRestartableException)


def is_restartable(error: BaseException) -> bool:
    """False when ``error``, one of its causes, or the trace it carries from another process is a
    :class:`ConfigException` or :class:`NonRestartableException`."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _NEVER):
            return False
        trace = getattr(current, "trace", None)
        if isinstance(trace, str) and any(cls.__name__ in trace for cls in _NEVER):
            return False
        current = current.__cause__ or current.__context__
    return True


@dataclass(frozen=True)
class RestartPolicy:
    """The ``errors.restart.*`` values of one connector (its own, else the worker's)."""

    max_attempts: int = 0
    backoff_min_ms: int = 1000
    backoff_max_ms: int = 60000
    jitter: float = 0.2
    reset_after_ms: int = 300000

    @classmethod
    def of(cls, worker: "WorkerConfig", connector: "ConnectorConfig | None" = None) -> "RestartPolicy":
        def value(key: str):
            return self_healing_value(f"errors.restart.{key}", worker, connector)

        return cls(int(value("max.attempts")), int(value("backoff.min.ms")), int(value("backoff.max.ms")),
                   float(value("backoff.jitter")), int(value("reset.after.ms")))

    @property
    def enabled(self) -> bool:
        return self.max_attempts != 0

    def delay_s(self, attempt: int, rng: random.Random) -> float:
        """The wait before ``attempt`` (1-based): exponential from the minimum, capped, with jitter."""
        base_ms = min(float(self.backoff_max_ms), self.backoff_min_ms * 2.0 ** min(attempt - 1, 62))
        spread = base_ms * self.jitter
        return max(0.0, base_ms + rng.uniform(-spread, spread)) / 1000.0


@dataclass(frozen=True)
class RestartPlan:
    """An automatic restart that will happen: which attempt, and when (monotonic and wall-clock seconds)."""

    attempt: int
    max_attempts: int
    due_monotonic: float
    due_wall: float

    def describe(self) -> str:
        """The line the status trace and the log show, e.g. ``automatic restart 2 of 5 at 2026-...Z``."""
        limit = "unlimited" if self.max_attempts < 0 else str(self.max_attempts)
        when = datetime.datetime.fromtimestamp(self.due_wall, datetime.timezone.utc)
        return f"Automatic restart: attempt {self.attempt} of {limit} at {when.isoformat(timespec='milliseconds')}"


class RestartTracker:
    """One connector's attempts: counts failures, plans the next restart, forgets after a healthy period.

    Args:
        policy: the connector's policy.
        clock: monotonic seconds; wall: epoch seconds; rng: the jitter's source (tests inject them).
    """

    def __init__(self, policy: RestartPolicy, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.attempts = 0
        self.plan: RestartPlan | None = None
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self._running_since: float | None = None

    def on_failure(self, error: BaseException) -> RestartPlan | None:
        """The connector failed: the plan of its next restart, or None when it stays FAILED (no policy, a
        non-restartable error, or the last attempt used)."""
        self._running_since = None
        self.plan = None
        if not self.policy.enabled or not is_restartable(error):
            return None
        if 0 <= self.policy.max_attempts <= self.attempts:
            return None
        self.attempts += 1
        delay = self.policy.delay_s(self.attempts, self._rng)
        self.plan = RestartPlan(self.attempts, self.policy.max_attempts, self._clock() + delay, self._wall() + delay)
        return self.plan

    def due(self) -> bool:
        """True once the planned restart's time has come (the caller then restarts and calls :meth:`started`)."""
        return self.plan is not None and self._clock() >= self.plan.due_monotonic

    def started(self) -> None:
        """The planned restart happened."""
        self.plan = None
        self._running_since = self._clock()

    def on_running(self) -> None:
        """Called on every healthy tick: after ``reset.after.ms`` of running the attempt count starts again."""
        if self._running_since is None:
            self._running_since = self._clock()
        elif self.attempts and (self._clock() - self._running_since) * 1000.0 >= self.policy.reset_after_ms:
            self.attempts = 0
