"""The interface between the connector runner and the processor of its task shape, and how one is chosen.

The runner (:mod:`connect_spark.runtime.worker.connector_runner`) keeps the lifecycle; everything that happens to a micro-batch
is the processor's, one per task shape, chosen once at start by :func:`choose_processor`:

=================================  =================  ==============================================
task shape                          execution mode     processor
=================================  =================  ==============================================
``SinkTask`` (records)              executor           :class:`~connect_spark.runtime.processors.executor_tasks.ExecutorTasks`
``SinkTask`` (records)              driver             :class:`.driver_records.DriverRecordProcessor`
``ArrowSinkTask``                   executor           :class:`~connect_spark.runtime.processors.executor_tasks.ExecutorTasks`
``ArrowSinkTask``                   driver             :class:`.driver_arrow.DriverArrowProcessor`
``DataFrameSinkTask``               either             :class:`~connect_spark.runtime.processors.driver_dataframes.DataFrameProcessor`
``SinkTask`` / ``ArrowSinkTask``    realtime           :class:`~connect_spark.runtime.realtime.processor.RealtimeProcessor`
=================================  =================  ==============================================

A ``DataFrameSinkTask`` always runs on the driver (its ``put_dataframe`` hands work to Spark, which
runs it on the executors); the pair with ``executor`` is allowed and logged; with ``realtime`` it is
refused at validation (:mod:`connect_spark.streaming.realtime_requirements`). Every other pair works.

Threads: the runner calls :meth:`BatchProcessor.process` from Spark's streaming thread and
:meth:`BatchProcessor.idle` from the supervisor thread, never both at once (the runner's lock), and
:meth:`BatchProcessor.interrupt` from any thread.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.api.bulk import ArrowSinkTask, DataFrameSinkTask
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.tasks.loop import Wait

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["BatchProcessor", "ProcessorSetup", "choose_processor"]

log = logging.getLogger(__name__)


@dataclass
class ProcessorSetup:
    """What every processor is built from (assembled once by the runner at start).

    Attributes:
        spark: the session batches run in.
        connector, worker: the configurations.
        task_class: the connector's task class.
        task_configs: one configuration per task, from the connector's ``task_configs``.
        client_config: Kafka client settings with Kafka's names (for bounded re-reads).
        include_headers: whether the stream reads record headers.
        commit: writes offsets to the offset store (and the runner's view of them).
        wait: the back-off wait between ``put`` attempts; returns False when the connector stops.
        clock: monotonic seconds.
        batch_ranges: per batch id of the running query, the first and next offset per topic-partition
            the batch read, from the query's offset log (``None`` when it cannot say).
        observed: takes offsets committed without ``commit`` (the real-time mode's executors commit
            themselves) into the runner's view of the store (lag metrics, stall detection, freshness).
    """

    spark: "SparkSession"
    connector: "ConnectorConfig"
    worker: "WorkerConfig"
    task_class: type
    task_configs: list[dict[str, str]]
    client_config: Mapping[str, Any]
    include_headers: bool
    commit: Callable[[Mapping[TopicPartition, int]], None]
    wait: Wait
    clock: Callable[[], float]
    batch_ranges: Callable[[int], "dict[TopicPartition, tuple[int, int]] | None"] = lambda batch_id: None
    observed: Callable[[Mapping[TopicPartition, int]], None] = lambda offsets: None


class BatchProcessor(abc.ABC):
    """What the runner calls; one implementation per task shape (see the module docstring).

    Attributes:
        execution_mode: ``driver`` or ``executor``, as the metrics report it.
        collects_batches: every record of a batch comes to the driver (the runner picks the default
            batch bound from it, see :meth:`~connect_spark.config.worker.WorkerConfig.max_offsets_per_trigger_for`).
        batches, records_read: counters for the metrics.
        restart_from: set (by :meth:`process` or :meth:`idle`) when records must be read again from
            other offsets: the runner stops the query between batches and starts a new generation
            from these positions (see :meth:`take_restart`).
    """

    execution_mode = "driver"
    collects_batches = True

    def __init__(self) -> None:
        self.batches = 0
        self.records_read = 0
        self.restart_from: dict[TopicPartition, int] | None = None

    @abc.abstractmethod
    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called once by the runner's ``start``: start the tasks, open the partitions at ``positions``
        (their next offsets). Returns where the first query generation starts (seeks applied)."""

    @abc.abstractmethod
    def process(self, batch: "DataFrame", batch_id: int) -> None:
        """Called by the runner for each micro-batch (inside ``foreachBatch``), under the runner's lock."""

    @abc.abstractmethod
    def idle(self) -> None:
        """Called by the runner under its lock when no batch came for a trigger interval: Connect's empty
        poll (commit tick, re-deliveries due)."""

    def take_restart(self) -> dict[TopicPartition, int] | None:
        """Called by the runner between batches: the positions of the next query generation, then cleared."""
        positions, self.restart_from = self.restart_from, None
        return positions

    @abc.abstractmethod
    def resume_positions(self) -> dict[TopicPartition, int]:
        """Called by the runner's ``resume``: where the query starts again after a pause."""

    def drain(self, lock: Any) -> None:
        """Called by the runner once an AvailableNow query ended: deliver what is still owed. Default: nothing."""

    def interrupt(self) -> None:
        """Called by the runner as soon as a stop is asked: interrupt retries in progress. Default: nothing."""

    @abc.abstractmethod
    def close(self) -> None:
        """Called by the runner's ``stop`` under its lock: final commits, ``close``, ``stop``, plugins closed."""

    def query_generations(self, *args: Any, **kwargs: Any) -> Any:
        """Called by the runner once at start: the connector's query (arguments of
        :class:`~connect_spark.streaming.query.QueryGenerations`). Default: micro-batches through ``foreachBatch``."""
        from connect_spark.streaming.query import QueryGenerations

        return QueryGenerations(*args, **kwargs)

    def resident_tasks(self) -> list[Any]:
        """The task instances living on the driver for the processor's life (the dead letter replay talks to
        them); none for tasks that live on the executors. Default: none."""
        return []

    @abc.abstractmethod
    def task_metrics(self) -> dict[int | str, dict[str, Any]]:
        """Called from REST threads: per task (or ``all``), Kafka Connect's sink-task metric values."""


def choose_processor(setup: ProcessorSetup,
                     read_committed: Callable[[], Mapping[TopicPartition, int]] | None = None) -> BatchProcessor:
    """The processor for the connector's task shape and execution mode (see the module docstring);
    ``read_committed`` reads the connector's committed offsets (the real-time processor resumes from them)."""
    mode = setup.connector.execution_mode(setup.worker)
    task_class = setup.task_class
    if mode == "realtime":
        from connect_spark.runtime.realtime.processor import RealtimeProcessor

        return RealtimeProcessor(setup, read_committed)
    if issubclass(task_class, DataFrameSinkTask):
        from connect_spark.runtime.processors.driver_dataframes import DataFrameProcessor

        if mode == "executor":
            log.info("%s: %s takes whole micro-batches as DataFrames on the driver (Spark runs its work on the "
                     "executors)", setup.connector.name, task_class.__name__)
        return DataFrameProcessor(setup)
    if mode == "executor":
        from connect_spark.runtime.processors.executor_tasks import ExecutorTasks

        return ExecutorTasks(setup)
    if issubclass(task_class, ArrowSinkTask):
        from connect_spark.runtime.processors.driver_arrow import DriverArrowProcessor

        return DriverArrowProcessor(setup)
    from connect_spark.runtime.processors.driver_records import DriverRecordProcessor

    return DriverRecordProcessor(setup)
