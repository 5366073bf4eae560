"""Executor mode on a real broker and real Spark: tasks run in executor Python workers, one generation per batch."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import fill_topic, produce, topic_end_offsets
from connect_spark.testing.recording import decode_value, read_recorded_calls, read_recorded_records


def _connector(name, topic, work_dir, **extra):
    props = {"name": name, "connector.class": "RecordingSink", "topics": topic,
             "recording.dir": str(Path(work_dir) / "out")}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def _executor_worker(bootstrap, work_dir, max_offsets):
    return worker_properties(bootstrap, work_dir, task_execution_mode="executor", max_offsets_per_trigger=max_offsets)


def _by_partition(records):
    seen = defaultdict(list)
    for r in records:
        seen[(r["topic"], r["partition"])].append(r["offset"])
    return seen


def test_tasks_run_on_executors_and_see_only_their_partitions(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 8_000, 4
    fill_topic(bootstrap_servers, topic_name, total, partitions)
    name = f"exec-{topic_name}"
    result = run_connector(_connector(name, topic_name, work_dir, tasks_max=2), bootstrap_servers, work_dir,
                           spark=spark, worker=_executor_worker(bootstrap_servers, work_dir, 3000))
    assert result.exit_code == 0
    records = read_recorded_records(Path(work_dir) / "out")
    assert len(records) == total
    for (topic, partition), offsets in _by_partition(records).items():
        assert offsets == list(range(total // partitions)), f"{topic}[{partition}] not once and in order"
    assert all(r["pid"] != os.getpid() for r in records), "put ran in the driver process"
    owners = {}
    for task_id in (0, 1):
        calls = read_recorded_calls(Path(work_dir) / "out", task_id)
        opened = {tuple(p) for c in calls if c["call"] == "open" for p in c["partitions"]}
        owners[task_id] = opened
        assert [c["call"] for c in calls][:2] == ["start", "open"]
    assert owners[0] == {(topic_name, 0), (topic_name, 1)} and owners[1] == {(topic_name, 2), (topic_name, 3)}
    for task_id in (0, 1):
        with open(Path(work_dir) / "out" / f"task-{task_id}" / "records.jsonl") as f:
            parts = {json.loads(line)["partition"] for line in f}
        assert parts == {p for _, p in owners[task_id]}
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)
    first = records[0]
    assert decode_value(first["value"]) == f"v{int(decode_value(first['key']).decode()[1:])}".encode()


def test_partial_pre_commit_redelivers_exactly_the_unreturned_records(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 5_000, 2
    fill_topic(bootstrap_servers, topic_name, total, partitions)
    name = f"partial-{topic_name}"
    result = run_connector(
        _connector(name, topic_name, work_dir, tasks_max=1, recording_commit_every=700),
        bootstrap_servers, work_dir, spark=spark,
        worker=_executor_worker(bootstrap_servers, work_dir, 1000),
    )
    assert result.exit_code == 0
    records = read_recorded_records(Path(work_dir) / "out")
    per_partition = _by_partition(records)
    # Only whole chunks of 700 were written; everything written was written once, in order, from 0.
    for offsets in per_partition.values():
        assert offsets == list(range(len(offsets)))
    assert len(records) == (total // 700) * 700
    ends = topic_end_offsets(bootstrap_servers, topic_name)
    assert result.committed == {TopicPartition(topic_name, p): len(per_partition[(topic_name, p)])
                                for p in range(partitions)}
    assert all(result.committed[tp] <= ends[tp] for tp in ends)
    calls = read_recorded_calls(Path(work_dir) / "out", 0)
    offered_after_partial = [c for c in calls if c["call"] == "pre_commit"]
    assert len(offered_after_partial) >= 3


def test_rewind_in_open_feeds_the_task_from_those_offsets(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 600, 3)
    name = f"xrewind-{topic_name}"
    # First run: everything delivered and committed.
    assert run_connector(_connector(name, topic_name, work_dir), bootstrap_servers, work_dir, spark=spark,
                         worker=_executor_worker(bootstrap_servers, work_dir, 10_000)).exit_code == 0
    out2 = Path(work_dir) / "out2"
    # Second run: open() rewinds partition 0 to 150 (backwards, before the committed 200) and partition 2
    # forwards within the new records.
    fill_topic(bootstrap_servers, topic_name, 0, 3)
    produce(bootstrap_servers, topic_name, ((p, b"k", f"new{p}-{i}".encode(), []) for i in range(10) for p in range(3)))
    connector = _connector(name, topic_name, work_dir, recording_rewind=f"{topic_name}:0:150,{topic_name}:2:205")
    connector["recording.dir"] = str(out2)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_executor_worker(bootstrap_servers, work_dir, 10_000))
    assert result.exit_code == 0
    per_partition = _by_partition(read_recorded_records(out2))
    assert per_partition[(topic_name, 0)] == list(range(150, 210))
    assert per_partition[(topic_name, 1)] == list(range(200, 210))
    assert per_partition[(topic_name, 2)] == list(range(205, 210))
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_retriable_put_is_retried_inside_the_task(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 400, 2)
    name = f"xretry-{topic_name}"
    connector = _connector(name, topic_name, work_dir, tasks_max=2,
                           connector_class="connect_spark.testing.recording.FaultySinkConnector",
                           faulty_retriable_puts=2, faulty_timeout_ms=100)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_executor_worker(bootstrap_servers, work_dir, 10_000))
    assert result.exit_code == 0
    for task_id in (0, 1):
        calls = [c["call"] for c in read_recorded_calls(Path(work_dir) / "out", task_id)]
        assert calls.count("put_retriable") == 2 and calls.count("start") == 1
    per_partition = _by_partition(read_recorded_records(Path(work_dir) / "out"))
    assert all(offsets == list(range(200)) for offsets in per_partition.values())
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_task_failure_fails_the_connector_naming_the_task(spark, bootstrap_servers, topic_name, work_dir, caplog):
    fill_topic(bootstrap_servers, topic_name, 300, 1)
    name = f"xfail-{topic_name}"
    connector = _connector(name, topic_name, work_dir,
                           connector_class="connect_spark.testing.recording.FaultySinkConnector",
                           faulty_fail_on_put=2)
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")  # one put per 100 records
    try:
        result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                               worker=_executor_worker(bootstrap_servers, work_dir, 10_000))
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    assert result.exit_code == 1
    assert "faulty task fails on put #2" in caplog.text and f"{name}-0" in caplog.text
    assert "Traceback" in caplog.text
    # The first put of 100 records succeeded before the failure: its offsets are committed, nothing beyond.
    assert result.committed == {TopicPartition(topic_name, 0): 100}
    calls = [c["call"] for c in read_recorded_calls(Path(work_dir) / "out", 0)]
    assert calls[-4:] == ["put_failed", "pre_commit", "close", "stop"]


def test_headers_are_left_unread_for_a_header_blind_task_in_both_modes(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 600, 2
    fill_topic(bootstrap_servers, topic_name, total, partitions)
    for mode in ("executor", "driver"):
        out = Path(work_dir) / mode
        connector = {"name": f"blind-{mode}-{topic_name}", "connector.class": "RecordingSink", "topics": topic_name,
                     "recording.dir": str(out), "recording.reads.headers": "false", "tasks.max": "1"}
        worker = worker_properties(bootstrap_servers, out, task_execution_mode=mode, max_offsets_per_trigger=250)
        result = run_connector(connector, bootstrap_servers, out, spark=spark, worker=worker)
        assert result.exit_code == 0
        records = read_recorded_records(out)
        assert len(records) == total, mode
        assert all(r["headers"] == [] for r in records), f"{mode}: headers were read for a header-blind task"
        assert sorted(int(decode_value(r["value"])[1:]) for r in records) == list(range(total))
        assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_a_batch_outliving_the_graceful_timeout_is_cancelled_and_delivered_again(spark, bootstrap_servers,
                                                                                 topic_name, work_dir, caplog):
    """task.shutdown.graceful.timeout.ms bounds a stop: a put sleeping in an executor task far longer has its
    Spark job cancelled, the connector stops cleanly without committing that batch, and the next start
    delivers its records again."""
    import logging
    import threading
    import time

    from connect_spark.config.validation import validate_configs
    from connect_spark.runtime.worker.standalone import StandaloneWorker
    from connect_spark.testing.harness import committed_offsets
    from connect_spark.testing.waiting import wait_for

    total, partitions = 400, 2
    fill_topic(bootstrap_servers, topic_name, total, partitions)
    name = f"slow-{topic_name}"
    worker = {**_executor_worker(bootstrap_servers, work_dir, total), "task.shutdown.graceful.timeout.ms": "1000"}
    slow = _connector(name, topic_name, work_dir, tasks_max=2, recording_put_delay_ms=120_000)
    standalone = StandaloneWorker(*validate_configs(worker, [slow]), spark=spark)
    thread = threading.Thread(target=standalone.run, daemon=True)
    with caplog.at_level(logging.WARNING, logger="connect_spark.runtime.worker.graceful_stop"):
        thread.start()
        wait_for(lambda: read_recorded_records(Path(work_dir) / "out"), timeout=240, what="the first put")
        asked = time.monotonic()
        standalone.request_stop()
        thread.join(90)
        assert not thread.is_alive(), "the stop waited for the sleeping put"
    assert time.monotonic() - asked < 60  # the put sleeps 120 s
    assert standalone.failures == []
    assert "did not finish within task.shutdown.graceful.timeout.ms=1000; cancelling its Spark jobs" in caplog.text
    assert sum(committed_offsets(worker, name).values()) == 0  # the cancelled batch was not committed

    result = run_connector(_connector(name, topic_name, work_dir, tasks_max=2), bootstrap_servers, work_dir,
                           spark=spark, worker=worker)
    assert result.exit_code == 0
    delivered = _by_partition(read_recorded_records(Path(work_dir) / "out"))
    for p in range(partitions):  # everything once more after the cancelled first delivery
        assert sorted(set(delivered[(topic_name, p)])) == list(range(total // partitions))
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)
