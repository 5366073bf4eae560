"""Executor mode on a real broker and real Spark: tasks run in executor Python workers, one generation per batch."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce
from connect_spark.testing.recording import decode_value, read_recorded_calls, read_recorded_records


def _fill(bootstrap, topic, count, partitions):
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, (
        (i % partitions, f"k{i}".encode(), f"v{i}".encode(), [("h", f"{i}".encode())], 1_700_000_000_000 + i)
        for i in range(count)
    ))


def _connector(name, topic, work_dir, **extra):
    props = {"name": name, "connector.class": "RecordingSink", "topics": topic,
             "recording.dir": str(Path(work_dir) / "out")}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def _executor_worker(bootstrap, work_dir, max_offsets):
    return worker_properties(bootstrap, work_dir, task_execution_mode="executor", max_offsets_per_trigger=max_offsets)


def _ends(bootstrap, topic):
    return {TopicPartition(topic, p): off for p, off in end_offsets(bootstrap, topic).items()}


def _by_partition(records):
    seen = defaultdict(list)
    for r in records:
        seen[(r["topic"], r["partition"])].append(r["offset"])
    return seen


def test_tasks_run_on_executors_and_see_only_their_partitions(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 8_000, 4
    _fill(bootstrap_servers, topic_name, total, partitions)
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
    assert result.committed == _ends(bootstrap_servers, topic_name)
    first = records[0]
    assert decode_value(first["value"]) == f"v{int(decode_value(first['key']).decode()[1:])}".encode()


def test_partial_pre_commit_redelivers_exactly_the_unreturned_records(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 5_000, 2
    _fill(bootstrap_servers, topic_name, total, partitions)
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
    ends = _ends(bootstrap_servers, topic_name)
    assert result.committed == {TopicPartition(topic_name, p): len(per_partition[(topic_name, p)])
                                for p in range(partitions)}
    assert all(result.committed[tp] <= ends[tp] for tp in ends)
    calls = read_recorded_calls(Path(work_dir) / "out", 0)
    offered_after_partial = [c for c in calls if c["call"] == "pre_commit"]
    assert len(offered_after_partial) >= 3
