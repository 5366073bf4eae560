"""One Kafka partition's sink task in a real-time query's Python worker: put as records arrive, commit on a tick.

Made and kept by :func:`partition_task` for :class:`connect_spark.runtime.realtime.writer.RealtimeWriter`, in the
executor's Python worker that runs the partition's Spark task; every call comes under the writer's lock (from
Spark's task thread or the writer's ticker, never both at once). Nothing here touches Spark.

A real-time query runs one Spark task per Kafka partition for each long batch, so each partition gets a task
instance of its own (``initialize``/``start`` once per connector run in a Python worker, ``stop`` when the worker
exits), configured with the task configuration of the task id Connect's range assignment gives the partition.
Each long batch is one *attempt* of the partition's task, as a Connect consumer generation is:

1. :meth:`PartitionTask.begin`, on the attempt's first record: a fenced committer for the partition
   (:mod:`.commits`; it fences older attempts), the committed offset (the consumer group, which every commit
   writes in the same transaction as ``connect-offsets``; the generation's starting offset when the group has
   none), ``open`` at that offset with the task's seeks applied, and — when that is below the first record Spark
   hands over (the batch before ended with ``pre_commit`` behind what it read, or the task seeks back) — the
   records in between re-read from Kafka (:func:`.rows.read_range`) and put first, so nothing ``pre_commit``
   did not return is skipped; records below a forward seek are dropped;
2. :meth:`PartitionTask.deliver` per small batch of rows: converted, transformed and ``put`` by the same task loop
   as micro-batches (:func:`~connect_spark.runtime.tasks.loop.deliver_records`, ``errors.*``, the DLQ);
3. :meth:`PartitionTask.commit` on the writer's tick: Connect's commit order
   (:meth:`~connect_spark.runtime.tasks.worker_task.WorkerSinkTask.commit_offsets`: DLQ flushed → ``pre_commit`` →
   only what it returned, committed in one transaction);
4. :meth:`PartitionTask.finish` at the batch end: the last ``pre_commit`` → ``close`` → commit; or
   :meth:`PartitionTask.fail` after an error: the same final commit of what ``put`` accepted, ``stop``, evicted.

Partitions the task pauses are not honoured in real-time mode (Spark keeps reading them); a pause is logged.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from connect_spark.api.bulk import takes_records
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion.direct_records import DirectRecordBuilder
from connect_spark.runtime.conversion.record_frames import ArrowFrameBuilder
from connect_spark.runtime.realtime.commits import CommitFenced, FencedCommitter, group_offset
from connect_spark.runtime.python_worker.run_cache import RunCache
from connect_spark.runtime.realtime.rows import raw_batch, read_range
from connect_spark.runtime.tasks.loop import TaskUnit, deliver_arrow, deliver_records
from connect_spark.runtime.tasks.worker_task import TaskFailedError, WorkerSinkTask

__all__ = ["RealtimeSpec", "PartitionTask", "partition_task", "as_failure"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RealtimeSpec:
    """What the driver tells every partition's task of one real-time query generation (pickled with the writer).

    Attributes:
        run_id: identifies one start of the connector; cached task instances of other runs are stopped.
        connector_name: the connector's ``name``.
        task_class: the connector's task class (importable on executors).
        task_configs: the connector's task configurations, by task id.
        task_of: Connect's range assignment of the partitions known at start; a partition that appears later
            takes a task id from a hash of its name.
        connector_props, worker_props: the resolved configurations (converters, transforms, ``errors.*``,
            Kafka client settings, ``offset.storage.topic``).
        positions: where the generation starts per partition (committed offsets when it started).
        commit_interval_ms: the commit tick (``offset.flush.interval.ms``; 200 ms unless the worker sets it).
        put_max_records: ``put`` as soon as this many rows are buffered.
        put_linger_ms: ``put`` rows buffered this long even when fewer.
    """

    run_id: str
    connector_name: str
    task_class: type
    task_configs: tuple[dict[str, str], ...]
    task_of: dict[TopicPartition, int]
    connector_props: dict[str, Any]
    worker_props: dict[str, Any]
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    commit_interval_ms: int = 200
    put_max_records: int = 1000
    put_linger_ms: int = 20

    def task_id_of(self, tp: TopicPartition) -> int:
        """The task id whose configuration ``tp``'s task gets."""
        if tp in self.task_of:
            return self.task_of[tp]
        return zlib.crc32(f"{tp.topic}/{tp.partition}".encode()) % len(self.task_configs)


def _wait(seconds: float) -> bool:
    """The back-off between ``put`` attempts: nothing interrupts it in a Spark task."""
    time.sleep(seconds)
    return True


