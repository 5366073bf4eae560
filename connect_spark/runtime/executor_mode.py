"""Executor mode, driver side: each micro-batch runs every task's generation on the executors.

Per micro-batch the driver

1. folds in a bounded Kafka read of every partition whose committed offset is behind how far records
   were read (``[committed, position)``: records ``pre_commit`` did not return, a task's rewind, a
   partition that appeared mid-run), so re-delivery never needs a query restart;
2. routes rows to their task: when every task owns at most one partition and nothing is folded in,
   Spark's Kafka partitions already are the task slices; otherwise rows are shuffled by task id and
   sorted by (task, topic, partition, offset);
3. runs ``mapInArrow`` with :func:`connect_spark.runtime.generation.run_generation` per task and
   collects one small JSON result per task (never records: the driver holds no batch);
4. commits what each task's ``pre_commit`` made committable, remembers rewinds, pauses and new
   partitions, and fails the connector with the task's trace when a task failed (after committing
   what the other tasks and the failed task's earlier ``put`` calls made safe).

Works under Spark Connect: only DataFrame operations, ``mapInArrow`` and ``collect``.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import pyarrow as pa

from connect_spark.api.records import TopicPartition
from connect_spark.runtime import python_worker
from connect_spark.runtime.assignment import extend_assignment, range_assignment
from connect_spark.runtime.generation import (
    GenerationResult,
    GenerationSpec,
    group_by_task,
    offset_ranges,
    run_generation,
)
from connect_spark.runtime.worker_task import TaskFailedError
from connect_spark.streaming.source import kafka_batch_options, raw_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ExecutorTasks", "EXECUTOR_MODE_MAX_OFFSETS_PER_TRIGGER", "RESULT_SCHEMA"]

log = logging.getLogger(__name__)

#: Batch bound in executor mode when the worker sets no ``max.offsets.per.trigger``: a backlog is
#: split into batches of this many records so each task's slice stays bounded.
EXECUTOR_MODE_MAX_OFFSETS_PER_TRIGGER = 1_000_000

#: The ``mapInArrow`` output: one row per task generation.
RESULT_SCHEMA = "task_id int, result string"

#: Task id of rows whose partition has no owner yet; they are reported, never delivered.
UNASSIGNED = -1


class ExecutorTasks:
    """The driver's view of a connector's tasks in executor mode.

    Args:
        spark: the session batches run in.
        connector_name: the connector's ``name``.
        task_class: the connector's task class (importable on executors).
        task_configs: one configuration per task id.
        connector_props, worker_props: resolved configurations, shipped to executors.
        source_options: Kafka client options for bounded re-reads (``kafka.*`` keys).
        commit: writes offsets to the offset store.
        offset_flush_interval_ms: the worker's commit tick.
        include_headers: whether re-reads read record headers (as the connector's stream does).
    """

    def __init__(
        self,
        spark: "SparkSession",
        connector_name: str,
        task_class: type,
        task_configs: list[dict[str, str]],
        connector_props: Mapping[str, Any],
        worker_props: Mapping[str, Any],
        source_options: Mapping[str, str],
        commit: Callable[[Mapping[TopicPartition, int]], None],
        offset_flush_interval_ms: int,
        include_headers: bool = True,
    ) -> None:
        self.spark = spark
        self.connector_name = connector_name
        self.task_class = task_class
        self.task_configs = [dict(c) for c in task_configs]
        self.connector_props = dict(connector_props)
        self.worker_props = dict(worker_props)
        self.source_options = dict(source_options)
        self._commit = commit
        self.offset_flush_interval_ms = offset_flush_interval_ms
        self.include_headers = include_headers
        self.run_id = uuid.uuid4().hex
        self.task_of: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.position: dict[TopicPartition, int] = {}
        self.paused: dict[int, set[TopicPartition]] = {}
        self._unwritten: dict[TopicPartition, int] = {}
        self.failure: TaskFailedError | None = None
        self.batches = 0
        self.records_read = 0
        self.records_put = 0
        self.executor_pids: set[int] = set()

    @property
    def task_count(self) -> int:
        return len(self.task_configs)

    def open(self, positions: Mapping[TopicPartition, int]) -> None:
        """Assign partitions to task ids (Connect's range assignment); ``positions`` are committed."""
        assignment = range_assignment(set(positions), self.task_count)
        self.task_of = {tp: task_id for task_id, owned in assignment.items() for tp in owned}
        self.committed = dict(positions)
        self.position = dict(positions)

    def pending_ranges(self) -> dict[TopicPartition, tuple[int, int]]:
        """Partitions to re-deliver in the next batch: ``[committed, position)`` when not empty or paused."""
        paused = set().union(*self.paused.values()) if self.paused else set()
        return {tp: (self.committed[tp], end) for tp, end in self.position.items()
                if tp in self.committed and self.committed[tp] < end and tp not in paused}

    def process(self, batch_df: "DataFrame | None", batch_id: int) -> None:
        """Run one micro-batch (``batch_df`` from ``foreachBatch``; ``None`` = re-deliveries only).

        Does nothing once a task failed: the connector is stopping, and nothing may be delivered or
        committed past the failure.
        """
        if self.failure is not None:
            return
        pending = self.pending_ranges()
        frames = [batch_df] if batch_df is not None else []
        if pending:
            log.info("%s: re-delivering %s", self.connector_name,
                     ", ".join(f"{tp.topic}[{tp.partition}]@{a}..{b}" for tp, (a, b) in sorted(pending.items())))
            frames.append(self._bounded_read(pending))
        if not frames:
            return
        df = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        results = self._run(df, shuffle=bool(pending) or self._tasks_share_partitions())
        self._apply(results)
        self.batches += 1

    def _tasks_share_partitions(self) -> bool:
        owners = list(self.task_of.values())
        return len(owners) != len(set(owners))

    def _bounded_read(self, ranges: Mapping[TopicPartition, tuple[int, int]]) -> "DataFrame":
        options = kafka_batch_options(self.source_options, ranges, include_headers=self.include_headers)
        reader = self.spark.read.format("kafka")
        for key, value in options.items():
            reader = reader.option(key, value)
        return raw_columns(reader.load())

    def _specs(self) -> dict[int, GenerationSpec]:
        owned: dict[int, dict[TopicPartition, int]] = {i: {} for i in range(self.task_count)}
        for tp, task_id in self.task_of.items():
            owned[task_id][tp] = self.committed.get(tp, self.position.get(tp, 0))
        return {
            task_id: GenerationSpec(
                run_id=self.run_id,
                connector_name=self.connector_name,
                task_id=task_id,
                task_class=self.task_class,
                task_config=self.task_configs[task_id],
                connector_props=self.connector_props,
                worker_props=self.worker_props,
                positions=positions,
                paused=frozenset(self.paused.get(task_id, ())),
                offset_flush_interval_ms=self.offset_flush_interval_ms,
            )
            for task_id, positions in owned.items()
        }

    def _run(self, df: "DataFrame", shuffle: bool) -> list[GenerationResult]:
        from pyspark.sql import functions as F

        specs = self._specs()
        task_of = dict(self.task_of)
        if shuffle:
            mapping = F.create_map(*[x for tp, task_id in task_of.items()
                                     for x in (F.lit(f"{tp.topic}/{tp.partition}"), F.lit(task_id))])
            key = F.concat_ws("/", F.col("topic"), F.col("partition").cast("string"))
            task_col = F.coalesce(F.element_at(mapping, key), F.lit(UNASSIGNED)) if task_of else F.lit(UNASSIGNED)
            df = (df.withColumn("_task", task_col)
                  .repartition(max(1, self.task_count), "_task")
                  .sortWithinPartitions("_task", "topic", "partition", "offset")
                  .drop("_task"))
        rows = df.mapInArrow(_generations_function(specs, task_of), RESULT_SCHEMA).collect()
        return [GenerationResult.from_json(row["result"]) for row in rows]

    def _apply(self, results: list[GenerationResult]) -> None:
        """Fold the generations' results into the driver's offsets and write the commits."""
        failed: GenerationResult | None = None
        new_partitions: dict[TopicPartition, int] = {}
        to_write = dict(self._unwritten)
        for result in results:
            if result.pid:
                self.executor_pids.add(result.pid)
            self.records_read += result.records_read
            self.records_put += result.records_put
            for tp, end in result.seen.items():
                self.position[tp] = max(self.position.get(tp, end), end)
            for tp, first in result.unassigned.items():
                new_partitions[tp] = min(new_partitions.get(tp, first), first)
            if result.task_id == UNASSIGNED:
                continue
            for tp, offset in result.rewinds.items():
                self.committed[tp] = offset
            for tp, offset in result.committed.items():
                self.committed[tp] = offset
                to_write[tp] = offset
            self.paused[result.task_id] = set(result.paused)
            if result.error is not None and failed is None:
                failed = result
        if new_partitions:
            self._assign_new(new_partitions)
        if to_write:
            try:
                self._commit(to_write)
                self._unwritten = {}
            except Exception as e:  # as in Connect, a failed offset write is retried on the next commit
                log.error("%s: commit of offsets failed: %r", self.connector_name, e)
                self._unwritten = to_write
        if failed is not None:
            error = TaskFailedError(failed.error or "task failed", failed.task_id)
            error.trace = failed.trace or error.trace
            self.failure = error
            raise error

    def _assign_new(self, first_offsets: Mapping[TopicPartition, int]) -> None:
        current = {i: set() for i in range(self.task_count)}
        for tp, task_id in self.task_of.items():
            current[task_id].add(tp)
        for task_id, added in extend_assignment(current, dict(first_offsets)).items():
            log.info("%s: new partitions %s for task %d", self.connector_name, sorted(map(str, added)), task_id)
            for tp in added:
                self.task_of[tp] = task_id
                self.committed[tp] = first_offsets[tp]


def _generations_function(specs: Mapping[int, GenerationSpec], task_of: Mapping[TopicPartition, int]):
    """The ``mapInArrow`` function: one generation per task run of rows in a Spark partition."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        python_worker.install()  # the worker's next tasks skip re-reading pyspark's zips and jar
        for task_id, task_batches in group_by_task(batches, task_of, UNASSIGNED):
            if task_id == UNASSIGNED:
                result = _unassigned_result(task_batches)
            else:
                result = run_generation(specs[task_id], task_batches)
            yield pa.RecordBatch.from_pydict(
                {"task_id": [task_id], "result": [result.to_json()]},
                schema=pa.schema([("task_id", pa.int32()), ("result", pa.string())]),
            )

    return run


def _unassigned_result(batches: Iterator[pa.RecordBatch]) -> GenerationResult:
    """What rows of partitions without an owner tell the driver: where each starts and how far it was read."""
    result = GenerationResult(UNASSIGNED, pid=os.getpid())
    for batch in batches:
        for tp, (first, end) in offset_ranges(batch).items():
            result.unassigned[tp] = min(result.unassigned.get(tp, first), first)
            result.seen[tp] = max(result.seen.get(tp, end), end)
        result.records_read += batch.num_rows
        result.records_skipped += batch.num_rows
    return result
