"""Record and Arrow tasks on executors, driver side: each micro-batch runs every task's generation there.

Per micro-batch the driver

1. folds in a bounded Kafka read of every partition whose committed offset is behind how far records
   were read (``[committed, position)``: records ``pre_commit`` did not return, a task's rewind, a
   partition that appeared mid-run), so re-delivery never needs a query restart;
2. routes rows to their task: when every task owns at most one partition and nothing is folded in,
   Spark's Kafka partitions already are the task slices; otherwise rows are shuffled by task id and
   sorted by (task, topic, partition, offset);
3. for an :class:`~connect_spark.api.bulk.ArrowSinkTask` whose converters and transforms compile to a
   vectorized plan (and are not ByteArray/String converters without transforms, whose frames the workers
   build from the raw columns alone) (:func:`connect_spark.columnar.plan.compile_plan`), projects the rows through it
   (:meth:`~connect_spark.columnar.plan.PlanOutput.split`): Spark converts them, and the tasks receive
   the good rows as a frame and convert only the others per record (:mod:`connect_spark.runtime.processors.executor_vectorized`). The plan
   learns a JSON shape from a small sample of the first batch and reuses it; a batch where more than
   ``RELEARN_FALLBACK_SHARE`` of the rows fell back makes the next batch learn again;
4. runs ``mapInArrow`` with :func:`connect_spark.runtime.tasks.generation.run_generation` per task and
   collects one small JSON result per task (never records: the driver holds no batch). When headers
   are not read (:mod:`connect_spark.runtime.conversion.header_reads`) the ``headers`` column is left out of what Spark serializes to
   the Python workers, which put an all-null one back (every record then has no headers, as it would
   with the column);
5. commits what each task's ``pre_commit`` made committable, remembers rewinds, pauses and new
   partitions, and fails the connector with the task's trace when a task failed (after committing
   what the other tasks and the failed task's earlier ``put`` calls made safe).

Works under Spark Connect: only DataFrame operations, ``mapInArrow`` and ``collect``.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import pyarrow as pa

from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.columnar.records import FRAME_HEADERS_TYPE
from connect_spark.metrics.sink_task import SinkTaskMetrics
from connect_spark.runtime.python_worker import zip_reads
from connect_spark.runtime.tasks.assignment import TaskAssignment
from connect_spark.runtime.tasks.generation import GenerationResult, GenerationSpec, group_by_task, run_generation
from connect_spark.runtime.processors.base import BatchProcessor, ProcessorSetup
from connect_spark.runtime.processors.executor_vectorized import FrameSchemas
from connect_spark.runtime.tasks.loop import offset_ranges
from connect_spark.runtime.tasks.worker_task import TaskFailedError
from connect_spark.streaming.source import read_kafka_range

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ExecutorTasks", "RESULT_SCHEMA", "with_headers"]

log = logging.getLogger(__name__)

#: The ``mapInArrow`` output: one row per task generation.
RESULT_SCHEMA = "task_id int, result string"

#: Task id of rows whose partition has no owner yet; they are reported, never delivered.
UNASSIGNED = -1


class ExecutorTasks(BatchProcessor):
    """The driver's side of a connector's tasks in executor mode (record and Arrow tasks).

    Chosen by :func:`~connect_spark.runtime.processors.base.choose_processor`; the runner calls :meth:`process` per micro-batch.
    The tasks themselves live in the executors' Python workers (:mod:`connect_spark.runtime.tasks.generation`); the driver keeps
    the assignment, the committed offsets and how far each partition was read.
    """

    execution_mode = "executor"
    collects_batches = False

    def __init__(self, setup: ProcessorSetup) -> None:
        super().__init__()
        connector, worker = setup.connector, setup.worker
        self.spark = setup.spark
        self.connector_name = connector.name
        self.task_class = setup.task_class
        self.task_configs = [dict(c) for c in setup.task_configs]
        self.connector_props = dict(connector.resolved)
        self.worker_props = dict(worker.resolved)
        self.source_options = dict(setup.client_config)
        self._commit = setup.commit
        self.offset_flush_interval_ms = worker.offset_flush_interval_ms
        self.include_headers = setup.include_headers
        self.run_id = uuid.uuid4().hex
        self.assignment = TaskAssignment(self.connector_name, len(self.task_configs))
        self.committed: dict[TopicPartition, int] = {}
        self.position: dict[TopicPartition, int] = {}
        self.paused: dict[int, set[TopicPartition]] = {}
        self._unwritten: dict[TopicPartition, int] = {}
        self.failure: TaskFailedError | None = None
        self.records_put = 0
        self.executor_pids: set[int] = set()
        self.metrics = SinkTaskMetrics(setup.clock)  # all tasks' totals in one group
        self.plan = None
        if issubclass(self.task_class, ArrowSinkTask) and not _frames_by_arrow(connector, worker):
            from connect_spark.columnar.plan import compile_plan

            self.plan = compile_plan(connector, worker)
        self.fallback_rows = 0

    @property
    def task_count(self) -> int:
        return len(self.task_configs)

    @property
    def task_of(self) -> dict[TopicPartition, int]:
        return self.assignment.task_of

    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Assign partitions to task ids (Connect's range assignment); ``positions`` are committed."""
        self.assignment.assign(positions)
        self.committed = dict(positions)
        self.position = dict(positions)
        return dict(positions)

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
                     offsets_text({tp: f"{a}..{b}" for tp, (a, b) in pending.items()}))
            frames.append(read_kafka_range(self.spark, self.source_options, pending, self.include_headers))
        if not frames:
            return
        df = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        read_before, put_before = self.records_read, self.records_put
        frame_schemas = None
        if self.plan is not None:
            output = self.plan.apply(df)
            frame_schemas = FrameSchemas(output.key_schema, output.value_schema, output.null_key_schema,
                                         output.null_value_schema)
            df = output.split()
        results = self._run(df, shuffle=bool(pending) or self.assignment.shared(), frame_schemas=frame_schemas)
        if self.plan is not None:
            self._check_samples(results)
        self._apply(results)
        self.batches += 1
        self.metrics.record_read(self.records_read - read_before)
        self.metrics.record_sent(self.records_put - put_before)

    def idle(self) -> None:
        """No batch for a trigger interval: deliver what is owed (``[committed, position)``) now."""
        if self.pending_ranges():
            self.process(None, -1)

    def resume_positions(self) -> dict[TopicPartition, int]:
        """After a pause the query starts again from the committed offsets."""
        self.position = dict(self.committed)
        return dict(self.committed)

    def drain(self, lock) -> None:
        """After an AvailableNow run: re-deliver ``[committed, position)`` until the tasks commit it all,
        or a round commits nothing more (what stays uncommitted is delivered again on the next run)."""
        while self.pending_ranges():
            before = dict(self.committed)
            with lock:
                self.process(None, -1)
            if self.committed == before:
                log.info("%s: tasks did not commit %s; it is delivered again on the next run", self.connector_name,
                         offsets_text({tp: a for tp, (a, _) in self.pending_ranges().items()}))
                return

    def close(self) -> None:
        """Nothing on the driver: executors' task instances end with their Python workers."""

    def task_metrics(self) -> dict[int | str, dict[str, Any]]:
        values = self.metrics.as_dict()
        values["partition-count"] = len(self.position)
        return {"all": values}

    def _check_samples(self, results: list[GenerationResult]) -> None:
        """After a batch converted with shapes learned earlier: learn again when too many rows fell back."""
        from connect_spark.runtime.processors.dataframe_batches import RELEARN_FALLBACK_SHARE

        fallback = sum(r.records_fallback for r in results)
        rows = sum(r.records_read for r in results)
        self.fallback_rows += fallback
        if fallback and self.plan.reused_samples and fallback > RELEARN_FALLBACK_SHARE * rows:
            log.info("%s: %d of %d records did not match the shapes learned from earlier batches; the next batch "
                     "learns them again", self.connector_name, fallback, rows)
            self.plan.forget_samples()

    def _specs(self, frame_schemas: FrameSchemas | None = None) -> dict[int, GenerationSpec]:
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
                frame_schemas=frame_schemas,
            )
            for task_id, positions in owned.items()
        }

    def _run(self, df: "DataFrame", shuffle: bool, frame_schemas: FrameSchemas | None = None) -> list[GenerationResult]:
        from pyspark.sql import functions as F

        specs = self._specs(frame_schemas)
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
        if not self.include_headers:  # an empty list per row: nothing to ship to the workers
            df = df.drop("headers", "frame_headers")
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
            for added in self.assignment.extend(new_partitions).values():
                for tp in added:
                    self.committed[tp] = new_partitions[tp]
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


