"""Connectors on a Spark Connect session: the ``foreachBatch`` function builds the runtime where it runs.

On Spark Connect (serverless and shared-access notebooks, ``SparkSession.builder.remote(...)``) Spark
pickles the ``foreachBatch`` function and calls it in a Python process of the *server*, with a Spark
Connect session of its own. The runner's own ``on_batch`` cannot go there (it holds the runner, its
lock and the notebook's session), so on a remote session the runner gets a :class:`RemoteProcessor`
(:func:`processor_for`) whose :meth:`~RemoteProcessor.batch_function` is a small picklable
:class:`RemoteBatchFunction`: the validated configurations, the task class and configurations, and the
positions the query starts from. On its first batch it builds, in the process it runs in, what the
runner builds on a classic session — the processor of the task shape (tasks, converters, SMTs,
``errors.*`` and the DLQ producer) and the offset store — and reuses them for the next batches.

Offsets are still committed only from ``pre_commit``'s answer: after every batch each driver-mode
task's commit runs (Connect's ``offset.flush.interval.ms`` reached at every batch), executor mode
commits per batch as it always does, and the write to ``connect-offsets`` and the consumer group
completes before the function returns. A killed client or server process therefore re-delivers from
``connect-offsets`` on the next start.

A task's forward seeks in ``open`` (a sink whose own store is ahead of ``connect-offsets``) drop the
records below them from the batches. What differs from a classic session: a task's ``open`` that seeks
backwards, or a redelivery that needs a new query generation, fails the query with a message saying so
(the next start re-delivers from the committed offsets); the notebook's metrics have no per-task counters.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.api.bulk import DataFrameSinkTask
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.runtime.processors.base import BatchProcessor, ProcessorSetup, choose_processor
from connect_spark.spark_session import is_remote_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["processor_for", "RemoteProcessor", "RemoteBatchFunction"]

log = logging.getLogger(__name__)


def processor_for(setup: ProcessorSetup, read_committed: Callable[[], Mapping[TopicPartition, int]]) -> BatchProcessor:
    """The runner's processor: :class:`RemoteProcessor` on a Spark Connect session, else the task shape's."""
    if is_remote_session(setup.spark):
        if setup.connector.execution_mode(setup.worker) == "realtime":
            raise ConnectException(f"task.execution.mode=realtime: connector {setup.connector.name} cannot run on a "
                                   "Spark Connect session (its tasks run in a ForeachWriter of a classic session); "
                                   "allowed there: executor or driver")
        return RemoteProcessor(setup, read_committed)
    return choose_processor(setup, read_committed)


class RemoteProcessor(BatchProcessor):
    """The client side of a connector on Spark Connect: hands the query a :class:`RemoteBatchFunction`.

    Its batches never come here (the server runs them); the runner still supervises the query, pauses,
    resumes and stops it.
    """

    def __init__(self, setup: ProcessorSetup, read_committed: Callable[[], Mapping[TopicPartition, int]]) -> None:
        super().__init__()
        self.setup = setup
        self.read_committed = read_committed
        self.execution_mode = setup.connector.execution_mode(setup.worker)
        bulk_frames = issubclass(setup.task_class, DataFrameSinkTask)
        self.collects_batches = self.execution_mode == "driver" and not bulk_frames
        if bulk_frames:
            self.execution_mode = "driver"
        self.run_id = f"{setup.connector.name}-{time.time_ns()}"

    def open(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """No task starts here: the query starts at ``positions`` and the server's function opens them."""
        return dict(positions)

    def batch_function(self, positions: Mapping[TopicPartition, int]) -> "RemoteBatchFunction":
        """Called by the runner as a query generation starts: the function Spark pickles to the server."""
        setup = self.setup
        return RemoteBatchFunction(
            run_id=self.run_id, connector_props=dict(setup.connector.resolved),
            worker_props=dict(setup.worker.resolved), task_class=setup.task_class,
            task_configs=[dict(c) for c in setup.task_configs], client_config=dict(setup.client_config),
            include_headers=setup.include_headers, positions=dict(positions))

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        raise ConnectException("On Spark Connect a batch runs in the server's foreachBatch function, not here")

    def idle(self) -> None:
        """Nothing to do between batches: the server's function commits after every batch."""

    def resume_positions(self) -> dict[TopicPartition, int]:
        """After a pause the query starts again from what the server's function committed."""
        return dict(self.read_committed())

    def close(self) -> None:
        """Nothing runs here; the server's function committed after its last batch."""

    def task_metrics(self) -> dict[int | str, dict[str, Any]]:
        return {}


