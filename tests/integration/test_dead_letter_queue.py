"""The dead letter queue against a real Kafka broker: topic creation, record format, durability, failures."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.converters import Converter, HeaderConverter
from connect_spark.api.errors import ConnectException, DataException
from connect_spark.api.records import Headers, SinkRecord, TimestampType
from connect_spark.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorHandler,
    ErrorHandlingConfig,
    RawRecord,
    Stage,
    ToleranceExceededException,
    ToleranceType,
    WorkerErrantRecordReporter,
    converter_serializer,
    create_reporters,
)
from connect_spark.testing.kafka import end_offsets

JSON = "org.apache.kafka.connect.json.JsonConverter"
CAST = "org.apache.kafka.connect.transforms.Cast$Value"


def raw(topic: str, offset: int = 41, **overrides: Any) -> RawRecord:
    fields = dict(topic=topic, partition=2, offset=offset, timestamp=1_700_000_000_000 + offset, timestamp_type=0,
                  key=f"key-{offset}".encode(), value=b'{"not": json', headers=(("source", b"web"), ("trace", b"\x00\xff")))
    fields.update(overrides)
    return RawRecord(**fields)


def build(bootstrap_servers: str, dlq: str, tolerance: ToleranceType = ToleranceType.ALL,
          context_headers: bool = True, replication_factor: int = 1, **kwargs: Any) -> ErrorHandler:
    config = ErrorHandlingConfig(tolerance=tolerance, dlq_topic_name=dlq, dlq_replication_factor=replication_factor,
                                 dlq_context_headers_enable=context_headers)
    reporters = create_reporters(config, "orders-sink", 4, bootstrap_servers)
    return ErrorHandler(config, "orders-sink", 4, reporters, **kwargs)


def fail(error: Exception):
    def operation():
        raise error

    return operation


def read_all(bootstrap_servers: str, topic: str, expected: int, timeout: float = 30.0) -> list:
    """Every record of partition 0 of ``topic``, reading until ``expected`` records arrived."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records: list = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def describe(bootstrap_servers: str, topic: str) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        [described] = admin.describe_topics([topic])
        return described
    finally:
        admin.close()


