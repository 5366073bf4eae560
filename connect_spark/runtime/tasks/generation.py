"""One task generation on an executor: ``open`` → ``put`` … → ``pre_commit`` → ``close`` for one micro-batch.

In executor mode a micro-batch is a generation for every task that has records in it, as a
rebalance-free Kafka Connect consumer generation would be: the task's partitions are opened at the
offsets the driver holds as committed, the records are converted and ``put`` in chunks, and at the end
the task's ``pre_commit`` decides what may be committed and its partitions are closed. Everything the
driver needs back — what ``pre_commit`` returned, how far records were seen, rewinds asked for in
``open``, pauses, a failure with its trace, counters — travels in one :class:`GenerationResult`.

This module runs inside Spark's Python workers (called by the ``mapInArrow`` function
:mod:`connect_spark.runtime.processors.executor_tasks` builds) and never touches Spark itself, so it is tested as
plain Python.

Task instances are cached per Python worker between generations: ``initialize`` and ``start`` run
once per (run, task id), and ``stop`` runs when the worker process exits. A generation always begins
at the driver's committed offsets, so what a cached instance may have buffered is never relied on:
``close`` ends every generation.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

from connect_spark.api.bulk import takes_records
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion.record_frames import ArrowFrameBuilder
from connect_spark.runtime.python_worker.run_cache import RunCache
from connect_spark.runtime.conversion.direct_records import DirectRecordBuilder
from connect_spark.runtime.processors.executor_vectorized import FrameSchemas, deliver_split
from connect_spark.runtime.tasks.loop import TaskUnit, deliver_arrow, deliver_records, offset_ranges, select_rows
from connect_spark.runtime.tasks.worker_task import TaskFailedError, WorkerSinkTask

__all__ = ["GenerationSpec", "GenerationResult", "run_generation", "group_by_task", "offset_ranges", "tp_key", "parse_tp_key"]

log = logging.getLogger(__name__)


def tp_key(tp: TopicPartition) -> str:
    """A topic-partition as a JSON object key (``topic/partition``; topics cannot contain ``/``)."""
    return f"{tp.topic}/{tp.partition}"


def parse_tp_key(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition("/")
    return TopicPartition(topic, int(partition))


def _offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, int]:
    return {tp_key(tp): int(off) for tp, off in offsets.items()}


def _offsets_from_json(offsets: Mapping[str, int]) -> dict[TopicPartition, int]:
    return {parse_tp_key(k): int(v) for k, v in offsets.items()}


@dataclass(frozen=True)
class GenerationSpec:
    """What the driver tells an executor about one task for one micro-batch (pickled with the function).

    Attributes:
        run_id: identifies one start of the connector; cached task instances of other runs are stopped.
        connector_name: the connector's ``name``.
        task_id: the task's number.
        task_class: the connector's task class (pickled by reference: importable on executors).
        task_config: what the task's ``start`` receives.
        connector_props: the connector's resolved configuration (converters, transforms, ``errors.*``).
        worker_props: the worker's resolved configuration (default converters, Kafka client settings).
        positions: every partition assigned to the task, at its committed offset: where the
            generation starts, and what ``pre_commit`` answers are measured against.
        paused: partitions the task paused in an earlier generation and has not resumed.
        offset_flush_interval_ms: the worker's commit tick (unused within a generation, kept for the
            task loop's bookkeeping).
        frame_schemas: set when the driver projected the batch through the connector's vectorized plan
            (an Arrow task; batches hold :meth:`~connect_spark.columnar.plan.PlanOutput.split` rows): the
            Connect schemas of the converted rows (see :mod:`connect_spark.runtime.processors.executor_vectorized`).
    """

    run_id: str
    connector_name: str
    task_id: int
    task_class: type
    task_config: dict[str, str]
    connector_props: dict[str, Any]
    worker_props: dict[str, Any]
    positions: dict[TopicPartition, int]
    paused: frozenset[TopicPartition] = frozenset()
    offset_flush_interval_ms: int = 60_000
    frame_schemas: FrameSchemas | None = None


@dataclass
class GenerationResult:
    """What one task generation reports to the driver (one JSON row of the ``mapInArrow`` output).

    Attributes:
        task_id: the task's number.
        committed: offsets the task's ``pre_commit`` made committable and that changed (Connect's rules
            applied: assigned partitions only, never beyond what was delivered).
        seen: per partition, the offset after the last record read in this batch (delivered or not).
        rewinds: seeks the task asked for in ``open``; the driver treats them as committed.
        unassigned: partitions with records but no owner in this batch, with the first offset seen.
        paused: the task's paused partitions when the generation ended.
        error: the failure message when the task failed, else ``None``; ``trace`` its stack trace.
        records_read, records_put, records_skipped: counters.
        records_fallback: rows of a split batch (see :mod:`connect_spark.runtime.processors.executor_vectorized`) converted per record.
        put_seconds: wall time inside ``put``/``put_arrow``.
        pid: the executor Python worker's process id.
    """

    task_id: int
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    seen: dict[TopicPartition, int] = field(default_factory=dict)
    rewinds: dict[TopicPartition, int] = field(default_factory=dict)
    unassigned: dict[TopicPartition, int] = field(default_factory=dict)
    paused: set[TopicPartition] = field(default_factory=set)
    error: str | None = None
    trace: str | None = None
    records_read: int = 0
    records_put: int = 0
    records_skipped: int = 0
    records_fallback: int = 0
    put_seconds: float = 0.0
    pid: int = 0

    def to_json(self) -> str:
        return json.dumps({
            "task_id": self.task_id,
            "committed": _offsets_to_json(self.committed),
            "seen": _offsets_to_json(self.seen),
            "rewinds": _offsets_to_json(self.rewinds),
            "unassigned": _offsets_to_json(self.unassigned),
            "paused": sorted(tp_key(tp) for tp in self.paused),
            "error": self.error,
            "trace": self.trace,
            "records_read": self.records_read,
            "records_put": self.records_put,
            "records_skipped": self.records_skipped,
            "records_fallback": self.records_fallback,
            "put_seconds": self.put_seconds,
            "pid": self.pid,
        })

    @classmethod
    def from_json(cls, text: str) -> "GenerationResult":
        data = json.loads(text)
        return cls(
            task_id=int(data["task_id"]),
            committed=_offsets_from_json(data["committed"]),
            seen=_offsets_from_json(data["seen"]),
            rewinds=_offsets_from_json(data["rewinds"]),
            unassigned=_offsets_from_json(data["unassigned"]),
            paused={parse_tp_key(k) for k in data["paused"]},
            error=data["error"],
            trace=data["trace"],
            records_read=data["records_read"],
            records_put=data["records_put"],
            records_skipped=data["records_skipped"],
            records_fallback=data.get("records_fallback", 0),
            put_seconds=data["put_seconds"],
            pid=data["pid"],
        )


class _CachedTask:
    """A started task (:class:`~connect_spark.runtime.tasks.loop.TaskUnit`) and its Arrow builders, kept by one Python worker."""

    def __init__(self, spec: GenerationSpec) -> None:
        from connect_spark.config.connector import ConnectorConfig
        from connect_spark.config.worker import WorkerConfig

        connector = ConnectorConfig(spec.connector_props)
        worker = WorkerConfig(spec.worker_props)
        self.unit = TaskUnit(connector, worker, spec.task_id, spec.task_class, spec.task_config)
        self.unit.worker_task.start()
        converter = self.unit.plugins.converter
        self.frames = ArrowFrameBuilder.for_converter(converter) if self.unit.bulk_arrow else None
        #: an Arrow task that also takes records gets them when its frame would be built from records
        self.records = not self.unit.bulk_arrow or (self.frames is None and takes_records(spec.task_class))
        self.direct = DirectRecordBuilder.for_converter(converter) if self.records else None

    def new_generation(self, committed_sink: dict[TopicPartition, int], paused: Iterable[TopicPartition]) -> WorkerSinkTask:
        """A fresh task loop around the started instance, committing into ``committed_sink``."""
        return self.unit.fresh_loop(committed_sink.update, paused)

    def stop(self) -> None:
        self.unit.worker_task.stop()
        self.unit.plugins.close()


#: this Python worker's started tasks, by (run id, task id)
_tasks: RunCache[_CachedTask] = RunCache("task", lambda cached: cached.stop())


def run_generation(spec: GenerationSpec, batches: Iterable[pa.RecordBatch]) -> GenerationResult:
    """Run one generation of ``spec``'s task over its records of this micro-batch.

    ``batches`` hold the raw Kafka columns (:data:`connect_spark.streaming.raw_batch.RAW_COLUMNS`),
    rows of the task's partitions in offset order per partition (with ``spec.frame_schemas``, the
    plan's split columns besides: :mod:`connect_spark.runtime.processors.executor_vectorized`). Each non-empty batch becomes one
    ``put`` (one ``put_arrow`` for :class:`~connect_spark.api.bulk.ArrowSinkTask`).

    Steps:

    1. take the cached started instance (``initialize``/``start`` on first use in this worker);
    2. ``open`` every assigned partition at the committed offset; seeks the task asks for are
       applied: forward seeks skip records, a backward seek skips the partition's records of this
       batch and is reported so the driver re-reads from there;
    3. per batch: drop records of unassigned, paused or rewound partitions and below forward seeks;
       convert and transform; ``put`` (a ``RetriableException`` delivers the same records again after
       ``context.timeout``, with no offset moving meanwhile);
    4. ``pre_commit`` → ``close`` → the committable offsets, by the same :meth:`~connect_spark.runtime.tasks.worker_task.WorkerSinkTask.commit_offsets` as on the driver;
    5. on failure: the final ``pre_commit``/``close`` for what was put, ``stop``, and the error.
    """
    result = GenerationResult(spec.task_id, pid=os.getpid())
    committed: dict[TopicPartition, int] = {}
    try:
        cached = _tasks.get(spec.run_id, spec.task_id, lambda: _CachedTask(spec))
    except Exception as e:
        return _failed(result, spec, e)
    worker_task = cached.new_generation(committed, spec.paused)
    try:
        worker_task.open(spec.positions)
        seeks = worker_task.take_rewinds()
        lower_bounds: dict[TopicPartition, int] = {}
        skipped_partitions: set[TopicPartition] = set()
        for tp, offset in seeks.items():
            if offset < spec.positions[tp]:
                skipped_partitions.add(tp)
                result.rewinds[tp] = offset
            else:
                lower_bounds[tp] = offset
                result.rewinds[tp] = offset
        for batch in batches:
            if batch.num_rows == 0:
                continue
            result.records_read += batch.num_rows
            ranges = offset_ranges(batch)
            for tp, (_, end) in ranges.items():
                result.seen[tp] = max(result.seen.get(tp, 0), end)
            for tp, (first, _) in ranges.items():
                if tp not in spec.positions:
                    result.unassigned[tp] = min(result.unassigned.get(tp, first), first)
            excluded = skipped_partitions | set(cached.unit.context.paused)
            kept = select_rows(batch, ranges, spec.positions, excluded, lower_bounds)
            result.records_skipped += batch.num_rows - kept.num_rows
            if kept.num_rows == 0:
                continue
            _deliver(cached, kept, result, spec.frame_schemas)
        worker_task.commit_offsets(closing=True, partitions=set(spec.positions))
    except Exception as e:
        result.committed = committed
        result.paused = set(cached.unit.context.paused)
        return _failed(result, spec, e, worker_task)
    result.committed = committed
    result.paused = set(cached.unit.context.paused)
    return result


def _wait(seconds: float) -> bool:
    """The back-off between ``put`` attempts in a generation: an executor has nothing to interrupt it."""
    time.sleep(seconds)
    return True


def _deliver(cached: _CachedTask, batch: pa.RecordBatch, result: GenerationResult,
             frame_schemas: FrameSchemas | None) -> None:
    """One ``put`` (``put_arrow`` for an Arrow task) of a batch's deliverable rows, timed and counted."""
    started = time.perf_counter()
    if frame_schemas is not None:
        delivery = deliver_split(cached.unit, batch, _wait, frame_schemas)
        put = delivery.put
        result.records_fallback += delivery.fallback
    elif not cached.records:
        put, _ = deliver_arrow(cached.unit, batch, _wait, cached.frames)
    else:
        put, _ = deliver_records(cached.unit, batch, _wait, cached.direct)
    result.put_seconds += time.perf_counter() - started
    result.records_put += put


