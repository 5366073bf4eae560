"""Stall detection: a connector that is RUNNING but makes no progress is reported, and failed if configured.

Two signs, under ``errors.stall.timeout.ms`` (see :mod:`connect_spark.config.self_healing`):

* its committed offsets have not moved for that long while records wait (lag above 0);
* one micro-batch (a ``put`` that hangs, a commit that never returns) has been running that long.

Who calls what: :class:`~connect_spark.runtime.worker.connector_runner.ConnectorRunner` builds one
:class:`StallDetector` per start, and its supervisor ``tick`` calls :meth:`StallDetector.check` with what it
knows; a report is logged once per stall, kept for the metrics (``stall`` in the connector's metrics),
and with ``errors.stall.action=fail`` turned into a :class:`StallError` that fails the connector (so the
restart policy applies; a ``put`` that never returns still holds its thread until it does).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.config.self_healing import self_healing_value
from connect_spark.metrics.lag import latest_offsets, partition_lag

if TYPE_CHECKING:
    from connect_spark.api.records import TopicPartition
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["StallDetector", "StallError"]

log = logging.getLogger(__name__)


class StallError(ConnectException):
    """A connector stalled under ``errors.stall.action=fail`` (restartable under the restart policy)."""


class StallDetector:
    """Watches one connector's progress.

    Args:
        name: the connector (for messages).
        timeout_ms: ``errors.stall.timeout.ms`` (0: never reports).
        action: ``log`` or ``fail``.
        clock: monotonic seconds.
    """

    def __init__(self, name: str, timeout_ms: int, action: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.timeout_s = timeout_ms / 1000.0
        self.fail = action.lower() == "fail"
        self._clock = clock
        self._committed: dict = {}
        self._moved_at = clock()
        self.stall: str | None = None  # the current stall's description (None: making progress)
        self.stalls = 0  # how many stalls were reported since the start

    def snapshot(self) -> dict:
        """The ``stall`` entry of the connector's metrics."""
        return {"stalled": self.stall is not None, "reason": self.stall, "stalls-total": self.stalls}

    @classmethod
    def of(cls, worker: "WorkerConfig", connector: "ConnectorConfig", clock: Callable[[], float] = time.monotonic
           ) -> "StallDetector":
        return cls(connector.name, int(self_healing_value("errors.stall.timeout.ms", worker, connector)),
                   str(self_healing_value("errors.stall.action", worker, connector)), clock)

    def check(self, committed: Mapping["TopicPartition", int], progress: Mapping[str, Any] | None,
              batch_started: float | None) -> None:
        """Called by the runner's supervisor tick with its committed offsets, Spark's last progress (for the
        lag) and the start of the batch in flight. Raises :class:`StallError` on a stall under ``action=fail``."""
        if self.timeout_s <= 0:
            return
        lag = max(partition_lag(latest_offsets(progress), dict(committed)).values(), default=0)
        now = self._clock()
        if dict(committed) != self._committed:
            self._committed = dict(committed)
            self._moved_at = now
        reason = None
        if batch_started is not None and now - batch_started >= self.timeout_s:
            reason = f"a micro-batch has been running for {now - batch_started:.0f} s"
        elif lag and now - self._moved_at >= self.timeout_s:
            reason = f"its committed offsets have not moved for {now - self._moved_at:.0f} s with a lag of {lag}"
        if reason is None:
            self.stall = None
            return
        if self.stall is None:
            self.stalls += 1
            log.warning("Connector %s stalled: %s (errors.stall.timeout.ms=%d)", self.name, reason,
                        int(self.timeout_s * 1000))
        self.stall = reason
        if self.fail:
            raise StallError(f"Connector {self.name} stalled: {reason}")
