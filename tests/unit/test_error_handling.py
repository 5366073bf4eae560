"""Error handling without a broker: back-off schedule, tolerance, metrics, log line, DLQ headers, config."""

from __future__ import annotations

import logging
import random
import threading
import time as wall_time
from concurrent.futures import Future
from typing import Any

import pytest

from connect_spark.api.converters import Converter, HeaderConverter
from connect_spark.api.errors import ConnectException, DataException, RetriableException
from connect_spark.api.records import Headers, SinkRecord, TimestampType
from connect_spark.config.definition import ConfigValidationError
from connect_spark.runtime.errors import (
    METRIC_NAMES,
    SINK_TASK_CLASS,
    DeadLetterQueueReporter,
    ErrorContext,
    ErrorHandler,
    ErrorHandlingConfig,
    ErrorMetrics,
    LogReporter,
    RawRecord,
    Reporter,
    Stage,
    ToleranceExceededException,
    ToleranceType,
    WorkerErrantRecordReporter,
    context_headers,
    converter_serializer,
    create_reporters,
    exception_class_name,
)

JSON = "org.apache.kafka.connect.json.JsonConverter"
CAST = "org.apache.kafka.connect.transforms.Cast$Value"

RAW = RawRecord(
    topic="orders",
    partition=2,
    offset=41,
    timestamp=1_700_000_000_000,
    timestamp_type=0,
    key=b"k-41",
    value=b"secret-value",
    headers=(("source", b"web"), ("empty", None)),
)


# --- test doubles -----------------------------------------------------------------------------------