@dataclass
class RemoteBatchFunction:
    """The picklable ``foreachBatch`` function of a connector on Spark Connect (see the module docstring).

    Spark calls it with each micro-batch in the server's Python process; the runtime it builds on the
    first call (:meth:`_build`) is not pickled and lives as long as that process.
    """

    run_id: str
    connector_props: dict[str, Any]
    worker_props: dict[str, Any]
    task_class: type
    task_configs: list[dict[str, str]]
    client_config: dict[str, Any]
    include_headers: bool
    positions: dict[TopicPartition, int]
    _runtime: "_Runtime | None" = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_runtime"] = None
        return state

    def __call__(self, batch: "DataFrame", batch_id: int) -> None:
        """Spark's ``foreachBatch`` call, in the server's Python process: process, then commit.

        Raises:
            ConnectException: a task failed (the message carries the task's trace, which the notebook's
                handle shows), or records must be read again from other offsets.
        """
        if self._runtime is None:
            self._runtime = _Runtime.build(self, batch.sparkSession)
        try:
            self._runtime.process(batch, batch_id)
        except ConnectException as e:
            trace = getattr(e, "trace", None)
            raise ConnectException(f"{e}\n{trace}" if trace else str(e)) from e
        except Exception as e:
            raise ConnectException(f"Connector batch {batch_id} failed: {e!r}\n{traceback.format_exc()}") from e


class _Runtime:
    """What a :class:`RemoteBatchFunction` builds on its first batch: offset store and processor."""

    def __init__(self, processor: BatchProcessor, store: Any, name: str, group: str) -> None:
        self.processor = processor
        self.store = store
        self.name = name
        self.group = group
        self.skip_below: dict[TopicPartition, int] = {}
        self.claim: Any = None  # the offsets' claim (connect_spark.storage.owner), made before the first read

    @classmethod
    def build(cls, function: RemoteBatchFunction, spark: "SparkSession") -> "_Runtime":
        from connect_spark.config.connector import ConnectorConfig
        from connect_spark.config.worker import WorkerConfig
        from connect_spark.storage.owner import build_offset_store

        connector = ConnectorConfig(function.connector_props)
        worker = WorkerConfig(function.worker_props)
        store = build_offset_store(worker)
        store.start()
        runtime_box: list[_Runtime] = []

        def commit(offsets: Mapping[TopicPartition, int]) -> None:
            runtime_box[0].write(offsets)

        def wait(seconds: float) -> bool:
            time.sleep(seconds)
            return True

        processor = choose_processor(ProcessorSetup(
            spark=spark, connector=connector, worker=worker, task_class=function.task_class,
            task_configs=function.task_configs, client_config=function.client_config,
            include_headers=function.include_headers, commit=commit, wait=wait, clock=time.monotonic))
        runtime = cls(processor, store, connector.name, connector.consumer_group_id)
        runtime.claim = store.claim(connector.name)  # this process writes the offsets now: older writers fenced
        runtime_box.append(runtime)
        # Where the tasks open: what is committed now (this process may be a restarted one), else where
        # the query started.
        positions = {**function.positions, **{tp: off for tp, off in store.read(connector.name).items()
                                              if tp in function.positions}}
        opened = processor.open(positions)
        back = {tp: off for tp, off in opened.items() if tp in positions and off < positions[tp]}
        if back:
            raise ConnectException(f"Connector {connector.name}: a task's open asked to read {back} again, "
                                   "which needs a new query generation; not supported on Spark Connect")
        # Forward seeks (a sink whose own store is ahead of connect-offsets, e.g. Delta's offsets in its
        # commits): the query already started lower, so the records below them are dropped here.
        runtime.skip_below = {tp: off for tp, off in opened.items() if off > positions.get(tp, off)}
        log.info("%s: runtime built in the foreachBatch process (%s mode)", connector.name, processor.execution_mode)
        return runtime

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """The processor's commit, through this process's claim of the offsets (a fenced claim raises
        ``OffsetsFenced``, which fails the batch and so the query): the store, then the consumer group."""
        self.claim.write(offsets, self.group)

    def process(self, batch: "DataFrame", batch_id: int) -> None:
        processor = self.processor
        if self.skip_below:
            for tp, offset in self.skip_below.items():  # Kafka topic names are [a-zA-Z0-9._-]: no quoting needed
                batch = batch.filter(f"NOT (topic = '{tp.topic}' AND `partition` = {int(tp.partition)} "
                                     f"AND `offset` < {int(offset)})")
        processor.process(batch, batch_id)
        for unit in getattr(processor, "units", ()):  # driver-mode tasks: the commit tick, now
            worker_task = unit.worker_task
            if worker_task.started and worker_task.assignment:
                worker_task.commit_offsets(closing=False)
        collect_rewinds = getattr(processor, "collect_rewinds", None)
        if collect_rewinds is not None:  # a failed pre_commit or a seek asks for records again
            collect_rewinds()
        if processor.restart_from is not None:
            raise ConnectException(f"Connector {self.name}: records must be read again from "
                                   f"{processor.restart_from}, which needs a new query generation; not supported "
                                   "on Spark Connect: restart the connector (it re-reads from connect-offsets)")