def _failed(result: GenerationResult, spec: GenerationSpec, error: BaseException,
            worker_task: WorkerSinkTask | None = None) -> GenerationResult:
    """Record a failure: Connect's final commit of what was put, then ``stop`` and eviction."""
    if not isinstance(error, TaskFailedError):
        error = TaskFailedError(f"Task {spec.connector_name}-{spec.task_id} failed: {error!r}", spec.task_id, error)
    if worker_task is not None:
        try:
            worker_task.close_all()
        except Exception as e:
            log.error("%s-%d: final commit after failure failed: %r", spec.connector_name, spec.task_id, e)
    _tasks.evict(spec.run_id, spec.task_id)
    result.error = str(error)
    result.trace = getattr(error, "trace", None) or str(error)
    return result


def group_by_task(batches: Iterator[pa.RecordBatch], task_of: Mapping[TopicPartition, int],
                  default_task: int) -> Iterator[tuple[int, Iterator[pa.RecordBatch]]]:
    """Split a stream of batches sorted by task id into consecutive ``(task_id, batches)`` runs.

    Rows of partitions without an owner go to ``default_task``'s run, which reports them as
    unassigned. Batches are sliced where the task id changes.
    """
    pending: list[tuple[int, pa.RecordBatch]] = []

    def slices(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
        owners = {task_of.get(tp, default_task) for tp in offset_ranges(batch)}
        if len(owners) == 1:  # the common case: one task's rows only, no per-row work
            yield owners.pop(), batch
            return
        ids = [task_of.get(TopicPartition(t, p), default_task)
               for t, p in zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist())]
        start = 0
        for i in range(1, len(ids) + 1):
            if i == len(ids) or ids[i] != ids[start]:
                yield ids[start], batch.slice(start, i - start)
                start = i

    source = (piece for batch in batches for piece in slices(batch))
    current: int | None = None
    for task_id, piece in source:
        if current is None or task_id == current:
            current = task_id
            pending.append((task_id, piece))
            continue
        yield current, iter([p for _, p in pending])
        pending = [(task_id, piece)]
        current = task_id
    if current is not None:
        yield current, iter([p for _, p in pending])
