"""The runtime's side of ``SinkTaskContext``: what a running task may ask of it.

Requests are recorded here and acted on by :class:`~connect_spark.runtime.tasks.worker_task.WorkerSinkTask`
at the points Kafka Connect acts on them: seeks right after ``open`` or before the next batch, the
timeout before the next retry, a commit at the next tick.
"""

from __future__ import annotations

import logging
from typing import Mapping

from connect_spark.api.errors import IllegalWorkerStateException
from connect_spark.api.records import TopicPartition
from connect_spark.api.task import ErrantRecordReporter, SinkTaskContext

__all__ = ["WorkerSinkTaskContext"]

log = logging.getLogger(__name__)


class WorkerSinkTaskContext(SinkTaskContext):
    """One per task instance; created by the runtime before ``initialize``."""

    def __init__(self, task_config: Mapping[str, str], errant_reporter: ErrantRecordReporter | None = None) -> None:
        self._config = dict(task_config)
        self._errant_reporter = errant_reporter
        self._assignment: set[TopicPartition] = set()
        self._assigned_once = False
        self.pending_offsets: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.pending_timeout_ms: int = -1
        self.commit_requested = False

    # -- called by the task -----------------------------------------------------------------

    def configs(self) -> dict[str, str]:
        return dict(self._config)

    def offset(self, offsets, offset=None) -> None:  # type: ignore[override]
        if isinstance(offsets, TopicPartition):
            if offset is None:
                log.warning("Cannot rewind %s to null offset", offsets)
                return
            offsets = {offsets: offset}
        for tp, value in offsets.items():
            if value is None:
                log.warning("Cannot rewind %s to null offset", tp)
                continue
            self.pending_offsets[TopicPartition(*tp)] = int(value)

    def timeout(self, timeout_ms: int) -> None:
        self.pending_timeout_ms = int(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        if not self._assigned_once:
            raise IllegalWorkerStateException("SinkTaskContext may not be used to look up partition assignment "
                                              "until the task is initialized")
        return set(self._assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self._require_assigned(partitions, "pause")
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._require_assigned(partitions, "resume")
        self.paused.difference_update(partitions)

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._errant_reporter

    # -- called by the runtime --------------------------------------------------------------

    def set_assignment(self, partitions: set[TopicPartition]) -> None:
        self._assignment = set(partitions)
        self._assigned_once = True
        self.paused &= self._assignment

    def take_pending_offsets(self) -> dict[TopicPartition, int]:
        """The seeks asked for since the last call, checked against the assignment, then cleared."""
        pending, self.pending_offsets = self.pending_offsets, {}
        unassigned = [tp for tp in pending if tp not in self._assignment]
        if unassigned:
            raise IllegalWorkerStateException(
                f"No current assignment for partition(s) {', '.join(map(str, sorted(unassigned)))}: "
                "context.offset(...) may only rewind partitions assigned to the task (call it from open())."
            )
        return pending

    def take_timeout_ms(self) -> int:
        timeout, self.pending_timeout_ms = self.pending_timeout_ms, -1
        return timeout

    def _require_assigned(self, partitions, action: str) -> None:
        unassigned = [tp for tp in partitions if tp not in self._assignment]
        if unassigned:
            raise IllegalWorkerStateException(
                f"SinkTasks may not {action} partitions that are not currently assigned to them: "
                f"{', '.join(map(str, unassigned))}"
            )
