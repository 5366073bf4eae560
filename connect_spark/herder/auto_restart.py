"""The herder's side of the restart policy: one :class:`~connect_spark.runtime.worker.restarts.RestartTracker` per
connector it owns, so a FAILED connector is restarted by the worker that runs it.

Called from the herder's supervisor thread only: :meth:`AutoRestarts.failed` when a connector or its tasks
fail (its answer is appended to the status trace), :meth:`AutoRestarts.running` on each healthy tick,
:meth:`AutoRestarts.take_due` once per loop (the names to restart now, through the herder's own restart
path), :meth:`AutoRestarts.forget` when a connector is deleted or reconfigured.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.runtime.worker.restarts import RestartPolicy, RestartTracker

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["AutoRestarts"]

log = logging.getLogger(__name__)


class AutoRestarts:
    """The restart trackers of a herder's connectors.

    Args:
        worker: the worker configuration (the policy's defaults).
        validate: turns stored connector properties into a ``ConnectorConfig`` (its own policy keys).
    """

    def __init__(self, worker: "WorkerConfig", validate: Callable[[Mapping[str, Any]], "ConnectorConfig"]) -> None:
        self._worker = worker
        self._validate = validate
        self._trackers: dict[str, RestartTracker] = {}

    def failed(self, name: str, properties: Mapping[str, Any], error: BaseException) -> str | None:
        """The connector failed: the status-trace line of its planned restart, or None (it stays FAILED)."""
        tracker = self._trackers.get(name)
        if tracker is None:
            try:
                config = self._validate(properties)
            except Exception:  # an invalid stored config is never restarted
                return None
            tracker = self._trackers[name] = RestartTracker(RestartPolicy.of(self._worker, config))
        plan = tracker.on_failure(error)
        if plan is None:
            return None
        log.info("Connector %s: %s", name, plan.describe())
        return plan.describe()

    def running(self, name: str) -> None:
        tracker = self._trackers.get(name)
        if tracker is not None:
            tracker.on_running()

    def take_due(self) -> list[str]:
        """The connectors whose back-off has passed; each is counted as restarted."""
        due = [name for name, tracker in self._trackers.items() if tracker.due()]
        for name in due:
            self._trackers[name].started()
        return due

    def attempts(self, name: str) -> int:
        tracker = self._trackers.get(name)
        return tracker.attempts if tracker is not None else 0

    def forget(self, name: str) -> None:
        self._trackers.pop(name, None)
