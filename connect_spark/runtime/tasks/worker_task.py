"""One sink task instance and Kafka Connect's ``WorkerSinkTask`` bookkeeping around it.

Made by :class:`connect_spark.runtime.tasks.loop.TaskUnit` for every task on either side: on the
driver one lives as long as the task (the driver processors, :mod:`connect_spark.runtime.processors.driver_tasks`,
feed it every batch of its partitions and tick its commits); on an executor one is made per generation
(:mod:`connect_spark.runtime.tasks.generation`). This module knows nothing about Spark.

Offsets kept per topic-partition (all "next offset to read"):

* ``consumed`` – after the last record read, including records dropped by transforms or tolerated
  errors; promoted to ``current`` only when ``put`` succeeds (Connect's ``origOffsets``);
* ``current`` – after the last record the task accepted in ``put``;
* ``last_committed`` – what was last written to the offset store (or set by a rewind).
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Callable, Collection, Iterable, Mapping

from connect_spark.api.errors import ConnectException, RetriableException
from connect_spark.api.records import SinkRecord, TopicPartition, offsets_text
from connect_spark.api.task import SinkTask
from connect_spark.metrics.sink_task import SinkTaskMetrics
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

__all__ = ["WorkerSinkTask", "TaskFailedError", "committable_offsets", "DEFAULT_RETRY_BACKOFF_MS"]

log = logging.getLogger(__name__)

#: Back-off before re-delivering a batch whose ``put`` raised ``RetriableException`` when the task set
#: no ``context.timeout``. Kafka Connect waits until the next commit tick (up to
#: ``offset.flush.interval.ms``); a second is kinder to streaming latency and still bounded.
DEFAULT_RETRY_BACKOFF_MS = 1000

CommitFunction = Callable[[Mapping[TopicPartition, int]], None]


class TaskFailedError(ConnectException):
    """A task hook raised a non-retriable exception; the task is FAILED.

    Attributes:
        task_id: the failed task's id.
        trace: the formatted stack trace (what ``connect-status`` keeps as ``trace``).
    """

    def __init__(self, message: str, task_id: int, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        if cause is not None:
            self.__cause__ = cause
            self.trace = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
        else:
            self.trace = message


def committable_offsets(
    task_provided: Mapping[TopicPartition, int],
    offsets_to_commit: Mapping[TopicPartition, int],
    last_committed: Mapping[TopicPartition, int],
    assignment: Collection[TopicPartition],
    task_label: str = "task",
) -> dict[TopicPartition, int]:
    """Apply Kafka Connect's rules to what ``pre_commit`` returned.

    Starting from ``last_committed`` (restricted to the partitions being committed), a returned offset
    replaces it only when its partition is assigned, was asked about, and the offset is not beyond what
    was delivered. A lower offset than the last commit is allowed. Partitions the task omits keep
    their last committed offset.
    """
    committable = {tp: last_committed[tp] for tp in offsets_to_commit if tp in last_committed}
    for raw_tp, offset in task_provided.items():
        tp = TopicPartition(*raw_tp)
        if tp not in assignment:
            log.warning("%s: ignoring task provided offset %s/%s -- partition not assigned, assignment=%s",
                        task_label, tp, offset, sorted(map(str, assignment)))
        elif tp not in offsets_to_commit:
            log.debug("%s: ignoring task provided offset %s/%s -- partition not requested", task_label, tp, offset)
        elif offset is None:
            log.warning("%s: ignoring null offset for %s", task_label, tp)
        elif int(offset) > offsets_to_commit[tp]:
            log.warning("%s: ignoring invalid task provided offset %s/%s -- not yet consumed, consumed=%s",
                        task_label, tp, offset, offsets_to_commit[tp])
        else:
            committable[tp] = int(offset)
    return committable


class WorkerSinkTask:
    """Drives one :class:`SinkTask` through Kafka Connect's lifecycle and offset rules.

    Args:
        connector_name: the connector's ``name``.
        task_id: the task's number.
        task: the connector's task instance (not yet initialized).
        task_config: the configuration ``start`` receives.
        commit: takes committed offsets on towards the offset store (see step 7 of :meth:`commit_offsets`:
            it may return before they are written); called only with changed offsets.
        offset_flush_interval_ms: the commit tick (``offset.flush.interval.ms``).
        context: the task's context (built by the caller when it carries an errant record reporter).
        before_commit: called first in every commit (flushes the error reporters' DLQ writes).
        clock: monotonic seconds; injected for tests.
    """

    def __init__(
        self,
        connector_name: str,
        task_id: int,
        task: SinkTask,
        task_config: Mapping[str, str],
        commit: CommitFunction,
        offset_flush_interval_ms: int,
        context: WorkerSinkTaskContext | None = None,
        before_commit: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connector_name = connector_name
        self.task_id = task_id
        self.task = task
        self.task_config = dict(task_config)
        self.context = context or WorkerSinkTaskContext(task_config)
        self._commit = commit
        self._before_commit = before_commit
        self._clock = clock
        self._flush_interval = offset_flush_interval_ms / 1000.0
        self.next_commit = clock() + self._flush_interval
        self.assignment: set[TopicPartition] = set()
        self.message_batch: list[SinkRecord] = []
        self.consumed: dict[TopicPartition, int] = {}
        self.current: dict[TopicPartition, int] = {}
        self.last_committed: dict[TopicPartition, int] = {}
        self.paused_for_redelivery = False
        self.rewinds: dict[TopicPartition, int] = {}
        self.commit_seqno = 0
        self.commit_failures = 0
        self.started = False
        self.metrics = SinkTaskMetrics(clock)  # sink-task-metrics; records read are counted by the runner

    @property
    def label(self) -> str:
        return f"{self.connector_name}-{self.task_id}"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """``initialize`` then ``start``; any exception fails the task."""
        log.info("Starting task %s (%s version %s)", self.label, type(self.task).__name__, self._safe_version())
        self._call("initialize", self.task.initialize, self.context)
        self._call("start", self.task.start, dict(self.task_config))
        self.started = True

    def open(self, positions: Mapping[TopicPartition, int]) -> None:
        """Assign partitions whose next offsets are ``positions``, call ``open``, then apply its seeks.

        As in Connect's ``onPartitionsAssigned``: delivered and committed offsets start at the
        position; ``open`` is skipped for an empty set; seeks the task asks for in ``open`` are applied
        at once (they become :attr:`rewinds`, which the processor turns into re-reads).
        """
        partitions = set(positions)
        if not partitions:
            return
        for tp, position in positions.items():
            self.current[tp] = self.last_committed[tp] = position
        self.assignment |= partitions
        self.context.set_assignment(self.assignment)
        self._call("open", self.task.open, sorted(partitions))
        self.apply_seeks()

    def apply_seeks(self) -> dict[TopicPartition, int]:
        """Take the seeks asked through ``context.offset`` and treat them as Connect's ``rewind()`` does:
        the partitions restart from there, and those offsets count as committed without being written."""
        try:
            seeks = self.context.take_pending_offsets()
        except ConnectException as e:
            raise TaskFailedError(f"Task {self.label} asked to rewind a partition it does not own: {e}",
                                  self.task_id, e) from e
        for tp, offset in seeks.items():
            log.info("%s: rewind %s to offset %d", self.label, tp, offset)
            self.last_committed[tp] = self.current[tp] = offset
            self.consumed.pop(tp, None)
            self.rewinds[tp] = offset
        if seeks:
            self.message_batch = [r for r in self.message_batch if r.original_topic_partition not in seeks]
        return seeks

    def take_rewinds(self) -> dict[TopicPartition, int]:
        """Positions some partitions must be read from again (seeks, failed ``pre_commit``), then cleared."""
        self.apply_seeks()
        rewinds, self.rewinds = self.rewinds, {}
        return rewinds

    # -- delivery ---------------------------------------------------------------------------

    def deliver(self, records: Iterable[SinkRecord], consumed: Mapping[TopicPartition, int]) -> bool:
        """Add a batch's records and consumed offsets, then ``put`` everything pending.

        Returns:
            True when ``put`` accepted the records; False when it raised ``RetriableException``
            (the records stay pending: call :meth:`redeliver` after :meth:`retry_backoff_ms`).

        Raises:
            TaskFailedError: ``put`` raised anything else.
        """
        self.message_batch.extend(records)
        self.consumed.update(consumed)
        return self.redeliver()

    def redeliver(self) -> bool:
        """``put`` the pending records again (Connect's ``deliverMessages``)."""
        batch = list(self.message_batch)
        return self._put(lambda: self.task.put(batch), len(batch))

    def deliver_call(self, put: Callable[[], None], consumed: Mapping[TopicPartition, int]) -> bool:
        """Like :meth:`deliver` for bulk tasks: ``put`` is the call handing over a columnar batch.

        Retry a ``False`` result by calling this again with the same ``put`` and no new offsets.
        """
        self.consumed.update(consumed)
        return self._put(put, -1)

    def _put(self, put: Callable[[], None], count: int) -> bool:
        started = self._clock()
        try:
            put()
        except RetriableException as e:
            self.metrics.record_put_time((self._clock() - started) * 1000.0)
            log.error("%s: RetriableException from SinkTask: %s; the same %s will be delivered again",
                      self.label, e, f"{count} records" if count >= 0 else "batch")
            self.paused_for_redelivery = True
            return False
        except Exception as e:
            raise TaskFailedError(
                f"Task {self.label} threw an uncaught and unrecoverable exception in put: {e!r}. "
                "Task is being killed and will not recover until manually restarted.",
                self.task_id, e,
            ) from e
        self.metrics.record_put_time((self._clock() - started) * 1000.0)
        if count > 0:
            self.metrics.record_sent(count)
        self.current.update(self.consumed)
        self.consumed.clear()
        self.message_batch.clear()
        self.paused_for_redelivery = False
        return True

    def retry_backoff_ms(self) -> int:
        """How long to wait before :meth:`redeliver`: the task's ``context.timeout`` or the default."""
        timeout = self.context.take_timeout_ms()
        return timeout if timeout > 0 else DEFAULT_RETRY_BACKOFF_MS

    # -- commits ----------------------------------------------------------------------------

    def commit_due(self) -> bool:
        return self.context.commit_requested or self._clock() >= self.next_commit

    def maybe_commit(self) -> None:
        """Commit when the ``offset.flush.interval.ms`` tick is due or the task requested a commit."""
        if self.commit_due():
            self.commit_offsets(closing=False)
            self.next_commit = self._clock() + self._flush_interval
            self.context.commit_requested = False

    def commit_offsets(self, closing: bool, partitions: Collection[TopicPartition] | None = None) -> None:
        """The one function that owns the commit order, as Kafka Connect's ``commitOffsets``:

        1. flush the error reporters (dead letter queue writes are durable before their offsets commit);
        2. take the delivered offsets of ``partitions`` (default: the assignment); if there are none,
           stop here (no ``pre_commit``, no ``close``);
        3. ask the task: ``pre_commit(copy of those offsets)``. If it raises while not closing, rewind
           those partitions to their last committed offsets (the records since are delivered again) and
           stop; while closing, log it and commit nothing;
        4. when closing, ``close(partitions)`` — after ``pre_commit``, before the commit is written,
           whether or not ``pre_commit`` raised;
        5. an empty answer opts out: nothing is committed;
        6. keep only acceptable offsets (:func:`committable_offsets`);
        7. hand the partitions whose offset changed since the last commit to ``commit`` and record them
           as committed. ``commit`` does not wait for the write: on the driver it is the connector
           runner's, which queues them for the in-order background committer
           (:class:`connect_spark.storage.committer.OffsetCommitter`) and returns at once; the committer
           writes ``connect-offsets`` and then the consumer group while the next batch runs, and logs
           "committed offsets" once that write is acknowledged. In an executor generation ``commit``
           only gathers them for the driver, which hands them to the same committer. A failed write
           surfaces here with the next commit (``commit`` raises it): it is logged and counted, never
           fails the task (as in Connect), and the committer retries it merged with the offsets given now.
        """
        parts = set(self.assignment if partitions is None else partitions)
        # 1.
        if self._before_commit is not None:
            self._before_commit()
        # 2.
        offsets_to_commit = {tp: off for tp, off in self.current.items() if tp in parts}
        if not offsets_to_commit:
            return
        self.commit_seqno += 1
        last_for_parts = {tp: off for tp, off in self.last_committed.items() if tp in offsets_to_commit}
        # 3. and 4.
        provided: Mapping[TopicPartition, int] | None = None
        try:
            provided = self.task.pre_commit(dict(offsets_to_commit))
        except Exception as e:
            if closing:
                log.warning("%s: offset commit failed during close: %r", self.label, e)
            else:
                log.error("%s: offset commit failed, rewinding to last committed offsets: %r", self.label, e)
                for tp, off in last_for_parts.items():
                    self.current[tp] = off
                    self.rewinds[tp] = off
                    self.consumed.pop(tp, None)
                self.message_batch = [r for r in self.message_batch
                                      if r.original_topic_partition not in last_for_parts]
                self.commit_failures += 1
        finally:
            if closing:
                self._call("close", self.task.close, sorted(parts))
        if provided is None:
            return
        # 5.
        if not provided:
            log.debug("%s: skipping offset commit, task opted-out by returning no offsets", self.label)
            self.metrics.record_commit_skipped(self.commit_seqno)
            return
        # 6.
        committable = committable_offsets(provided, offsets_to_commit, last_for_parts, self.assignment, self.label)
        changed = {tp: off for tp, off in committable.items() if last_for_parts.get(tp) != off}
        if not changed:
            log.debug("%s: skipping offset commit, no change since last commit", self.label)
            self.metrics.record_commit_skipped(self.commit_seqno)
            return
        # 7.
        try:
            self._commit(changed)
        except Exception as e:  # the store's failure is logged, like Connect's commit callback errors
            self.commit_failures += 1
            log.error("%s: commit of offsets %s failed: %r", self.label, offsets_text(changed), e)
            return
        self.last_committed.update(changed)
        self.commit_failures = 0
        self.metrics.record_commit_completed(self.commit_seqno)
        log.debug("%s: offsets %s handed to the offset commit", self.label, offsets_text(changed))

    def close_all(self) -> None:
        """Final ``pre_commit`` → ``close(all)`` → commit, for stop and after a failure."""
        if self.assignment:
            self.commit_offsets(closing=True, partitions=self.assignment)

    def stop(self) -> None:
        """``stop()``; an exception from it is logged and ignored, as in Connect."""
        try:
            self.task.stop()
        except Exception as e:
            log.warning("Could not stop task %s: %r", self.label, e)

    # -- helpers ----------------------------------------------------------------------------

    def _call(self, hook: str, fn: Callable, *args) -> None:
        try:
            fn(*args)
        except Exception as e:
            raise TaskFailedError(f"Task {self.label} failed in {hook}: {e!r}", self.task_id, e) from e

    def _safe_version(self) -> str:
        try:
            return str(self.task.version())
        except Exception:
            return "unknown"