def _frames_by_arrow(connector: Any, worker: Any) -> bool:
    """True when the workers build an Arrow task's frames from the raw columns themselves (ByteArray or UTF-8
    String converters, no transforms: :class:`~connect_spark.runtime.conversion.record_frames.ArrowFrameBuilder`), so a
    Spark projection through the plan would only add work."""
    from connect_spark import plugins
    from connect_spark.runtime.conversion.record_frames import column_kind

    if connector.transform_configs():
        return False
    for which in ("key.converter", "value.converter"):
        class_name, props = connector.converter_config(which, worker)
        converter = plugins.instantiate("converter", class_name, key=which)
        converter.configure(props, which == "key.converter")
        if column_kind(converter) is None:
            return False
    return True


def _generations_function(specs: Mapping[int, GenerationSpec], task_of: Mapping[TopicPartition, int]):
    """The ``mapInArrow`` function: one generation per task run of rows in a Spark partition."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        zip_reads.install()  # the worker's next tasks skip re-reading pyspark's zips and jar
        for task_id, task_batches in group_by_task(map(with_headers, batches), task_of, UNASSIGNED):
            if task_id == UNASSIGNED:
                result = _unassigned_result(task_batches)
            else:
                result = run_generation(specs[task_id], task_batches)
            yield pa.RecordBatch.from_pydict(
                {"task_id": [task_id], "result": [result.to_json()]},
                schema=pa.schema([("task_id", pa.int32()), ("result", pa.string())]),
            )

    return run


def with_headers(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with a ``headers`` column: an all-null one when Spark left it out (headers not read)."""
    if batch.schema.get_field_index("headers") >= 0:
        return batch
    return pa.RecordBatch.from_arrays([*batch.columns, pa.nulls(batch.num_rows, FRAME_HEADERS_TYPE)],
                                      names=[*batch.schema.names, "headers"])


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
