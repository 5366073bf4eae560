"""DataFrame bulk tasks: one :class:`~connect_spark.api.bulk.DataFrameSinkTask` on the driver, whole batches.

Chosen by :func:`~connect_spark.runtime.processors.base.choose_processor` for a ``DataFrameSinkTask`` in either execution mode.
One instance owns every partition (Spark parallelises its DataFrame work, so ``tasks.max`` does not
apply). Per micro-batch (called by the runner inside ``foreachBatch``):

1. the batch's offset ranges are read from the query's offset log (no Spark job);
2. partitions seen for the first time are assigned;
3. :func:`~connect_spark.runtime.tasks.loop.hand_over`: dead letter queue writes acknowledged, then
   :meth:`connect_spark.runtime.processors.dataframe_batches.FrameBatches.deliver` converts the batch (vectorized plan
   where it proves exact, in one Spark pass with the write when the sink's writes are atomic, the rows it
   cannot prove converted per record by that same pass on classic sessions,
   :mod:`~connect_spark.runtime.processors.fallback_in_write`; the per-record path for the rest, tolerated
   records to the log / dead letter queue, whose writes are acknowledged before the frame is handed over); rows the task's ``rejected_rows`` names (an upsert
   record without a usable key) are reported under ``errors.*`` and left out of the frame
   (:func:`~connect_spark.runtime.processors.rejected_rows.drop_rejected_rows`; in a one-pass write such a row
   abandons the write instead, :func:`~connect_spark.runtime.processors.rejected_rows.guard_rejected_rows`, and the
   batch is handed over the checked way); then ``put_dataframe_batch`` — the sink may commit data
   and offsets here (the Delta sink's table commit) — with the retriable back-off;
4. the commit tick (:meth:`~connect_spark.runtime.tasks.worker_task.WorkerSinkTask.maybe_commit`).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Mapping

from kafka import KafkaConsumer

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion.batch_sample import BatchSampler
from connect_spark.runtime.processors.dataframe_batches import FrameBatches
from connect_spark.runtime.processors.fallback_in_write import InWriteConversion, in_write_supported
from connect_spark.runtime.processors.driver_tasks import DriverTasks
from connect_spark.runtime.processors.rejected_rows import drop_rejected_rows, guard_rejected_rows
from connect_spark.runtime.processors.base import ProcessorSetup
from connect_spark.runtime.tasks.loop import hand_over
from connect_spark.kafka.clients import kafka_client_kwargs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DataFrameProcessor"]

log = logging.getLogger(__name__)


class DataFrameProcessor(DriverTasks):
    """A DataFrame bulk task resident on the driver (see the module docstring)."""

    empty_puts = False

    def __init__(self, setup: ProcessorSetup) -> None:
        from connect_spark.columnar.plan import compile_plan

        if len(setup.task_configs) > 1:
            log.info("%s: %s takes whole micro-batches as DataFrames; running 1 task instead of %d",
                     setup.connector.name, setup.task_class.__name__, len(setup.task_configs))
        super().__init__(setup, setup.task_configs[:1])
        self.spark = setup.spark
        self.plan = compile_plan(setup.connector, setup.worker, frame_task=True)  # the DataFrame task takes the frame
        # the first batch's shapes are learned from its head read with a Kafka client, not a Spark job
        servers = setup.client_config.get("bootstrap.servers")
        sampler = None
        if self.plan is not None and servers:
            client_kwargs = kafka_client_kwargs(setup.client_config, KafkaConsumer)
            client_kwargs.setdefault("bootstrap_servers", servers)
            sampler = BatchSampler(self.spark, client_kwargs)
        in_write = None
        if self.plan is not None and in_write_supported(self.spark):
            in_write = InWriteConversion(self.spark, setup.connector.resolved, setup.worker.resolved,
                                         uuid.uuid4().hex)
        self.frames = FrameBatches(self.spark, self.plan, self.units[0].plugins.converter, sampler, in_write)
        self.batch_ranges = setup.batch_ranges

    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runner before the query starts: opens the task, then has the sampler read the first
        batch's head ahead while the query starts (the plan learns its shapes from it)."""
        positions = super().open(positions)
        if self.frames.sampler is not None and self.plan.needs_sample():
            self.frames.sampler.prefetch(positions)
        return positions

    @property
    def collects_batches(self) -> bool:  # type: ignore[override]
        """Without a plan every record comes to the driver; with one, only rows needing the per-record path."""
        return self.plan is None

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        unit = self.units[0]
        worker_task = unit.worker_task
        # 1.
        ranges = self.batch_ranges(batch_id)
        if ranges is None:  # not in the log (e.g. a partition that appeared mid-query): one aggregation
            from connect_spark.columnar.plan import batch_offset_ranges

            ranges = batch_offset_ranges(batch)
        first = {tp: start for tp, (start, _) in ranges.items()}
        consumed = {tp: end for tp, (_, end) in ranges.items()}
        self.batches += 1
        read = sum(end - start for start, end in ranges.values())
        self.records_read += read
        worker_task.metrics.record_read(read)
        # 2.
        new = {tp: off for tp, off in first.items() if tp not in self.assignment.task_of}
        if new:
            self.assign_new(new)
        # 3.
        task, frames = unit.task, self.frames

        def write(frame: "DataFrame") -> None:
            # rows the task names as unwritable go to errors.* instead, acknowledged before the write
            frame = drop_rejected_rows(task, frame, batch, unit.plugins.error_handler)
            unit.await_dead_letters()
            task.put_dataframe_batch(frame, batch_id, ranges)

        def write_guarded(frame: "DataFrame") -> None:
            # one pass: a row the task rejects abandons the write, and the batch is handed over the checked way
            task.put_dataframe_batch(guard_rejected_rows(task, frame), batch_id, ranges)

        def put() -> None:
            frames.deliver(batch, ranges, write, task.writes_atomically(), unit.await_dead_letters,
                           lambda frame: task.rejected_rows(frame) is None, write_guarded)

        if not hand_over(unit, put, consumed, self.wait):
            return  # the connector is stopping
        worker_task.metrics.record_sent(read)
        # 4.
        self.after_delivery(unit, consumed)
        self.collect_rewinds()
