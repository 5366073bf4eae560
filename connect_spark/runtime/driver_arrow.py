"""Arrow bulk tasks on the driver: one long-lived :class:`~connect_spark.api.bulk.ArrowSinkTask` per task.

Chosen by :func:`~.processor.choose_processor` for an ``ArrowSinkTask`` in driver mode (the testing
harness's default). Per micro-batch (called by the runner inside ``foreachBatch``) the batch is
collected to the driver as Arrow, split by owning task, and each task with rows gets one
``put_arrow`` of its converted rows (:func:`~.task_loop.deliver_arrow`: dead letter queue writes
acknowledged first, then the hand-over with the retriable back-off), then its commit tick.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from connect_spark.runtime.arrow_frames import ArrowFrameBuilder
from connect_spark.runtime.driver_tasks import DriverTasks
from connect_spark.runtime.processor import ProcessorSetup
from connect_spark.runtime.task_loop import deliver_arrow

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

    def deliver_table(self, table: "pa.Table") -> None:
        """Deliver a micro-batch collected to the driver (raw Kafka columns) to the tasks owning its rows."""
        self.batches += 1
        self.records_read += table.num_rows
        for unit, rows, consumed in list(self.route(table)):
            unit.worker_task.metrics.record_read(rows.num_rows)
            if rows.num_rows:
                put, accepted = deliver_arrow(unit, rows, self.wait, self.frames[unit.task_id])
                if not accepted:  # the connector is stopping
                    return
                unit.worker_task.metrics.record_sent(put)
            self.after_delivery(unit, consumed)
        self.collect_rewinds()