class PartitionTask:
    """The task instance of one partition in this Python worker, and its current attempt (see the module docstring)."""

    def __init__(self, spec: RealtimeSpec, tp: TopicPartition) -> None:
        from connect_spark.config.connector import ConnectorConfig
        from connect_spark.config.worker import WorkerConfig
        from connect_spark.kafka.clients import kafka_client_kwargs

        self.spec, self.tp = spec, tp
        connector, worker = ConnectorConfig(spec.connector_props), WorkerConfig(spec.worker_props)
        task_id = spec.task_id_of(tp)
        self.unit = TaskUnit(connector, worker, task_id, spec.task_class, spec.task_configs[task_id])
        self.unit.worker_task.start()
        converter = self.unit.plugins.converter
        self.frames = ArrowFrameBuilder.for_converter(converter) if self.unit.bulk_arrow else None
        self.records = not self.unit.bulk_arrow or (self.frames is None and takes_records(spec.task_class))
        self.direct = DirectRecordBuilder.for_converter(converter) if self.records else None
        client = {**worker.kafka_client_config(), **worker.consumer_config(), **connector.consumer_overrides}
        self.consumer_kwargs = {**kafka_client_kwargs(client), "bootstrap_servers": worker.bootstrap_servers}
        producer = {**worker.kafka_client_config(), **worker.producer_config(), **connector.producer_overrides}
        self.producer_kwargs = {**kafka_client_kwargs(producer), "bootstrap_servers": worker.bootstrap_servers}
        admin = {**worker.kafka_client_config(), **worker.admin_config(), **connector.admin_overrides}
        self.admin_kwargs = {**kafka_client_kwargs(admin), "bootstrap_servers": worker.bootstrap_servers}
        self.offsets_topic = worker.offset_storage_topic
        self.group_id = connector.consumer_group_id
        self.loop: WorkerSinkTask | None = None
        self.committer: FencedCommitter | None = None
        self.lower_bound = 0
        self.records_put = 0

    @property
    def label(self) -> str:
        return f"{self.spec.connector_name}-{self.unit.task_id} {self.tp.topic}[{self.tp.partition}]"

    def begin(self, first_offset: int) -> None:
        """Start an attempt whose first record from Spark is at ``first_offset`` (step 1 of the module docstring)."""
        self.committer = FencedCommitter(self.spec.connector_name, self.tp, self.offsets_topic, self.group_id,
                                         self.producer_kwargs)
        committed = group_offset(self.admin_kwargs, self.group_id, self.tp)
        if committed is None:
            committed = self.spec.positions.get(self.tp, first_offset)
        loop = self.unit.fresh_loop(self._commit, self.unit.context.paused)
        self.loop = loop
        loop.open({self.tp: committed})
        start = loop.take_rewinds().get(self.tp, committed)
        self.lower_bound = start
        if start < first_offset:
            log.info("%s: committed at %d, Spark's batch starts at %d: re-reading the records in between",
                     self.label, start, first_offset)
            self.deliver(read_range(self.consumer_kwargs, self.tp, start, first_offset))
        self.lower_bound = max(start, first_offset)

    def deliver(self, rows: Sequence[Sequence[Any]]) -> None:
        """Convert and ``put`` ``rows`` (raw columns, offset order) not below the attempt's lower bound."""
        kept = [r for r in rows if r[2] >= self.lower_bound]
        if not kept:
            return
        batch = raw_batch(kept)
        if self.records:
            put, _ = deliver_records(self.unit, batch, _wait, self.direct)
        else:
            put, _ = deliver_arrow(self.unit, batch, _wait, self.frames)
        self.records_put += put
        if self.unit.context.paused:
            log.warning("%s: pausing partitions is not supported in real-time mode; records keep coming", self.label)
            self.unit.context.paused.clear()

    def commit(self, closing: bool = False) -> None:
        """Connect's commit order for the partition; raises :class:`CommitFenced` once a newer attempt took over."""
        assert self.loop is not None
        self.loop.commit_offsets(closing=closing, partitions={self.tp})
        if self.committer is not None and self.committer.fenced:
            raise CommitFenced(f"{self.label}: a newer attempt of this partition's task took over its commits")

    def _commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        assert self.committer is not None
        self.committer.commit(offsets)

    def finish(self) -> None:
        """The attempt's end: ``pre_commit`` → ``close`` → commit (step 4), then its committer closes."""
        try:
            self.commit(closing=True)
        finally:
            self._end_attempt()

    def fail(self, error: BaseException | None) -> None:
        """After a failure: the final commit of what ``put`` accepted, ``stop``, and the instance is evicted."""
        try:
            if self.loop is not None and not (self.committer is not None and self.committer.fenced):
                self.loop.close_all()
        except Exception as e:
            log.error("%s: final commit after failure (%r) failed: %r", self.label, error, e)
        finally:
            self._end_attempt()
            _tasks.evict(self.spec.run_id, self.tp)

    def _end_attempt(self) -> None:
        committer, self.committer, self.loop = self.committer, None, None
        if committer is not None:
            committer.close()

    def stop(self) -> None:
        self.unit.worker_task.stop()
        self.unit.plugins.close()


#: this Python worker's started partition tasks, by (run id, topic-partition)
_tasks: RunCache[PartitionTask] = RunCache("task", lambda task: task.stop())


def partition_task(spec: RealtimeSpec, tp: TopicPartition) -> PartitionTask:
    """The started task instance of ``tp`` for ``spec``'s run in this Python worker (made on first use; instances
    of other runs are stopped)."""
    return _tasks.get(spec.run_id, tp, lambda: PartitionTask(spec, tp))


def as_failure(error: BaseException, spec: RealtimeSpec, tp: TopicPartition) -> TaskFailedError:
    """``error`` as the :class:`TaskFailedError` the writer raises into Spark."""
    if isinstance(error, TaskFailedError):
        return error
    failure = TaskFailedError(f"Task {spec.connector_name}-{spec.task_id_of(tp)} ({tp.topic}[{tp.partition}]) "
                              f"failed: {error!r}", spec.task_id_of(tp), error)
    return failure
