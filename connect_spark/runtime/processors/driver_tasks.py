"""Long-lived tasks resident on the driver: what the three driver-side processors share.

A driver-resident task is Kafka Connect's task exactly: one instance sees every batch of its
partitions, may buffer across batches, and is asked on each commit tick which offsets are safe. This
module keeps the tasks (:class:`~connect_spark.runtime.tasks.loop.TaskUnit`), which task owns which partition
(:class:`~connect_spark.runtime.tasks.assignment.TaskAssignment`), how far each partition was delivered, the partitions a task
paused, and the rewinds that make the runner start a new query generation. The processors built on
it — :mod:`.driver_records`, :mod:`.driver_arrow`, :mod:`connect_spark.runtime.processors.driver_dataframes` — only say how a batch is
handed to a task.

Paused partitions: rows of a partition its task paused are not delivered; the partition is *held*
at the first offset not delivered, and when the task resumes it the runner re-reads it from there in
a new query generation (the other partitions continue from where they were).
"""

from __future__ import annotations

import logging
from typing import Any, Iterator, Mapping

import pyarrow as pa

from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.runtime.tasks.assignment import TaskAssignment
from connect_spark.runtime.processors.base import BatchProcessor, ProcessorSetup
from connect_spark.runtime.tasks.loop import TaskUnit, offset_ranges, select_rows

__all__ = ["DriverTasks"]

log = logging.getLogger(__name__)


