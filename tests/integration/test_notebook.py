"""The notebook entry point: a non-blocking handle on a connector running in the caller's SparkSession."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.definition import ConfigValidationError
from connect_spark.notebook import start_connector
from connect_spark.streaming.query import query_name
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_records


def test_start_connector_returns_a_running_query_that_stops_gracefully(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, ((i % 2, None, f"v{i}".encode(), []) for i in range(500)))
    out = Path(work_dir) / "out"
    worker = worker_properties(bootstrap_servers, work_dir, trigger="300ms")
    query = start_connector(spark, {"name": f"nb-{topic_name}", "connector.class": "RecordingSink",
                                    "topics": topic_name, "recording.dir": str(out)}, worker=worker)
    try:
        assert query.isActive
        assert query.query is not None and query.query.isActive
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(read_recorded_records(out)) < 500:
            time.sleep(0.3)
        produce(bootstrap_servers, topic_name, ((i % 2, None, f"v{i}".encode(), []) for i in range(500, 600)))
        while time.monotonic() < deadline and len(read_recorded_records(out)) < 600:
            time.sleep(0.3)
        assert len(read_recorded_records(out)) == 600
        assert query.lastProgress is not None and query.status["state"] == "RUNNING"
    finally:
        query.stop(timeout=120)
    assert not query.isActive and query.succeeded and query.exception() is None
    assert committed_offsets(worker, f"nb-{topic_name}") == {TopicPartition(topic_name, 0): 300,
                                                           TopicPartition(topic_name, 1): 300}


def test_start_connector_raises_on_invalid_configuration(spark, bootstrap_servers, work_dir):
    with pytest.raises(ConfigValidationError) as error:
        start_connector(spark, {"name": "bad", "connector.class": "RecordingSink", "tasks.max": "abc"},
                        worker=worker_properties(bootstrap_servers, work_dir))
    assert "tasks.max" in str(error.value) and "topics" in str(error.value)


def test_pause_holds_new_records_and_resume_delivers_them(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, ((0, None, f"v{i}".encode(), []) for i in range(100)))
    out = Path(work_dir) / "out"
    worker = worker_properties(bootstrap_servers, work_dir, trigger="300ms", task_execution_mode="executor")
    query = start_connector(spark, {"name": f"pause-{topic_name}", "connector.class": "RecordingSink",
                                    "topics": topic_name, "recording.dir": str(out)}, worker=worker)
    try:
        runner = query._worker.runners[0]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(read_recorded_records(out)) < 100:
            time.sleep(0.3)
        runner.pause()  # returns once the connector's query is stopped between batches
        assert runner.state == "PAUSED" and query.isActive
        assert runner.query is None and query_name(runner.name) not in {q.name for q in spark.streams.active}
        produce(bootstrap_servers, topic_name, ((0, None, f"v{i}".encode(), []) for i in range(100, 150)))
        # No query runs while paused, so nothing can reach the task: the records and the offsets stay.
        assert len(read_recorded_records(out)) == 100
        runner.resume()
        while time.monotonic() < deadline and len(read_recorded_records(out)) < 150:
            time.sleep(0.3)
        assert [r["offset"] for r in read_recorded_records(out)] == list(range(150))
    finally:
        query.stop(timeout=120)
    assert query.succeeded
