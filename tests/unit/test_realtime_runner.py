"""The pieces of task.execution.mode=realtime that need no JVM and no broker: the processor choice, the writer
Spark pickles, rows as raw batches, the partition → task id rule, transactional ids and the session settings."""

from __future__ import annotations

import pickle
import time

import pyarrow as pa

from connect_spark.api.records import TopicPartition
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.processors.base import ProcessorSetup, choose_processor
from connect_spark.runtime.realtime.commits import transactional_id
from connect_spark.runtime.realtime.partition_task import RealtimeSpec
from connect_spark.runtime.realtime.processor import RealtimeProcessor
from connect_spark.runtime.realtime.rows import raw_batch
from connect_spark.runtime.realtime.writer import RealtimeWriter
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA
from connect_spark.streaming.realtime_query import RealtimeQueryGenerations, realtime_session_conf
from connect_spark.testing.recording import RecordingSinkTask

WORKER = {"bootstrap.servers": "127.0.0.1:1",
          "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
          "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}


def _setup(tmp_path, tasks=2, observed=None, **worker_extra):
    connector = ConnectorConfig({"name": "rt", "connector.class": "RecordingSink", "topics": "t",
                                 "recording.dir": str(tmp_path), "task.execution.mode": "realtime"})
    worker = WorkerConfig({**WORKER, **worker_extra})
    configs = [{k: str(v) for k, v in {**connector.resolved, "task.id": str(i)}.items()} for i in range(tasks)]
    return ProcessorSetup(spark=None, connector=connector, worker=worker, task_class=RecordingSinkTask,  # type: ignore[arg-type]
                          task_configs=configs, client_config={}, include_headers=False,
                          commit=lambda offsets: None, wait=lambda seconds: True, clock=time.monotonic,
                          observed=observed or (lambda offsets: None))


def test_realtime_mode_chooses_the_realtime_processor_whose_query_is_a_realtime_one(tmp_path):
    processor = choose_processor(_setup(tmp_path), read_committed=lambda: {})
    assert isinstance(processor, RealtimeProcessor) and processor.execution_mode == "realtime"
    query = processor.query_generations(None, "rt", str(tmp_path), {}, ["t"], None, None, True, 1000)
    assert isinstance(query, RealtimeQueryGenerations)


def test_the_writer_carries_the_assignment_the_configs_and_a_short_commit_tick_and_pickles(tmp_path):
    processor = choose_processor(_setup(tmp_path), read_committed=lambda: {})
    positions = {TopicPartition("t", p): 10 * p for p in range(4)}
    processor.assignment.assign(positions)
    writer = pickle.loads(pickle.dumps(processor.batch_function(positions)))
    assert isinstance(writer, RealtimeWriter)
    spec = writer.spec
    assert spec.positions == positions and spec.commit_interval_ms == 200
    assert [spec.task_id_of(TopicPartition("t", p)) for p in range(4)] == [0, 0, 1, 1]  # Connect's range assignment
    assert spec.task_configs[1]["task.id"] == "1"


def test_the_worker_commit_interval_is_the_writers_when_set(tmp_path):
    processor = choose_processor(_setup(tmp_path, **{"offset.flush.interval.ms": "750"}), read_committed=lambda: {})
    assert processor.batch_function({}).spec.commit_interval_ms == 750


def test_resume_starts_at_what_the_tasks_committed(tmp_path):
    committed = {TopicPartition("t", 0): 42}
    processor = choose_processor(_setup(tmp_path), read_committed=lambda: committed)
    processor.positions = {TopicPartition("t", 0): 5, TopicPartition("t", 1): 7}
    assert processor.resume_positions() == {TopicPartition("t", 0): 42, TopicPartition("t", 1): 7}


def test_a_partition_appearing_later_gets_a_stable_task_id_within_range():
    spec = RealtimeSpec("run", "rt", RecordingSinkTask, ({}, {}, {}), {}, {}, {})
    ids = [spec.task_id_of(TopicPartition("new", p)) for p in range(20)]
    assert ids == [spec.task_id_of(TopicPartition("new", p)) for p in range(20)]
    assert set(ids) <= {0, 1, 2} and len(set(ids)) > 1


def test_rows_become_a_raw_batch_with_headers_as_key_value_structs():
    rows = [("t", 0, 5, 1_000, 0, b"k", b"v", [("h", b"x")]), ("t", 0, 6, 1_001, 1, None, None, [])]
    batch = raw_batch(rows)
    assert batch.schema == RAW_ARROW_SCHEMA
    assert batch.column("offset").to_pylist() == [5, 6]
    assert batch.column("headers").to_pylist() == [[{"key": "h", "value": b"x"}], []]
    assert batch.column("key").type == pa.binary()


def test_every_attempt_of_a_partition_commits_under_one_transactional_id():
    assert transactional_id("orders-sink", TopicPartition("orders", 3)) == "connect-spark-orders-sink-orders-3"


def test_a_session_for_realtime_connectors_gets_a_small_python_buffer_unless_the_worker_sets_one():
    worker = WorkerConfig(WORKER)
    realtime = ConnectorConfig({"name": "a", "connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/x",
                                "task.execution.mode": "realtime"})
    micro = ConnectorConfig({"name": "b", "connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/x"})
    assert realtime_session_conf(worker, [micro]).get("spark.buffer.size") is None
    assert realtime_session_conf(worker, [micro, realtime])["spark.buffer.size"] == "1024"
    own = WorkerConfig({**WORKER, "spark.buffer.size": "4096"})
    assert realtime_session_conf(own, [realtime])["spark.buffer.size"] == "4096"


def test_idle_ticks_hand_the_executors_commits_to_the_runner_when_they_change(tmp_path):
    store = {TopicPartition("t", 0): 5}
    seen = []
    processor = choose_processor(_setup(tmp_path, observed=seen.append), read_committed=lambda: dict(store))
    processor.idle()
    processor.idle()
    store[TopicPartition("t", 1)] = 3
    processor.idle()
    assert seen == [{TopicPartition("t", 0): 5}, {TopicPartition("t", 1): 3}]