class FakeTime:
    """A monotonic clock and a sleep that advances it; records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class RecordingReporter(Reporter):
    """Keeps every context it is given; optionally returns a pending future per report."""

    def __init__(self, pending: bool = False, fail_with: Exception | None = None) -> None:
        self.contexts: list[ErrorContext] = []
        self.futures: list[Future] = []
        self.pending = pending
        self.fail_with = fail_with
        self.closed = False

    def report(self, context: ErrorContext) -> Future | None:
        self.contexts.append(context)
        if self.fail_with is not None:
            raise self.fail_with
        if not self.pending:
            return None
        future: Future = Future()
        self.futures.append(future)
        return future

    def close(self) -> None:
        self.closed = True


class Failing:
    """An operation that raises the given exceptions in turn, then returns ``result``."""

    def __init__(self, *errors: BaseException, result: Any = "ok", time: FakeTime | None = None,
                 duration: float = 0.0) -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0
        self.time = time
        self.duration = duration

    def __call__(self) -> Any:
        self.calls += 1
        if self.time is not None:
            self.time.now += self.duration
        if self.errors:
            raise self.errors.pop(0)
        return self.result


def handler_for(
    tolerance: ToleranceType = ToleranceType.ALL,
    retry_timeout_ms: int = 0,
    retry_delay_max_ms: int = 60000,
    reporters: list[Reporter] | None = None,
    time: FakeTime | None = None,
    rng: random.Random | None = None,
    **kwargs: Any,
) -> ErrorHandler:
    time = time or FakeTime()
    config = ErrorHandlingConfig(tolerance=tolerance, retry_timeout_ms=retry_timeout_ms,
                                 retry_delay_max_ms=retry_delay_max_ms)
    return ErrorHandler(config, "my-sink", 3, reporters if reporters is not None else [RecordingReporter()],
                        clock=time.clock, sleep=time.sleep, rng=rng, **kwargs)


def metrics_of(handler: ErrorHandler) -> dict[str, int]:
    values = handler.metrics.as_dict()
    values.pop("last-error-timestamp")
    return values


def counts(failures=0, errors=0, skipped=0, retries=0, logged=0, dlq_requests=0, dlq_failures=0) -> dict[str, int]:
    return {
        "total-record-failures": failures,
        "total-record-errors": errors,
        "total-records-skipped": skipped,
        "total-retries": retries,
        "total-errors-logged": logged,
        "deadletterqueue-produce-requests": dlq_requests,
        "deadletterqueue-produce-failures": dlq_failures,
    }


# --- configuration ------------------------------------------------------------------------------------


def test_config_defaults_are_kafkas():
    config = ErrorHandlingConfig.from_connector_config({"name": "x", "topics": "t"})
    assert config == ErrorHandlingConfig()
    assert config.tolerance is ToleranceType.NONE
    assert (config.retry_timeout_ms, config.retry_delay_max_ms) == (0, 60000)
    assert (config.log_enable, config.log_include_messages) == (False, False)
    assert (config.dlq_topic_name, config.dlq_replication_factor, config.dlq_context_headers_enable) == ("", 3, False)
    assert not config.dlq_enabled and not config.errant_record_reporter_enabled


def test_config_reads_every_key():
    config = ErrorHandlingConfig.from_connector_config({
        "errors.tolerance": "all",
        "errors.retry.timeout": "-1",
        "errors.retry.delay.max.ms": "5000",
        "errors.log.enable": "true",
        "errors.log.include.messages": "TRUE",
        "errors.deadletterqueue.topic.name": " dlq-orders ",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    })
    assert config == ErrorHandlingConfig(ToleranceType.ALL, -1, 5000, True, True, "dlq-orders", 1, True)
    assert config.dlq_enabled and config.errant_record_reporter_enabled
    assert ErrorHandlingConfig(log_enable=True).errant_record_reporter_enabled


def test_config_reports_every_invalid_key():
    with pytest.raises(ConfigValidationError) as info:
        ErrorHandlingConfig.from_connector_config({
            "errors.tolerance": "some",
            "errors.retry.timeout": "soon",
            "errors.log.enable": "yes",
        })
    assert {issue.key for issue in info.value.issues} == {
        "errors.tolerance", "errors.retry.timeout", "errors.log.enable"}


# --- back-off schedule ----------------------------------------------------------------------------------


def test_retriable_errors_back_off_exponentially_within_the_timeout():
    time = FakeTime()
    handler = handler_for(retry_timeout_ms=10_000, time=time)
    operation = Failing(*[RetriableException(f"busy {i}") for i in range(3)], result="converted")
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW) == "converted"
    assert operation.calls == 4
    assert time.sleeps == pytest.approx([0.3, 0.6, 1.2])
    assert metrics_of(handler) == counts(failures=3, retries=3)
    assert not handler.failed
    assert handler.reporters[0].contexts == []


def test_the_last_back_off_is_cut_at_the_deadline_then_the_record_fails():
    time = FakeTime()
    reporter = RecordingReporter()
    handler = handler_for(retry_timeout_ms=10_000, time=time, reporters=[reporter])
    operation = Failing(*[RetriableException("busy") for _ in range(100)])
    assert handler.execute(Stage.TRANSFORMATION, CAST, operation, RAW) is None
    # 0.3+0.6+1.2+2.4+4.8 = 9.3 s; the next 9.6 s back-off is cut to the 0.7 s left.
    assert time.sleeps == pytest.approx([0.3, 0.6, 1.2, 2.4, 4.8, 0.7])
    assert operation.calls == 7
    assert metrics_of(handler) == counts(failures=7, errors=1, skipped=1, retries=6)
    assert handler.failed
    [context] = reporter.contexts
    assert (context.stage, context.executing_class, context.record, context.attempts) == (
        Stage.TRANSFORMATION, CAST, RAW, 7)
    assert isinstance(context.error, RetriableException)


def test_back_off_beyond_the_maximum_is_random_below_it():
    time = FakeTime()
    handler = handler_for(retry_timeout_ms=60_000, retry_delay_max_ms=1000, time=time, rng=random.Random(7))
    operation = Failing(*[RetriableException("busy") for _ in range(6)])
    assert handler.execute(Stage.KEY_CONVERTER, JSON, operation, RAW) == "ok"
    expected = random.Random(7)
    jitter = [expected.randrange(1000) / 1000 for _ in range(4)]
    assert time.sleeps == pytest.approx([0.3, 0.6] + jitter)
    assert all(0 <= s < 1.0 for s in time.sleeps[2:])


def test_time_spent_in_the_operation_counts_against_the_retry_timeout():
    time = FakeTime()
    handler = handler_for(retry_timeout_ms=1000, time=time)
    operation = Failing(RetriableException("slow"), RetriableException("slow"), time=time, duration=2.0)
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW) is None
    assert operation.calls == 1 and time.sleeps == []


def test_retry_timeout_zero_never_retries():
    time = FakeTime()
    handler = handler_for(retry_timeout_ms=0, time=time)
    operation = Failing(RetriableException("busy"))
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW) is None
    assert operation.calls == 1 and time.sleeps == []
    assert metrics_of(handler) == counts(failures=1, errors=1, skipped=1)


def test_retry_timeout_minus_one_retries_until_success():
    time = FakeTime()
    handler = handler_for(retry_timeout_ms=-1, retry_delay_max_ms=60_000, time=time, rng=random.Random(1))
    operation = Failing(*[RetriableException("busy") for _ in range(40)], result=42)
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW) == 42
    assert operation.calls == 41
    assert len(time.sleeps) == 40 and max(time.sleeps) < 60.0
    assert metrics_of(handler) == counts(failures=40, retries=40)


def test_stop_interrupts_endless_retries_without_reporting_or_skipping():
    time = FakeTime()
    reporter = RecordingReporter()
    handler = handler_for(retry_timeout_ms=-1, time=time, reporters=[reporter])

    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        if len(time.sleeps) == 3:
            handler.stop()

    handler._sleep = sleep  # the stop arrives from another thread while the handler sleeps
    operation = Failing(*[RetriableException("busy") for _ in range(100)])
    with pytest.raises(ConnectException, match=r"stopped while retrying stage VALUE_CONVERTER") as info:
        handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW)
    assert not isinstance(info.value, ToleranceExceededException)
    assert operation.calls == 3 and reporter.contexts == []
    assert metrics_of(handler) == counts(failures=3, retries=2)


def test_the_default_sleep_is_interrupted_by_stop(monkeypatch):
    from connect_spark.runtime.errors import retry

    monkeypatch.setattr(retry, "RETRIES_DELAY_MIN_MS", 3_600_000)  # the first back-off: one hour
    config = ErrorHandlingConfig(tolerance=ToleranceType.ALL, retry_timeout_ms=-1, retry_delay_max_ms=7_200_000)
    handler = ErrorHandler(config, "my-sink", 0, [])
    operation = Failing(*[RetriableException("busy") for _ in range(100)])
    raised: list[BaseException] = []

    def run() -> None:
        try:
            handler.execute(Stage.VALUE_CONVERTER, JSON, operation, RAW)
        except BaseException as e:
            raised.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    while operation.calls < 1 and worker.is_alive():  # the first attempt failed: the hour's wait begins
        wall_time.sleep(0.01)
    handler.stop()
    worker.join(120)  # a hang guard only: an uninterrupted wait would last the hour
    assert not worker.is_alive(), "stop did not interrupt the back-off"
    assert len(raised) == 1 and isinstance(raised[0], ConnectException)
    assert "stopped while retrying" in str(raised[0])
    assert operation.calls == 1
    # once stopped, a retriable failure is not retried (nor skipped) at all
    with pytest.raises(ConnectException, match="stopped while retrying"):
        handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(RetriableException("busy")), RAW)


# --- tolerance ------------------------------------------------------------------------------------------


def test_tolerance_all_reports_counts_and_skips():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    error = DataException("not JSON")
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(error), RAW) is None
    assert handler.failed
    assert metrics_of(handler) == counts(failures=1, errors=1, skipped=1)
    [context] = reporter.contexts
    assert (context.stage, context.executing_class, context.error, context.record) == (
        Stage.VALUE_CONVERTER, JSON, error, RAW)
    # later records go on, and the failure count keeps growing (it never resets)
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(), RAW) == "ok"
    assert not handler.failed
    assert handler.execute(Stage.HEADER_CONVERTER, "x.y.Headers", Failing(ValueError("bad")), RAW) is None
    assert handler.total_failures == 2
    assert metrics_of(handler) == counts(failures=2, errors=2, skipped=2)


@pytest.mark.parametrize("stage", [Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER, Stage.HEADER_CONVERTER,
                                   Stage.TRANSFORMATION])
def test_tolerance_none_reports_first_then_fails_with_context(stage):
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.NONE, reporters=[reporter])
    error = DataException("Converting byte[] to Kafka Connect data failed")
    with pytest.raises(ToleranceExceededException) as info:
        handler.execute(stage, JSON, Failing(error), RAW)
    exc = info.value
    assert isinstance(exc, ConnectException)
    assert str(exc).startswith("Tolerance exceeded in error handler")
    assert "orders[2]@41" in str(exc) and stage.value in str(exc) and JSON in str(exc)
    assert exc.__cause__ is error
    assert (exc.stage, exc.executing_class, exc.record) == (stage, JSON, RAW)
    assert [c.error for c in reporter.contexts] == [error]
    assert metrics_of(handler) == counts(failures=1, errors=1)


def test_exhausted_retries_fail_the_task_under_tolerance_none():
    """The deliberate fix: Kafka Connect would drop this record silently and commit past it."""
    time = FakeTime()
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.NONE, retry_timeout_ms=500, time=time, reporters=[reporter])
    error = RetriableException("schema registry unavailable")
    with pytest.raises(ToleranceExceededException, match=r"Tolerance exceeded.*orders\[2\]@41.*after 3 attempts"):
        handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(error, error, error, error), RAW)
    assert time.sleeps == pytest.approx([0.3, 0.2])
    assert len(reporter.contexts) == 1
    assert metrics_of(handler) == counts(failures=3, errors=1, retries=2)


def test_only_retriable_exceptions_are_handled_outside_conversion_stages():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    error = ValueError("boom")
    with pytest.raises(ConnectException, match="Unhandled exception in error handler") as info:
        handler.execute(Stage.TASK_PUT, SINK_TASK_CLASS, Failing(error), RAW)
    assert not isinstance(info.value, ToleranceExceededException)
    assert info.value.__cause__ is error
    assert len(reporter.contexts) == 1
    # a retriable one that runs out of retries is still skipped under "all"
    assert handler.execute(Stage.TASK_PUT, SINK_TASK_CLASS, Failing(RetriableException("x")), RAW) is None


def test_base_exceptions_propagate_untouched():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    with pytest.raises(KeyboardInterrupt):
        handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(KeyboardInterrupt()), RAW)
    assert reporter.contexts == []
    assert metrics_of(handler) == counts()


def test_last_error_timestamp_uses_the_wall_clock():
    metrics = ErrorMetrics(wall_clock=lambda: 1_700_000_123.456)
    handler = handler_for(ToleranceType.ALL, metrics=metrics)
    assert handler.metrics.as_dict()["last-error-timestamp"] == 0
    handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(DataException("x")), RAW)
    assert handler.metrics is metrics
    assert metrics.as_dict()["last-error-timestamp"] == 1_700_000_123_456
    assert tuple(metrics.as_dict()) == METRIC_NAMES


# --- the put path ---------------------------------------------------------------------------------------


def sink_record(**overrides: Any) -> SinkRecord:
    fields = dict(topic="orders", kafka_partition=2, key_schema=None, key="k-41", value_schema=None,
                  value={"id": 41}, kafka_offset=41, timestamp=1_700_000_000_000,
                  timestamp_type=TimestampType.CREATE_TIME)
    fields.update(overrides)
    return SinkRecord(**fields)


def test_report_put_error_under_all_returns_a_future_and_counts_a_failure():
    reporter = RecordingReporter(pending=True)
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    error = DataException("row rejected by the sink")
    future = handler.report_put_error(sink_record(), RAW, error)
    [context] = reporter.contexts
    assert (context.stage, context.executing_class, context.error, context.record) == (
        Stage.TASK_PUT, SINK_TASK_CLASS, error, RAW)
    assert SINK_TASK_CLASS == "org.apache.kafka.connect.sink.SinkTask"
    assert not future.done()
    assert future.cancel() is False
    reporter.futures[0].set_result(None)
    assert future.result(timeout=1) is None
    assert metrics_of(handler) == counts(failures=1)


def test_report_put_error_under_none_reports_then_raises():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.NONE, reporters=[reporter])
    error = DataException("row rejected")
    with pytest.raises(ToleranceExceededException, match=r"^Tolerance exceeded in error handler.*orders\[2\]@41") as info:
        handler.report_put_error(sink_record(), RAW, error)
    assert info.value.__cause__ is error
    assert info.value.stage is Stage.TASK_PUT
    assert len(reporter.contexts) == 1
    assert metrics_of(handler) == counts(failures=1, errors=1)


def test_reports_from_several_task_threads_are_all_counted_and_reported():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])

    def report_many() -> None:
        for _ in range(200):
            handler.report_put_error(sink_record(), RAW, DataException("x"))

    threads = [threading.Thread(target=report_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reporter.contexts) == 800 and handler.total_failures == 800
    assert metrics_of(handler) == counts(failures=800)


class Utf8Converter(Converter):
    def configure(self, configs, is_key):
        pass

    def to_connect_data(self, topic, value, headers=None):
        raise NotImplementedError

    def from_connect_data(self, topic, schema, value, headers=None):
        return None if value is None else f"{topic}:{value}".encode()


class Utf8HeaderConverter(HeaderConverter):
    def configure(self, configs):
        pass

    def to_connect_header(self, topic, header_key, value):
        raise NotImplementedError

    def from_connect_header(self, topic, header_key, schema, value):
        return None if value is None else str(value).encode()


def test_a_record_built_by_the_task_is_serialized_with_the_converters():
    reporter = RecordingReporter()
    serialize = converter_serializer(Utf8Converter(), Utf8Converter(), Utf8HeaderConverter())
    handler = handler_for(ToleranceType.ALL, reporters=[reporter], serialize=serialize)
    built = sink_record(topic="routed", key="k", value="v", kafka_offset=7,
                        headers=Headers().add("h", 5).add("n", None))
    errant = WorkerErrantRecordReporter(handler, raw_lookup=lambda record: None)
    errant.report(built, DataException("nope")).result(timeout=1)
    [context] = reporter.contexts
    assert context.record == RawRecord("routed", 2, 7, 1_700_000_000_000, 0, b"routed:k", b"routed:v",
                                       (("h", b"5"), ("n", None)))


def test_errant_record_reporter_finds_the_consumed_record():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    consumed = {("orders", 2, 41): RAW}
    errant = WorkerErrantRecordReporter(
        handler,
        raw_lookup=lambda r: consumed.get((r.original_topic, r.original_kafka_partition, r.original_kafka_offset)))
    transformed = sink_record().new_record("routed-orders", 0, None, "k", None, "v", None)
    errant.report(transformed, DataException("nope"))
    assert reporter.contexts[0].record is RAW


def test_without_a_consumed_record_or_serializer_the_record_is_still_logged():
    reporter = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    handler.report_put_error(sink_record(), None, DataException("nope"))
    assert reporter.contexts[0].record is None
    assert reporter.contexts[0].coordinates() == "<unknown record>"


# --- awaiting reports ---------------------------------------------------------------------------------


def test_await_reports_waits_for_every_pending_report():
    reporter = RecordingReporter(pending=True)
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    handler.await_reports(timeout=0)  # nothing pending
    handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(DataException("a")), RAW)
    handler.report_put_error(sink_record(), RAW, DataException("b"))
    assert handler.pending_reports == 2
    with pytest.raises(ConnectException, match=r"timed out after 0.05 s waiting for 2 dead letter queue write"):
        handler.await_reports(timeout=0.05)
    for future in reporter.futures:
        future.set_result(None)
    handler.await_reports(timeout=1)
    assert handler.pending_reports == 0


def test_a_failed_report_fails_every_later_await():
    reporter = RecordingReporter(pending=True)
    handler = handler_for(ToleranceType.ALL, reporters=[reporter])
    handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(DataException("a")), RAW)
    cause = ConnectException("Could not produce to dead letter queue")
    reporter.futures[0].set_exception(cause)
    for _ in range(2):
        with pytest.raises(ConnectException, match="1 error report") as info:
            handler.await_reports(timeout=1)
        assert info.value.__cause__ is cause


def test_a_reporter_that_raises_does_not_stop_the_others_but_fails_the_await():
    broken = RecordingReporter(fail_with=RuntimeError("reporter bug"))
    good = RecordingReporter()
    handler = handler_for(ToleranceType.ALL, reporters=[broken, good])
    assert handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(DataException("a")), RAW) is None
    assert len(good.contexts) == 1
    with pytest.raises(ConnectException, match="reporter bug"):
        handler.await_reports(timeout=1)


def test_close_closes_every_reporter_once():
    reporters = [RecordingReporter(), RecordingReporter()]
    handler = handler_for(reporters=reporters)
    handler.close()
    handler.close()
    assert all(r.closed for r in reporters)


# --- the log reporter -----------------------------------------------------------------------------------


def log_lines(caplog, reporter: LogReporter, context: ErrorContext) -> list[logging.LogRecord]:
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="connect_spark.runtime.errors"):
        reporter.report(context)
    return [r for r in caplog.records if r.name.startswith("connect_spark.runtime.errors")]


def test_log_reporter_writes_kafkas_line_without_the_record(caplog):
    reporter = LogReporter("my-sink", 3, include_messages=False)
    error = DataException("bad bytes")
    [record] = log_lines(caplog, reporter, ErrorContext(Stage.VALUE_CONVERTER, JSON, error, RAW))
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (
        "Error encountered in task my-sink-3. Executing stage 'VALUE_CONVERTER' with class "
        "'org.apache.kafka.connect.json.JsonConverter'.")
    assert record.exc_info is not None and record.exc_info[1] is error
    assert reporter.metrics.as_dict()["total-errors-logged"] == 1


def test_log_reporter_adds_the_consumed_record_coordinates_but_never_its_data(caplog):
    reporter = LogReporter("my-sink", 3, include_messages=True)
    context = ErrorContext(Stage.TRANSFORMATION, CAST, DataException("x"), RAW)
    [record] = log_lines(caplog, reporter, context)
    assert record.getMessage() == (
        "Error encountered in task my-sink-3. Executing stage 'TRANSFORMATION' with class "
        "'org.apache.kafka.connect.transforms.Cast$Value', where consumed record is {topic='orders', "
        "partition=2, offset=41, timestamp=1700000000000, timestampType=CreateTime}.")
    assert "secret" not in caplog.text and "k-41" not in caplog.text and "web" not in caplog.text

    log_append = RawRecord("orders", 0, 5, 1_600_000_000_000, 1, None, None)
    [record] = log_lines(caplog, reporter, ErrorContext(Stage.KEY_CONVERTER, JSON, DataException("x"), log_append))
    assert record.getMessage().endswith(
        "where consumed record is {topic='orders', partition=0, offset=5, timestamp=1600000000000, "
        "timestampType=LogAppendTime}.")

    no_timestamp = RawRecord("orders", 0, 6, None, -1, None, None)
    [record] = log_lines(caplog, reporter, ErrorContext(Stage.KEY_CONVERTER, JSON, DataException("x"), no_timestamp))
    assert record.getMessage().endswith("where consumed record is {topic='orders', partition=0, offset=6}.")


def test_handler_counts_logged_errors_through_the_log_reporter(caplog):
    handler = handler_for(ToleranceType.ALL, reporters=[LogReporter("my-sink", 3)])
    with caplog.at_level(logging.ERROR, logger="connect_spark.runtime.errors"):
        handler.execute(Stage.VALUE_CONVERTER, JSON, Failing(DataException("x")), RAW)
    assert metrics_of(handler) == counts(failures=1, errors=1, skipped=1, logged=1)


# --- dead letter queue headers and guards (no broker needed) ------------------------------------------


class ChainedError(Exception):
    pass


def test_context_headers_have_kafkas_names_order_and_values():
    try:
        try:
            raise KeyError("id")
        except KeyError as inner:
            raise ChainedError("could not convert") from inner
    except ChainedError as e:
        error = e
    headers = context_headers(ErrorContext(Stage.VALUE_CONVERTER, JSON, error, RAW), "my-sink", 3)
    names = [name for name, _ in headers]
    assert names == [
        "__connect.errors.topic",
        "__connect.errors.partition",
        "__connect.errors.offset",
        "__connect.errors.connector.name",
        "__connect.errors.task.id",
        "__connect.errors.stage",
        "__connect.errors.class.name",
        "__connect.errors.exception.class.name",
        "__connect.errors.exception.message",
        "__connect.errors.exception.stacktrace",
    ]
    values = dict(headers)
    assert values["__connect.errors.topic"] == b"orders"
    assert values["__connect.errors.partition"] == b"2"
    assert values["__connect.errors.offset"] == b"41"
    assert values["__connect.errors.connector.name"] == b"my-sink"
    assert values["__connect.errors.task.id"] == b"3"
    assert values["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert values["__connect.errors.class.name"] == JSON.encode()
    assert values["__connect.errors.exception.class.name"] == f"{ChainedError.__module__}.ChainedError".encode()
    assert values["__connect.errors.exception.message"] == b"could not convert"
    trace = values["__connect.errors.exception.stacktrace"].decode("utf-8")
    assert trace.startswith("Traceback (most recent call last):")
    assert "KeyError: 'id'" in trace and "direct cause" in trace and "ChainedError: could not convert" in trace


def test_exception_class_names():
    assert exception_class_name(ValueError("x")) == "ValueError"
    assert exception_class_name(DataException("x")) == "connect_spark.api.errors.DataException"
    headers = dict(context_headers(ErrorContext(Stage.TASK_PUT, SINK_TASK_CLASS, RuntimeError(), None), "c", 0))
    assert "__connect.errors.topic" not in headers
    assert headers["__connect.errors.exception.message"] == b""
    assert headers["__connect.errors.class.name"] == b"org.apache.kafka.connect.sink.SinkTask"


def test_dlq_reporter_never_writes_back_a_record_consumed_from_the_dlq(caplog):
    # an unreachable address: the guard must act before any connection is attempted
    reporter = DeadLetterQueueReporter("127.0.0.1:1", "dlq-orders", "my-sink", 0, 1, context_headers=True)
    looped = RawRecord("dlq-orders", 0, 9, None, -1, b"k", b"v")
    with caplog.at_level(logging.ERROR, logger="connect_spark.runtime.errors"):
        future = reporter.report(ErrorContext(Stage.VALUE_CONVERTER, JSON, DataException("x"), looped))
    assert future.done() and future.exception() is None
    assert "dlq-orders[0]@9" in caplog.text
    assert reporter.metrics.as_dict()["deadletterqueue-produce-requests"] == 1
    assert reporter.metrics.as_dict()["deadletterqueue-produce-failures"] == 1
    assert reporter._producer is None
    reporter.close()


def test_dlq_reporter_counts_an_unknown_record_as_a_failed_write():
    reporter = DeadLetterQueueReporter("127.0.0.1:1", "dlq-orders", "my-sink", 0, 1)
    future = reporter.report(ErrorContext(Stage.TASK_PUT, SINK_TASK_CLASS, DataException("x"), None))
    assert future.done()
    assert reporter.metrics.as_dict()["deadletterqueue-produce-failures"] == 1
    assert reporter.producer_client_id == "connector-dlq-producer-my-sink-0"


# --- wiring ---------------------------------------------------------------------------------------------


def test_create_reporters_follows_the_configuration():
    assert create_reporters(ErrorHandlingConfig(), "c", 0, None) == []
    [log_reporter] = create_reporters(ErrorHandlingConfig(log_enable=True, log_include_messages=True), "c", 1, None)
    assert isinstance(log_reporter, LogReporter) and log_reporter.include_messages
    config = ErrorHandlingConfig(log_enable=True, dlq_topic_name="dlq", dlq_replication_factor=2,
                                 dlq_context_headers_enable=True)
    log_reporter, dlq = create_reporters(config, "c", 1, "127.0.0.1:9092", {"security.protocol": "PLAINTEXT"})
    assert isinstance(dlq, DeadLetterQueueReporter)
    assert (dlq.topic, dlq.replication_factor, dlq.context_headers, dlq.task_id) == ("dlq", 2, True, 1)
    with pytest.raises(ValueError, match="bootstrap.servers"):
        create_reporters(ErrorHandlingConfig(dlq_topic_name="dlq"), "c", 0, None)


def test_the_handler_shares_its_metrics_with_its_reporters():
    log_reporter = LogReporter("c", 0)
    handler = handler_for(reporters=[log_reporter])
    assert log_reporter.metrics is handler.metrics
