"""Record tasks on the driver: Kafka Connect's exact semantics, one long-lived instance per task.

Chosen by :func:`~connect_spark.runtime.processors.base.choose_processor` for a record ``SinkTask`` in driver mode. Per
micro-batch (called by the runner inside ``foreachBatch``) the batch is collected to the driver as
Arrow, split by owning task (:meth:`~.driver_tasks.DriverTasks.deliver_table`), and each task gets one
``put`` — possibly empty, as Connect's poll loop gives — followed by its commit tick. A
``RetriableException`` delivers the same records again after the task's back-off, with the commit
tick still running in between, as in Connect.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from connect_spark.runtime.conversion.direct_records import DirectRecordBuilder
from connect_spark.runtime.processors.driver_tasks import DriverTasks
from connect_spark.runtime.processors.base import ProcessorSetup
from connect_spark.runtime.tasks.loop import TaskUnit, deliver_records

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["DriverRecordProcessor"]

log = logging.getLogger(__name__)


class DriverRecordProcessor(DriverTasks):
    """Record tasks resident on the driver (see the module docstring)."""

    def __init__(self, setup: ProcessorSetup) -> None:
        super().__init__(setup)
        self.direct = {unit.task_id: DirectRecordBuilder.for_converter(unit.plugins.converter) for unit in self.units}

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        self.deliver_table(batch.toArrow())

    def deliver_rows(self, unit: TaskUnit, rows: "pa.RecordBatch") -> bool:
        """One ``put`` of the task's rows, also when there are none (Connect's poll loop)."""
        _, accepted = deliver_records(unit, rows, self.wait, self.direct[unit.task_id],
                                      between=unit.worker_task.maybe_commit)
        return accepted
