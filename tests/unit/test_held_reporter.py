"""The reporter that holds a Spark task's dead letters until the task has converted its last row."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from connect_spark.api.errors import DataException
from connect_spark.runtime.errors import ErrorContext, ErrorMetrics, RawRecord, Reporter, Stage
from connect_spark.runtime.errors.held import HeldReporter

JSON = "org.apache.kafka.connect.json.JsonConverter"


def _context(offset: int) -> ErrorContext:
    raw = RawRecord(topic="orders", partition=0, offset=offset, timestamp=1_700_000_000_000, timestamp_type=0,
                    key=b"k", value=b"{", headers=())
    return ErrorContext(Stage.VALUE_CONVERTER, JSON, DataException("bad"), raw)


class Queue(Reporter):
    """A dead letter queue stand-in: each report a future the test completes or fails."""

    def __init__(self, fail_offset: int | None = None) -> None:
        self.sent: list[int] = []
        self.closed = False
        self.fail_offset = fail_offset

    def report(self, context: ErrorContext) -> "Future[None]":
        self.sent.append(context.record.offset)
        future: Future[None] = Future()
        if context.record.offset == self.fail_offset:
            future.set_exception(OSError("broker gone"))
        else:
            future.set_result(None)
        return future

    def close(self) -> None:
        self.closed = True


def test_reports_are_held_until_sent_then_sent_in_order_and_awaited():
    queue = Queue()
    held = HeldReporter(queue)
    assert held.report(_context(3)) is None and held.report(_context(1)) is None
    assert queue.sent == [] and held.held == 2
    held.send_held()
    assert queue.sent == [3, 1] and held.held == 0
    held.send_held()  # nothing held: nothing sent again
    assert queue.sent == [3, 1]


def test_a_report_that_cannot_be_made_durable_fails_the_send():
    held = HeldReporter(Queue(fail_offset=2))
    for offset in (1, 2, 3):
        held.report(_context(offset))
    with pytest.raises(OSError, match="broker gone"):
        held.send_held()


def test_dropped_and_closed_reports_are_never_sent():
    queue = Queue()
    held = HeldReporter(queue)
    held.report(_context(1))
    held.drop_held()
    held.send_held()
    held.report(_context(2))
    held.close()
    assert queue.sent == [] and queue.closed and held.held == 0


def test_the_inner_reporter_counts_into_the_handlers_metrics():
    queue = Queue()
    held = HeldReporter(queue)
    metrics = ErrorMetrics()
    held.attach_metrics(metrics)
    assert held.metrics is metrics and queue.metrics is metrics