class DriverTasks(BatchProcessor):
    """Driver-resident tasks and their partitions; subclasses implement :meth:`process`.

    Args:
        setup: what the runner assembled at start.
        task_configs: the configurations of the tasks to run (default: every one of ``setup``'s).
    """

    execution_mode = "driver"
    #: Whether an idle interval gives each task Connect's empty ``put`` (record tasks); bulk tasks only
    #: ever receive real batches.
    empty_puts = True

    def __init__(self, setup: ProcessorSetup, task_configs: list[dict[str, str]] | None = None) -> None:
        super().__init__()
        self.setup = setup
        self.name = setup.connector.name
        self.wait = setup.wait
        configs = setup.task_configs if task_configs is None else task_configs
        self.units: list[TaskUnit] = []
        for task_id, task_config in enumerate(configs):
            unit = TaskUnit(setup.connector, setup.worker, task_id, setup.task_class, task_config, setup.clock)
            unit.new_loop(setup.commit)
            self.units.append(unit)
        self.assignment = TaskAssignment(self.name, len(self.units))
        self.positions: dict[TopicPartition, int] = {}
        self.held: dict[TopicPartition, int] = {}

    # -- start ------------------------------------------------------------------------------

    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        for unit in self.units:
            unit.worker_task.start()
        self.positions = dict(positions)
        for task_id, owned in self.assignment.assign(positions).items():
            self.units[task_id].worker_task.open({tp: positions[tp] for tp in owned})
        for unit in self.units:
            self.positions.update(unit.worker_task.take_rewinds())
        return dict(self.positions)

    def assign_new(self, first_offsets: Mapping[TopicPartition, int]) -> None:
        """Open partitions seen for the first time (with their first offsets) on the task the range
        assignment names."""
        for task_id, added in self.assignment.extend(first_offsets).items():
            self.units[task_id].worker_task.open({tp: first_offsets[tp] for tp in added})

    # -- a batch ----------------------------------------------------------------------------

    def route(self, table: pa.Table) -> Iterator[tuple[TaskUnit, pa.RecordBatch, dict[TopicPartition, int]]]:
        """Each task's deliverable rows of ``table`` (a collected micro-batch, raw Kafka columns) and the
        offsets they consume, in task order.

        Partitions seen for the first time are assigned first; a partition its task paused is held at
        its delivered position and left out until resumed.
        """
        table = pa.RecordBatch.from_arrays([column.combine_chunks() for column in table.columns], schema=table.schema)
        ranges = offset_ranges(table)
        new = {tp: first for tp, (first, _) in ranges.items() if tp not in self.assignment.task_of}
        if new:
            self.assign_new(new)
        for unit in self.units:
            paused = unit.context.paused
            for tp, (first, _) in ranges.items():
                if tp in paused and tp not in self.held and tp in unit.worker_task.assignment:
                    self.held[tp] = self.positions.get(tp, first)
            owned = unit.worker_task.assignment
            rows = select_rows(table, ranges, owned, self.held.keys())
            consumed = {tp: end for tp, (_, end) in ranges.items() if tp in owned and tp not in self.held}
            yield unit, rows, consumed

    def deliver_table(self, table: pa.Table) -> None:
        """Deliver a micro-batch collected to the driver (raw Kafka columns) to the tasks owning its rows.

        The ``process`` of :mod:`.driver_records` and :mod:`.driver_arrow`: each task's rows
        (:meth:`route`) go to :meth:`deliver_rows`, then :meth:`after_delivery`; then
        :meth:`collect_rewinds`. Stops early, with nothing more delivered, when the connector is stopping.
        """
        self.batches += 1
        self.records_read += table.num_rows
        for unit, rows, consumed in list(self.route(table)):
            unit.worker_task.metrics.record_read(rows.num_rows)
            if not self.deliver_rows(unit, rows):  # the connector is stopping
                return
            self.after_delivery(unit, consumed)
        self.collect_rewinds()

    def deliver_rows(self, unit: TaskUnit, rows: pa.RecordBatch) -> bool:
        """Hand ``unit`` its rows of a batch; False when the connector is stopping.

        Implemented by the processors that use :meth:`deliver_table`.
        """
        raise NotImplementedError

    def after_delivery(self, unit: TaskUnit, consumed: Mapping[TopicPartition, int]) -> None:
        """Called after a task took its rows: remember how far it got, then the commit tick."""
        self.positions.update(consumed)
        unit.worker_task.maybe_commit()

    def collect_rewinds(self) -> None:
        """Seeks, failed ``pre_commit`` calls and resumed partitions: read them again in a new generation."""
        rewinds: dict[TopicPartition, int] = {}
        for unit in self.units:
            rewinds.update(unit.worker_task.take_rewinds())
            resumed = [tp for tp in self.held if tp in unit.worker_task.assignment
                       and tp not in unit.context.paused]
            for tp in resumed:
                rewinds.setdefault(tp, self.held.pop(tp))
        if rewinds:
            log.info("%s: re-reading %s in a new query generation", self.name, offsets_text(rewinds))
            self.restart_from = {**self.positions, **rewinds}

    # -- between batches --------------------------------------------------------------------

    def idle(self) -> None:
        for unit in self.units:
            worker_task = unit.worker_task
            if worker_task.assignment and not worker_task.paused_for_redelivery:
                if self.empty_puts:  # Connect's empty put
                    worker_task.deliver([], {})
                worker_task.maybe_commit()
        self.collect_rewinds()

    def take_restart(self) -> dict[TopicPartition, int] | None:
        positions = super().take_restart()
        if positions is not None:
            self.positions = dict(positions)
        return positions

    def resume_positions(self) -> dict[TopicPartition, int]:
        return dict(self.positions)

    # -- stop -------------------------------------------------------------------------------

    def interrupt(self) -> None:
        for unit in self.units:  # a record in a retry back-off must not hold the runner's lock forever
            unit.plugins.stop()

    def close(self) -> None:
        """For each task: final ``pre_commit`` → ``close`` → commit, then ``stop``, then its plugins."""
        for unit in self.units:
            worker_task = unit.worker_task
            try:
                if worker_task.started:
                    worker_task.close_all()
            except Exception as e:
                log.error("%s: final commit of task %d failed: %r", self.name, worker_task.task_id, e)
            if worker_task.started:
                worker_task.stop()
            unit.plugins.close()

    def resident_tasks(self) -> list[Any]:
        return [unit.task for unit in self.units]

    def task_metrics(self) -> dict[int | str, dict[str, Any]]:
        tasks: dict[int | str, dict[str, Any]] = {}
        for unit in self.units:
            worker_task = unit.worker_task
            values = worker_task.metrics.as_dict()
            values["partition-count"] = len(worker_task.assignment)
            values["offset-commit-seq-no"] = worker_task.commit_seqno
            values.update(unit.plugins.error_handler.metrics.as_dict())
            tasks[worker_task.task_id] = values
        return tasks
