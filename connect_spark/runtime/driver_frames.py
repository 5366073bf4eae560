"""DataFrame bulk tasks: one :class:`~connect_spark.api.bulk.DataFrameSinkTask` on the driver, whole batches.

Chosen by :func:`~.processor.choose_processor` for a ``DataFrameSinkTask`` in either execution mode.
One instance owns every partition (Spark parallelises its DataFrame work, so ``tasks.max`` does not
apply). Per micro-batch (called by the runner inside ``foreachBatch``):

1. :func:`connect_spark.runtime.dataframe_mode.build_frame_batch` converts the batch (vectorized plan
   where it proves exact, the per-record path for the rest; tolerated records go to the log / dead
   letter queue);
2. partitions seen for the first time are assigned; rows the task's ``rejected_rows`` names (an upsert
   record without a usable key) are reported under ``errors.*`` and left out of the frame
   (:func:`~.frame_errors.drop_rejected_rows`);
3. :func:`~.task_loop.hand_over`: dead letter queue writes acknowledged, then ``put_dataframe`` — the
   sink may commit data and offsets here (the Delta sink's table commit) — with the retriable back-off;
4. the commit tick (:meth:`~.worker_task.WorkerSinkTask.maybe_commit`), then the batch's cache is released.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from connect_spark.runtime.dataframe_mode import build_frame_batch
from connect_spark.runtime.frame_errors import drop_rejected_rows
from connect_spark.runtime.driver_tasks import DriverTasks
from connect_spark.runtime.processor import ProcessorSetup
from connect_spark.runtime.task_loop import hand_over

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
        self.plan = compile_plan(setup.connector, setup.worker)

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        unit = self.units[0]
        worker_task = unit.worker_task
        # 1.
        frame_batch = build_frame_batch(self.spark, batch, self.plan, unit.plugins.converter)
        try:
            self.batches += 1
            read = sum(frame_batch.consumed[tp] - frame_batch.first[tp] for tp in frame_batch.consumed)
            self.records_read += read
            worker_task.metrics.record_read(read)
            # 2.
            new = {tp: off for tp, off in frame_batch.first.items() if tp not in self.assignment.task_of}
            if new:
                self.assign_new(new)
            # 3.
            frame = frame_batch.frame
            if frame is not None:  # rows the task names as unwritable go to errors.* instead
                frame = drop_rejected_rows(unit.task, frame, batch, unit.plugins.error_handler)
            put = (lambda: unit.task.put_dataframe(frame, batch_id)) if frame is not None else (lambda: None)
            if not hand_over(unit, put, frame_batch.consumed, self.wait):
                return  # the connector is stopping
            worker_task.metrics.record_sent(read)
            # 4.
            self.after_delivery(unit, frame_batch.consumed)
            self.collect_rewinds()
        finally:
            frame_batch.release()
