"""One executor-side task generation, as plain Python: open → put … → pre_commit → close, and what it reports."""

from __future__ import annotations

import uuid


from connect_spark.api.records import TopicPartition
from connect_spark.runtime.tasks.generation import GenerationResult, GenerationSpec, group_by_task, run_generation
from connect_spark.testing.raw_batches import raw_record_batch
from connect_spark.testing.recording import FaultySinkTask, RecordingSinkTask, read_recorded_calls, read_recorded_records

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _batch(rows):
    """rows: (partition, offset) pairs."""
    return raw_record_batch([f"v{p}-{o}".encode() for p, o in rows], partitions=[p for p, _ in rows],
                            offsets=[o for _, o in rows], timestamps=[1_000] * len(rows))


def _spec(tmp_path, positions, task_class=RecordingSinkTask, **extra):
    props = {"name": "gen", "connector.class": "RecordingSink", "topics": "t", "recording.dir": str(tmp_path),
             "task.id": "0", **extra}
    worker = {"bootstrap.servers": "127.0.0.1:1",
              "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
              "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}
    return GenerationSpec(run_id=uuid.uuid4().hex, connector_name="gen", task_id=0, task_class=task_class,
                          task_config=props, connector_props=props, worker_props=worker, positions=positions)


def test_a_generation_puts_its_records_and_reports_what_pre_commit_made_committable(tmp_path):
    spec = _spec(tmp_path, {T0: 10, T1: 0})
    result = run_generation(spec, [_batch([(0, 10), (0, 11), (1, 0)]), _batch([(1, 1), (7, 3)])])
    assert result.error is None
    assert result.committed == {T0: 12, T1: 2}
    assert result.seen == {T0: 12, T1: 2, TopicPartition("t", 7): 4}
    assert result.unassigned == {TopicPartition("t", 7): 3}
    assert result.records_put == 4 and result.records_skipped == 1
    calls = [c["call"] for c in read_recorded_calls(tmp_path)]
    assert calls == ["start", "open", "put", "put", "pre_commit", "close"]
    assert GenerationResult.from_json(result.to_json()) == result


def test_partial_pre_commit_reports_only_the_written_offsets(tmp_path):
    spec = _spec(tmp_path, {T0: 0}, **{"recording.commit.every": "3"})
    result = run_generation(spec, [_batch([(0, o) for o in range(5)])])
    assert result.committed == {T0: 3}
    assert result.seen == {T0: 5}
    assert [r["offset"] for r in read_recorded_records(tmp_path)] == [0, 1, 2]


def test_rewinds_in_open_skip_records_or_report_a_re_read(tmp_path):
    spec = _spec(tmp_path, {T0: 10, T1: 10}, **{"recording.rewind": "t:0:12,t:1:4"})
    result = run_generation(spec, [_batch([(0, o) for o in range(10, 15)] + [(1, o) for o in range(10, 13)])])
    assert result.rewinds == {T0: 12, T1: 4}
    assert [(r["partition"], r["offset"]) for r in read_recorded_records(tmp_path)] == [(0, 12), (0, 13), (0, 14)]
    assert result.committed == {T0: 15}  # T1 is re-read from 4: the driver takes the rewind as committed


def test_a_failing_put_commits_what_earlier_puts_accepted_and_reports_the_trace(tmp_path):
    spec = _spec(tmp_path, {T0: 0}, FaultySinkTask, **{"faulty.fail.on.put": "2"})
    result = run_generation(spec, [_batch([(0, 0), (0, 1)]), _batch([(0, 2)])])
    assert result.error is not None and "faulty task fails on put #2" in result.error
    assert "Traceback" in result.trace
    assert result.committed == {T0: 2}
    assert [c["call"] for c in read_recorded_calls(tmp_path)][-3:] == ["pre_commit", "close", "stop"]


def test_group_by_task_keeps_runs_of_one_task_together():
    owners = {T0: 0, T1: 1}
    runs = [(task, sum(b.num_rows for b in batches))
            for task, batches in group_by_task(iter([_batch([(0, 0), (0, 1), (1, 0)]), _batch([(1, 1), (5, 0)])]),
                                               owners, -1)]
    assert runs == [(0, 2), (1, 2), (-1, 1)]
