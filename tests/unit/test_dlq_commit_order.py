"""Beyond Kafka Connect: a failed record's dead letter queue write is acknowledged before any offset that
covers it is committed, and a DLQ write that fails blocks the commit (nothing committed past it)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from connect_spark.api import SinkTask, TopicPartition
from connect_spark.api.errors import ConnectException
from connect_spark.runtime.conversion.sink_records import RecordConverter
from connect_spark.runtime.errors import ErrorHandler, ErrorHandlingConfig, RawRecord, Reporter, ToleranceType
from connect_spark.runtime.tasks.worker_task import WorkerSinkTask
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.string import StringConverter
from connect_spark.transforms.chain import TransformationChain

TP = TopicPartition("orders", 0)


class AcceptingTask(SinkTask):
    def version(self):
        return "t"

    def start(self, props):
        pass

    def put(self, records):
        pass

    def stop(self):
        pass


class SlowDlq(Reporter):
    """Acknowledges each write from another thread after a delay (or fails it), logging events."""

    def __init__(self, events: list, fail: bool = False) -> None:
        self.events = events
        self.fail = fail

    def report(self, context):
        future: Future[None] = Future()

        def acknowledge():
            self.events.append(f"dlq-ack@{context.record.offset}")
            if self.fail:
                future.set_exception(ConnectException("broker said no"))
            else:
                future.set_result(None)

        threading.Timer(0.2, acknowledge).start()
        return future


def _pipeline(events: list, fail: bool = False):
    handler = ErrorHandler(ErrorHandlingConfig(tolerance=ToleranceType.ALL), "conn", 0, [SlowDlq(events, fail)])
    value = JsonConverter()
    value.configure({"schemas.enable": "false"}, False)
    header = StringConverter()
    header.configure({})
    converter = RecordConverter(StringConverter(), value, header, TransformationChain(), handler)
    task = WorkerSinkTask("conn", 0, AcceptingTask(), {}, commit=lambda offsets: events.append(f"commit@{offsets[TP]}"),
                          offset_flush_interval_ms=0, before_commit=handler.await_reports)
    task.start()
    task.open({TP: 0})
    batch = converter.convert([RawRecord("orders", 0, o, None, -1, b"k", v, ())
                               for o, v in enumerate([b"{}", b"{bad", b"{}"])])
    assert task.deliver(batch.records, batch.consumed)
    return task


def test_the_dlq_write_is_acknowledged_before_the_offset_past_it_is_committed():
    events: list = []
    _pipeline(events).commit_offsets(closing=False)
    assert events == ["dlq-ack@1", "commit@3"]


def test_a_failed_dlq_write_blocks_the_commit():
    events: list = []
    task = _pipeline(events, fail=True)
    with pytest.raises(ConnectException, match="broker said no"):
        task.commit_offsets(closing=False)
    assert events == ["dlq-ack@1"]  # nothing committed
    assert task.last_committed[TP] == 0


class _BulkUnit:
    """What :func:`hand_over` uses of a task unit: its DLQ acknowledgement and its task loop."""

    def __init__(self, handler: ErrorHandler, worker_task: WorkerSinkTask) -> None:
        self.worker_task = worker_task
        self.await_dead_letters = handler.await_reports


def _bulk(events: list, fail: bool = False):
    handler = ErrorHandler(ErrorHandlingConfig(tolerance=ToleranceType.ALL), "conn", 0, [SlowDlq(events, fail)])
    value = JsonConverter()
    value.configure({"schemas.enable": "false"}, False)
    header = StringConverter()
    header.configure({})
    converter = RecordConverter(StringConverter(), value, header, TransformationChain(), handler)
    task = WorkerSinkTask("conn", 0, AcceptingTask(), {}, commit=lambda offsets: events.append(f"commit@{offsets[TP]}"),
                          offset_flush_interval_ms=0, before_commit=handler.await_reports)
    task.start()
    task.open({TP: 0})
    batch = converter.convert([RawRecord("orders", 0, o, None, -1, b"k", v, ())
                               for o, v in enumerate([b"{}", b"{bad", b"{}"])])
    return _BulkUnit(handler, task), batch


def test_a_bulk_batch_is_handed_over_only_after_its_dlq_writes_are_acknowledged():
    from connect_spark.runtime.tasks.loop import hand_over

    events: list = []
    unit, batch = _bulk(events)
    # put_arrow / put_dataframe is where a bulk sink commits data (the Delta commit, a published file)
    assert hand_over(unit, lambda: events.append("sink-commit"), batch.consumed, wait=lambda s: True)
    unit.worker_task.commit_offsets(closing=False)
    assert events == ["dlq-ack@1", "sink-commit", "commit@3"]


def test_a_failed_dlq_write_fails_a_bulk_batch_before_the_sink_commits():
    from connect_spark.runtime.tasks.loop import hand_over

    events: list = []
    unit, batch = _bulk(events, fail=True)
    with pytest.raises(ConnectException, match="broker said no"):
        hand_over(unit, lambda: events.append("sink-commit"), batch.consumed, wait=lambda s: True)
    assert events == ["dlq-ack@1"]
