"""WorkerSinkTask's offset rules and commit order, against Kafka Connect's WorkerSinkTask behaviour."""

from __future__ import annotations

import pytest

from connect_spark.api import RetriableException, SinkRecord, SinkTask, TopicPartition
from connect_spark.runtime.tasks.assignment import extend_assignment, range_assignment
from connect_spark.runtime.tasks.worker_task import TaskFailedError, WorkerSinkTask, committable_offsets

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


class ScriptedTask(SinkTask):
    def __init__(self, answer=None, put_error=None, pre_commit_error=None, seeks=None):
        self.calls = []
        self.answer = answer
        self.put_error = put_error
        self.pre_commit_error = pre_commit_error
        self.seeks = seeks or {}

    def version(self):
        return "t"

    def start(self, props):
        self.calls.append(("start",))

    def open(self, partitions):
        self.calls.append(("open", sorted(partitions)))
        if self.seeks:
            self.context.offset(self.seeks)

    def put(self, records):
        self.calls.append(("put", len(records)))
        if self.put_error:
            error, self.put_error = self.put_error, None
            raise error

    def pre_commit(self, offsets):
        self.calls.append(("pre_commit", dict(offsets)))
        if self.pre_commit_error:
            raise self.pre_commit_error
        return dict(offsets) if self.answer is None else self.answer(offsets)

    def close(self, partitions):
        self.calls.append(("close", sorted(partitions)))

    def stop(self):
        self.calls.append(("stop",))


def _records(tp, offsets):
    return [SinkRecord(tp.topic, tp.partition, None, None, None, b"x", o) for o in offsets]


def _runner(task, clock=lambda: 0.0):
    commits = []
    runner = WorkerSinkTask("conn", 0, task, {}, commit=lambda o: commits.append(dict(o)),
                            offset_flush_interval_ms=1000, clock=clock)
    runner.start()
    return runner, commits


def test_committable_offsets_follows_connect_rules():
    result = committable_offsets(
        task_provided={A0: 5, A1: 50, B0: 1, TopicPartition("x", 9): 3},
        offsets_to_commit={A0: 10, A1: 20},
        last_committed={A0: 2, A1: 7},
        assignment={A0, A1, B0},
    )
    # A0 accepted; A1 beyond consumed → kept at last commit; B0 not requested; x not assigned.
    assert result == {A0: 5, A1: 7}


def test_lower_than_last_commit_is_allowed():
    assert committable_offsets({A0: 1}, {A0: 10}, {A0: 5}, {A0}) == {A0: 1}


def test_commit_only_what_pre_commit_returns_and_only_changes():
    task = ScriptedTask(answer=lambda offs: {A0: 3})
    runner, commits = _runner(task)
    runner.open({A0: 0, A1: 0})
    assert runner.deliver(_records(A0, range(5)) + _records(A1, range(2)), {A0: 5, A1: 2})
    runner.commit_offsets(closing=False)
    assert commits == [{A0: 3}]
    runner.commit_offsets(closing=False)
    assert commits == [{A0: 3}], "no change since last commit must not be written again"


def test_empty_pre_commit_opts_out():
    task = ScriptedTask(answer=lambda offs: {})
    runner, commits = _runner(task)
    runner.open({A0: 0})
    runner.deliver(_records(A0, range(3)), {A0: 3})
    runner.commit_offsets(closing=False)
    assert commits == []


def test_closing_order_is_pre_commit_close_then_commit():
    task = ScriptedTask()
    order = []
    runner = WorkerSinkTask("conn", 0, task, {}, commit=lambda o: order.append(("commit", dict(o))),
                            offset_flush_interval_ms=1000)
    runner.start()
    runner.open({A0: 0})
    runner.deliver(_records(A0, range(4)), {A0: 4})
    task.calls.clear()
    original_close = task.close
    task.close = lambda parts: (order.append(("close",)), original_close(parts))
    task.pre_commit = (lambda f: (lambda offs: (order.append(("pre_commit",)), f(offs))[1]))(task.pre_commit)
    runner.close_all()
    assert order == [("pre_commit",), ("close",), ("commit", {A0: 4})]


def test_pre_commit_failure_rewinds_to_last_committed():
    task = ScriptedTask()
    runner, commits = _runner(task)
    runner.open({A0: 0})
    runner.deliver(_records(A0, range(3)), {A0: 3})
    runner.commit_offsets(closing=False)
    runner.deliver(_records(A0, range(3, 8)), {A0: 8})
    task.pre_commit_error = RuntimeError("flush failed")
    runner.commit_offsets(closing=False)
    assert commits == [{A0: 3}]
    assert runner.take_rewinds() == {A0: 3}
    assert runner.current[A0] == 3


def test_retriable_put_keeps_the_batch_and_offsets():
    task = ScriptedTask(put_error=RetriableException("busy"))
    runner, commits = _runner(task)
    runner.open({A0: 0})
    assert not runner.deliver(_records(A0, range(4)), {A0: 4})
    assert runner.current[A0] == 0 and len(runner.message_batch) == 4
    runner.commit_offsets(closing=False)
    assert commits == [], "nothing new was delivered, so nothing changes"
    assert runner.redeliver()
    assert runner.current[A0] == 4 and task.calls[-1] == ("put", 4)


def test_non_retriable_put_fails_the_task_with_its_trace():
    task = ScriptedTask(put_error=ValueError("boom"))
    runner, _ = _runner(task)
    runner.open({A0: 0})
    with pytest.raises(TaskFailedError) as failure:
        runner.deliver(_records(A0, range(2)), {A0: 2})
    assert "boom" in failure.value.trace and failure.value.task_id == 0
    assert runner.current[A0] == 0


def test_seeks_from_open_become_rewinds_and_count_as_committed():
    task = ScriptedTask(seeks={A0: 7})
    runner, commits = _runner(task)
    runner.open({A0: 0, A1: 0})
    assert runner.take_rewinds() == {A0: 7}
    assert runner.last_committed[A0] == 7 and runner.current[A0] == 7


def test_seek_outside_assignment_fails_the_task():
    task = ScriptedTask(seeks={B0: 1})
    runner, _ = _runner(task)
    with pytest.raises(TaskFailedError, match="does not own"):
        runner.open({A0: 0})


def test_commit_tick_and_request_commit():
    now = [0.0]
    task = ScriptedTask()
    runner, commits = _runner(task, clock=lambda: now[0])
    runner.open({A0: 0})
    runner.deliver(_records(A0, range(2)), {A0: 2})
    runner.maybe_commit()
    assert commits == []
    now[0] = 1.5
    runner.maybe_commit()
    assert commits == [{A0: 2}]
    runner.deliver(_records(A0, range(2, 3)), {A0: 3})
    task.context.request_commit()
    runner.maybe_commit()
    assert commits[-1] == {A0: 3}


def test_range_assignment_matches_the_range_assignor():
    parts = [TopicPartition("t", p) for p in range(8)] + [TopicPartition("u", 0)]
    assignment = range_assignment(parts, 3)
    assert assignment[0] == {TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2),
                             TopicPartition("u", 0)}
    assert assignment[1] == {TopicPartition("t", 3), TopicPartition("t", 4), TopicPartition("t", 5)}
    assert assignment[2] == {TopicPartition("t", 6), TopicPartition("t", 7)}


def test_new_partitions_never_move_existing_ones():
    current = range_assignment([TopicPartition("t", p) for p in range(4)], 2)
    additions = extend_assignment(current, [TopicPartition("t", 4), TopicPartition("t", 5)])
    assert set().union(*additions.values()) == {TopicPartition("t", 4), TopicPartition("t", 5)}
