"""Arrow bulk tasks on the driver: one long-lived :class:`~connect_spark.api.bulk.ArrowSinkTask` per task.

Chosen by :func:`~connect_spark.runtime.processors.base.choose_processor` for an ``ArrowSinkTask`` in driver mode (the testing
harness's default). Per micro-batch (called by the runner inside ``foreachBatch``) the batch is
collected to the driver as Arrow and split by owning task
(:meth:`~.driver_tasks.DriverTasks.deliver_table`), and each task with rows gets one ``put_arrow`` of
its converted rows (:func:`~connect_spark.runtime.tasks.loop.deliver_arrow`: dead letter queue writes acknowledged first,
then the hand-over with the retriable back-off), then its commit tick.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from connect_spark.runtime.conversion.record_frames import ArrowFrameBuilder
from connect_spark.runtime.processors.driver_tasks import DriverTasks
from connect_spark.runtime.processors.base import ProcessorSetup
from connect_spark.runtime.tasks.loop import TaskUnit, deliver_arrow

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["DriverArrowProcessor"]

log = logging.getLogger(__name__)


class DriverArrowProcessor(DriverTasks):
    """Arrow bulk tasks resident on the driver (see the module docstring)."""

    empty_puts = False

    def __init__(self, setup: ProcessorSetup) -> None:
        super().__init__(setup)
        self.frames = {unit.task_id: ArrowFrameBuilder.for_converter(unit.plugins.converter) for unit in self.units}

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        self.deliver_table(batch.toArrow())

    def deliver_rows(self, unit: TaskUnit, rows: "pa.RecordBatch") -> bool:
        """One ``put_arrow`` of the task's converted rows; none for a task without rows."""
        if rows.num_rows:
            put, accepted = deliver_arrow(unit, rows, self.wait, self.frames[unit.task_id])
            if not accepted:
                return False
            unit.worker_task.metrics.record_sent(put)
        return True
