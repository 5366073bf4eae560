"""Beyond Kafka Connect: a failed record's dead letter queue write is acknowledged before any offset that
covers it is committed, and a DLQ write that fails blocks the commit (nothing committed past it)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from connect_spark.api import SinkTask, TopicPartition
from connect_spark.api.errors import ConnectException
from connect_spark.runtime.conversion import RecordConverter
from connect_spark.runtime.errors import ErrorHandler, ErrorHandlingConfig, RawRecord, Reporter, ToleranceType
from connect_spark.runtime.worker_task import WorkerSinkTask
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
