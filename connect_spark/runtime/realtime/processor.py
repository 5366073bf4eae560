"""The driver's side of a connector in ``task.execution.mode=realtime``: checks, the writer, nothing per batch.

Chosen by :func:`~connect_spark.runtime.processors.base.choose_processor` for record and Arrow tasks in real-time
mode. The tasks live in the executors' Python workers, one per Kafka partition
(:mod:`connect_spark.runtime.realtime.partition_task`), and commit from there
(:mod:`connect_spark.runtime.realtime.commits`); the driver

1. refuses, as the connector starts, a session with fewer task slots than the topics' partitions (validation
   could not count the partitions: :func:`~connect_spark.streaming.realtime_requirements.realtime_refusals`);
2. hands the runner's query (:class:`~connect_spark.streaming.realtime_query.RealtimeQueryGenerations`, see
   :meth:`query_generations`) a :class:`~connect_spark.runtime.realtime.writer.RealtimeWriter` for each
   generation (:meth:`batch_function`, the same hook a Spark Connect processor uses for its ``foreachBatch``
   function), carrying the validated configurations and where the generation starts;
3. on the runner's idle ticks (every second or so: no ``foreachBatch`` ever comes), reads what the tasks
   committed from the offset store and hands what changed to the runner's view (lag metrics, stall detection);
4. after a pause, starts the next generation at the offsets the tasks committed (the offset store).

Spark never calls ``foreachBatch`` in this mode, so :meth:`process` is never called; a failed partition task fails
the query, which the runner reports as the connector's failure.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.processors.base import BatchProcessor, ProcessorSetup
from connect_spark.runtime.realtime.partition_task import RealtimeSpec
from connect_spark.runtime.realtime.writer import RealtimeWriter
from connect_spark.runtime.tasks.assignment import TaskAssignment

__all__ = ["RealtimeProcessor"]

log = logging.getLogger(__name__)


class RealtimeProcessor(BatchProcessor):
    """Record and Arrow tasks in Spark's real-time mode (see the module docstring).

    Args:
        setup: what every processor is built from.
        read_committed: the connector's committed offsets in the offset store (for :meth:`resume_positions`).
    """

    execution_mode = "realtime"
    collects_batches = False

    def __init__(self, setup: ProcessorSetup,
                 read_committed: Callable[[], Mapping[TopicPartition, int]] | None = None) -> None:
        super().__init__()
        self.setup = setup
        self.read_committed = read_committed
        self.run_id = uuid.uuid4().hex
        self.assignment = TaskAssignment(setup.connector.name, len(setup.task_configs))
        self.positions: dict[TopicPartition, int] = {}
        self.seen_committed: dict[TopicPartition, int] = {}

    def query_generations(self, *args: Any, **kwargs: Any) -> Any:
        """The runner's query: a real-time one (same arguments as :class:`~connect_spark.streaming.query.QueryGenerations`)."""
        from connect_spark.streaming.realtime_query import RealtimeQueryGenerations

        return RealtimeQueryGenerations(*args, **kwargs)

    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Check the task slots against the partitions, assign partitions to task ids; start at ``positions``."""
        from connect_spark.jvm.spark_versions import running_versions
        from connect_spark.streaming.realtime_requirements import realtime_refusals, task_slots

        setup = self.setup
        conf = dict(setup.spark.sparkContext.getConf().getAll())
        conf["spark.master"] = setup.spark.sparkContext.master
        refusals = realtime_refusals(setup.connector.name, setup.task_class, running_versions().spark,
                                     task_slots(conf), len(positions))
        if refusals:
            raise ConnectException("; ".join(refusals))
        self.assignment.assign(positions)
        self.positions = dict(positions)
        return dict(positions)

    def batch_function(self, positions: Mapping[TopicPartition, int]) -> RealtimeWriter:
        """Called by the runner as a query generation starts: the writer Spark pickles to the executors."""
        setup = self.setup
        spec = RealtimeSpec(
            run_id=self.run_id,
            connector_name=setup.connector.name,
            task_class=setup.task_class,
            task_configs=tuple(dict(c) for c in setup.task_configs),
            task_of=dict(self.assignment.task_of),
            connector_props=dict(setup.connector.resolved),
            worker_props=dict(setup.worker.resolved),
            positions=dict(positions),
            commit_interval_ms=setup.worker.realtime_offset_flush_interval_ms,
        )
        return RealtimeWriter(spec)

    def process(self, batch: Any, batch_id: int) -> None:
        """Never called: a real-time query has no ``foreachBatch``."""
        raise ConnectException(f"{self.setup.connector.name}: a real-time connector got a micro-batch")

    def idle(self) -> None:
        """Called by the runner's supervisor about every second: the executors' commits into the runner's view."""
        if self.read_committed is None:
            return
        try:
            committed = dict(self.read_committed())
        except Exception as e:  # only the metrics are late; the next tick tries again
            log.debug("%s: cannot read the committed offsets: %r", self.setup.connector.name, e)
            return
        changed = {tp: off for tp, off in committed.items() if self.seen_committed.get(tp) != off}
        if changed:
            self.seen_committed.update(changed)
            self.setup.observed(changed)

    def resume_positions(self) -> dict[TopicPartition, int]:
        """After a pause: where the tasks committed, else where the last generation started."""
        committed = dict(self.read_committed()) if self.read_committed is not None else {}
        return {**self.positions, **committed}

    def close(self) -> None:
        """Nothing on the driver: the partitions' task instances end with their Python workers."""

    def task_metrics(self) -> dict[int | str, dict[str, Any]]:
        return {"all": {"partition-count": len(self.positions)}}
