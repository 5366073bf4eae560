"""The processor of each task shape, chosen once at start, and the driver processors' batch handling
(plain Python: batches are the Arrow tables Spark would collect)."""

from __future__ import annotations

import time

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import (
    DRIVER_MAX_OFFSETS_PER_TRIGGER,
    EXECUTOR_MAX_OFFSETS_PER_TRIGGER,
    WORKER_CONFIG_DEF,
    WorkerConfig,
)
from connect_spark.connectors.delta.task import DeltaSinkTask
from connect_spark.runtime.processors.driver_arrow import DriverArrowProcessor
from connect_spark.runtime.processors.driver_dataframes import DataFrameProcessor
from connect_spark.runtime.processors.driver_records import DriverRecordProcessor
from connect_spark.runtime.processors.executor_tasks import ExecutorTasks
from connect_spark.runtime.processors.base import ProcessorSetup, choose_processor
from connect_spark.testing.noop import NoopArrowSinkTask
from connect_spark.testing.raw_batches import raw_table
from connect_spark.testing.recording import RecordingSinkTask, read_recorded_calls, read_recorded_records

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def _table(rows):
    """rows: (partition, offset) pairs."""
    return raw_table([f"v{p}-{o}".encode() for p, o in rows], partitions=[p for p, _ in rows],
                     offsets=[o for _, o in rows], timestamps=[1_000] * len(rows))


def _setup(tmp_path, task_class, mode="driver", tasks=1, commits=None, **worker_extra):
    connector = ConnectorConfig({"name": "p", "connector.class": "RecordingSink", "topics": "t",
                                 "recording.dir": str(tmp_path), "task.execution.mode": mode})
    worker = WorkerConfig({"bootstrap.servers": "127.0.0.1:1",
                           "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                           "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                           **worker_extra})
    configs = [{**connector.resolved, "task.id": str(i)} for i in range(tasks)]
    configs = [{k: str(v) for k, v in c.items()} for c in configs]
    sink = commits if commits is not None else {}
    return ProcessorSetup(spark=None, connector=connector, worker=worker, task_class=task_class,  # type: ignore[arg-type]
                          task_configs=configs, client_config={}, include_headers=False,
                          commit=sink.update, wait=lambda seconds: True, clock=time.monotonic)


@pytest.mark.parametrize("task_class, mode, processor", [
    (RecordingSinkTask, "driver", DriverRecordProcessor),
    (RecordingSinkTask, "executor", ExecutorTasks),
    (NoopArrowSinkTask, "driver", DriverArrowProcessor),
    (NoopArrowSinkTask, "executor", ExecutorTasks),
    (DeltaSinkTask, "driver", DataFrameProcessor),
    (DeltaSinkTask, "executor", DataFrameProcessor),
])
def test_every_task_shape_and_mode_pair_gets_its_processor(tmp_path, task_class, mode, processor):
    chosen = choose_processor(_setup(tmp_path, task_class, mode))
    assert type(chosen) is processor
    assert chosen.execution_mode == ("executor" if processor is ExecutorTasks else "driver")
    # the default batch bound follows it: the Delta sink's rows stay in Spark (its converters have a plan)
    assert chosen.collects_batches == (processor in (DriverRecordProcessor, DriverArrowProcessor))


def test_the_batch_bound_when_none_is_set_is_the_declared_one():
    base = {"bootstrap.servers": "x:1", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    worker = WorkerConfig(base)
    assert worker.max_offsets_per_trigger_for(collects_batches=True) == DRIVER_MAX_OFFSETS_PER_TRIGGER
    assert worker.max_offsets_per_trigger_for(collects_batches=False) == EXECUTOR_MAX_OFFSETS_PER_TRIGGER
    assert WorkerConfig({**base, "max.offsets.per.trigger": "7"}).max_offsets_per_trigger_for(
        collects_batches=True) == 7
    doc = WORKER_CONFIG_DEF.keys["max.offsets.per.trigger"].doc
    assert str(DRIVER_MAX_OFFSETS_PER_TRIGGER) in doc and str(EXECUTOR_MAX_OFFSETS_PER_TRIGGER) in doc


def test_driver_records_go_to_their_owner_and_new_partitions_are_assigned(tmp_path):
    commits: dict = {}
    processor = choose_processor(_setup(tmp_path, RecordingSinkTask, tasks=2, commits=commits))
    assert processor.open({T0: 0, T1: 5}) == {T0: 0, T1: 5}
    processor.deliver_table(_table([(0, 0), (1, 5), (0, 1), (1, 6), (2, 0)]))
    processor.close()
    records = read_recorded_records(tmp_path)
    assert sorted((r["partition"], r["offset"]) for r in records) == [(0, 0), (0, 1), (1, 5), (1, 6), (2, 0)]
    assert commits == {T0: 2, T1: 7, T2: 1}
    assert processor.records_read == 5 and processor.batches == 1


def test_a_paused_partition_is_held_and_read_again_once_resumed(tmp_path):
    processor = choose_processor(_setup(tmp_path, RecordingSinkTask))
    processor.open({T0: 0, T1: 0})
    unit = processor.units[0]
    unit.context.pause(T1)
    processor.deliver_table(_table([(0, 0), (1, 0), (1, 1)]))
    assert processor.held == {T1: 0} and processor.restart_from is None
    unit.context.resume(T1)
    processor.deliver_table(_table([(0, 1)]))
    assert processor.take_restart() == {T0: 2, T1: 0}
    puts = [c["count"] for c in read_recorded_calls(tmp_path) if c["call"] == "put"]
    assert puts == [1, 1]
    processor.close()


def test_an_arrow_task_runs_on_the_driver(tmp_path):
    commits: dict = {}
    processor = choose_processor(_setup(tmp_path, NoopArrowSinkTask, tasks=2, commits=commits))
    processor.open({T0: 0, T1: 0})
    processor.deliver_table(_table([(0, 0), (1, 0), (0, 1)]))
    assert [unit.task.count for unit in processor.units] == [2, 1]
    processor.close()
    assert commits == {T0: 2, T1: 1}