def test_a_tolerated_conversion_failure_lands_in_the_created_dlq_with_kafkas_headers(bootstrap_servers, topic_name,
                                                                                    caplog):
    dlq = f"dlq-{topic_name}"
    # replication factor 3, as Kafka's default, on a one-broker cluster: lowered with a WARN
    handler = build(bootstrap_servers, dlq, replication_factor=3)
    record = raw(topic_name)
    error = DataException("Converting byte[] to Kafka Connect data failed due to serialization error")
    try:
        with caplog.at_level(logging.WARNING):
            assert handler.execute(Stage.VALUE_CONVERTER, JSON, fail(error), record) is None
        handler.await_reports(timeout=30)
        # acknowledged means readable: the log end offset already covers it
        assert end_offsets(bootstrap_servers, dlq) == {0: 1}
    finally:
        handler.close()

    assert "replication factor 1 instead of 3" in caplog.text
    described = describe(bootstrap_servers, dlq)
    assert len(described["partitions"]) == 1

    [written] = read_all(bootstrap_servers, dlq, 1)
    assert written.key == record.key and written.value == record.value
    assert written.timestamp == record.timestamp and written.timestamp_type == 0
    headers = [(k, bytes(v) if v is not None else None) for k, v in written.headers]
    assert headers[:2] == [("source", b"web"), ("trace", b"\x00\xff")]
    context = dict(headers[2:])
    assert [k for k, _ in headers[2:]] == [
        "__connect.errors.topic", "__connect.errors.partition", "__connect.errors.offset",
        "__connect.errors.connector.name", "__connect.errors.task.id", "__connect.errors.stage",
        "__connect.errors.class.name", "__connect.errors.exception.class.name",
        "__connect.errors.exception.message", "__connect.errors.exception.stacktrace",
    ]
    assert context["__connect.errors.topic"] == topic_name.encode()
    assert context["__connect.errors.partition"] == b"2"
    assert context["__connect.errors.offset"] == b"41"
    assert context["__connect.errors.connector.name"] == b"orders-sink"
    assert context["__connect.errors.task.id"] == b"4"
    assert context["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert context["__connect.errors.class.name"] == JSON.encode()
    assert context["__connect.errors.exception.class.name"] == b"connect_spark.api.errors.DataException"
    assert context["__connect.errors.exception.message"] == str(error).encode()
    trace = context["__connect.errors.exception.stacktrace"].decode("utf-8")
    assert trace.startswith("Traceback (most recent call last):")
    assert trace.rstrip().endswith(f"connect_spark.api.errors.DataException: {error}")

    metrics = handler.metrics.as_dict()
    assert metrics["deadletterqueue-produce-requests"] == 1
    assert metrics["deadletterqueue-produce-failures"] == 0
    assert metrics["total-records-skipped"] == 1


def test_without_context_headers_the_record_is_written_as_consumed(bootstrap_servers, topic_name):
    dlq = f"dlq-{topic_name}"
    handler = build(bootstrap_servers, dlq, context_headers=False)
    tombstone = raw(topic_name, offset=7, value=None, headers=(("h", b"1"),))
    no_timestamp = raw(topic_name, offset=8, timestamp=None, timestamp_type=-1, headers=())
    try:
        handler.execute(Stage.TRANSFORMATION, CAST, fail(ValueError("cannot cast")), tombstone)
        handler.execute(Stage.KEY_CONVERTER, JSON, fail(ValueError("bad key")), no_timestamp)
        before = int(time.time() * 1000)
        handler.await_reports(timeout=30)
    finally:
        handler.close()
    first, second = read_all(bootstrap_servers, dlq, 2)
    assert (first.key, first.value, first.timestamp) == (b"key-7", None, tombstone.timestamp)
    assert [(k, bytes(v)) for k, v in first.headers] == [("h", b"1")]
    assert (second.key, second.value, second.headers) == (b"key-8", no_timestamp.value, [])
    assert second.timestamp >= before - 60_000  # no original timestamp: the producer's time


def test_tolerance_none_writes_the_poison_record_before_failing(bootstrap_servers, topic_name):
    dlq = f"dlq-{topic_name}"
    handler = build(bootstrap_servers, dlq, tolerance=ToleranceType.NONE)
    record = raw(topic_name, offset=99)
    try:
        with pytest.raises(ToleranceExceededException, match=rf"{topic_name}\[2\]@99"):
            handler.execute(Stage.VALUE_CONVERTER, JSON, fail(DataException("poison")), record)
        handler.await_reports(timeout=30)
    finally:
        handler.close()
    [written] = read_all(bootstrap_servers, dlq, 1)
    assert written.value == record.value
    assert dict(written.headers)["__connect.errors.offset"] == b"99"


class Utf8Converter(Converter):
    def configure(self, configs, is_key):
        pass

    def to_connect_data(self, topic, value, headers=None):
        raise NotImplementedError

    def from_connect_data(self, topic, schema, value, headers=None):
        return None if value is None else str(value).encode()


class Utf8HeaderConverter(HeaderConverter):
    def configure(self, configs):
        pass

    def to_connect_header(self, topic, header_key, value):
        raise NotImplementedError

    def from_connect_header(self, topic, header_key, schema, value):
        return None if value is None else str(value).encode()


def test_errant_record_reporter_writes_consumed_bytes_or_serializes_new_records(bootstrap_servers, topic_name):
    dlq = f"dlq-{topic_name}"
    serialize = converter_serializer(Utf8Converter(), Utf8Converter(), Utf8HeaderConverter())
    handler = build(bootstrap_servers, dlq, serialize=serialize)
    consumed = raw(topic_name, offset=5)
    by_coordinates = {(consumed.topic, consumed.partition, consumed.offset): consumed}
    errant = WorkerErrantRecordReporter(
        handler,
        lambda r: by_coordinates.get((r.original_topic, r.original_kafka_partition, r.original_kafka_offset)))
    delivered = SinkRecord(topic_name, 2, None, "key-5", None, {"decoded": True}, 5, consumed.timestamp,
                           TimestampType.CREATE_TIME)
    built = SinkRecord("made-by-task", 0, None, "k", None, "v", 123, None, headers=Headers().add("n", 1))
    try:
        first = errant.report(delivered, DataException("rejected by sink"))
        second = errant.report(built, DataException("also rejected"))
        handler.await_reports(timeout=30)
        assert first.done() and second.done() and first.exception() is None
    finally:
        handler.close()
    one, two = read_all(bootstrap_servers, dlq, 2)
    assert (one.key, one.value) == (consumed.key, consumed.value)  # the consumed bytes, not the SinkRecord
    assert dict(one.headers)["__connect.errors.stage"] == b"TASK_PUT"
    assert dict(one.headers)["__connect.errors.class.name"] == b"org.apache.kafka.connect.sink.SinkTask"
    assert (two.key, two.value) == (b"k", b"v")
    headers = dict(two.headers)
    assert headers["n"] == b"1"
    assert (headers["__connect.errors.topic"], headers["__connect.errors.offset"]) == (b"made-by-task", b"123")


def test_null_header_values_and_keyless_tombstones_are_written(bootstrap_servers, topic_name):
    dlq = f"dlq-{topic_name}"
    handler = build(bootstrap_servers, dlq, context_headers=False)
    record = raw(topic_name, offset=3, key=None, value=None, headers=(("empty", None),))
    try:
        handler.execute(Stage.VALUE_CONVERTER, JSON, fail(ValueError("x")), record)
        handler.await_reports(timeout=30)
    finally:
        handler.close()
    [written] = read_all(bootstrap_servers, dlq, 1)
    assert (written.key, written.value) == (b"", None)
    assert [(k, bytes(v)) for k, v in written.headers] == [("empty", b"")]


def test_an_existing_dlq_topic_is_used_as_it_is(bootstrap_servers, topic_name):
    from connect_spark.testing.kafka import create_topic

    dlq = f"dlq-{topic_name}"
    create_topic(bootstrap_servers, dlq, partitions=3)
    handler = build(bootstrap_servers, dlq)
    try:
        for offset in range(4):
            handler.execute(Stage.VALUE_CONVERTER, JSON, fail(ValueError("x")), raw(topic_name, offset=offset))
        handler.await_reports(timeout=30)
    finally:
        handler.close()
    assert len(describe(bootstrap_servers, dlq)["partitions"]) == 3
    assert sum(end_offsets(bootstrap_servers, dlq).values()) == 4
    assert handler.metrics.as_dict()["deadletterqueue-produce-requests"] == 4


def test_a_dlq_topic_that_cannot_be_created_fails_await_reports(bootstrap_servers, topic_name):
    dlq = "invalid topic name!"
    handler = build(bootstrap_servers, dlq)
    try:
        # the record itself is tolerated: the failure surfaces before offsets would be committed
        assert handler.execute(Stage.VALUE_CONVERTER, JSON, fail(ValueError("x")), raw(topic_name)) is None
        assert handler.execute(Stage.VALUE_CONVERTER, JSON, fail(ValueError("y")), raw(topic_name, 42)) is None
        with pytest.raises(ConnectException, match=r"Could not initialize dead letter queue with topic=invalid topic name!"):
            handler.await_reports(timeout=30)
        with pytest.raises(ConnectException):
            handler.await_reports(timeout=30)  # still failed: nothing may be committed past those records
    finally:
        handler.close()
    metrics = handler.metrics.as_dict()
    assert metrics["deadletterqueue-produce-requests"] == 2
    assert metrics["deadletterqueue-produce-failures"] == 2


def test_start_fails_fast_on_an_unusable_topic(bootstrap_servers):
    reporter = DeadLetterQueueReporter(bootstrap_servers, "bad/topic", "orders-sink", 0, 1)
    with pytest.raises(ConnectException, match="Could not initialize dead letter queue with topic=bad/topic"):
        reporter.start()
    reporter.close()
