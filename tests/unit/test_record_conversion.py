"""RecordConverter and build_task_plugins: converters see headers, one transformation chain, error stages,
the DLQ serializer, and shutdown closing everything. No JVM, no broker (the DLQ reporter connects lazily)."""

from __future__ import annotations

import json

import pytest

from connect_spark.api.converters import Converter, SchemaAndValue
from connect_spark.api.data import Schema
from connect_spark.api.errors import RetriableException
from connect_spark.api.records import Headers, SinkRecord
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.string import StringConverter
from connect_spark.runtime.conversion.sink_records import RecordConverter, raw_headers
from connect_spark.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorHandler,
    ErrorHandlingConfig,
    LogReporter,
    RawRecord,
    Reporter,
    ToleranceExceededException,
    ToleranceType,
)
from connect_spark.runtime.errors.dead_letter_queue import DeadLetterQueueException, producer_kwargs
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.transforms.cast import CastValue
from connect_spark.transforms.chain import TransformationChain, TransformationStage
from connect_spark.transforms.filter import Filter
from connect_spark.transforms.predicates import RecordIsTombstone

TOPIC = "orders"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"


class CollectingReporter(Reporter):
    def __init__(self) -> None:
        self.contexts = []
        self.closed = 0

    def report(self, context):
        self.contexts.append(context)
        return None

    def close(self) -> None:
        self.closed += 1


class HeaderAwareConverter(Converter):
    """Returns the headers it was given, to show what the runtime passes."""

    def to_connect_data(self, topic, value, headers=None):
        return SchemaAndValue(None, [(h.key, h.value, h.schema) for h in headers])

    def from_connect_data(self, topic, schema, value, headers=None):
        return None


class TwoArgumentConverter(Converter):
    """A converter written without the headers parameter (older plugins)."""

    def to_connect_data(self, topic, value):  # type: ignore[override]
        return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, value.decode())

    def from_connect_data(self, topic, schema, value, headers=None):
        return None


class BusyTransform:
    """Fails with RetriableException every time."""

    kafka_class_name = "test.Busy"

    def apply(self, record):
        raise RetriableException("busy")

    def close(self):
        pass


def raw(offset: int, value: bytes | None, key: bytes | None = b"k", headers=()) -> RawRecord:
    return RawRecord(TOPIC, 0, offset, 1_700_000_000_000 + offset, 0, key, value, tuple(headers))


def schemaless_json(is_key: bool = False) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key)
    return converter


def string_converter(is_key: bool | None = True) -> StringConverter:
    converter = StringConverter()
    converter.configure({}, is_key)
    return converter


def cast_value(spec: str) -> CastValue:
    cast = CastValue()
    cast.configure({"spec": spec})
    return cast


def record_converter(tolerance=ToleranceType.ALL, stages=(), key=None, value=None, retry_timeout_ms=0):
    reporter = CollectingReporter()
    config = ErrorHandlingConfig(tolerance=tolerance, retry_timeout_ms=retry_timeout_ms)
    handler = ErrorHandler(config, "conv", 0, [reporter], sleep=lambda s: None)
    converter = RecordConverter(key or string_converter(), value or schemaless_json(), string_converter(None),
                                TransformationChain(stages), handler)
    return converter, reporter


def test_key_and_value_converters_receive_the_consumed_headers_as_bytes():
    converter, reporter = record_converter(key=HeaderAwareConverter(), value=HeaderAwareConverter())
    record = converter.convert_one(raw(3, b"v", headers=(("trace", b"abc"), ("empty", None))))
    expected = [("trace", b"abc", Schema.OPTIONAL_BYTES_SCHEMA), ("empty", None, Schema.OPTIONAL_BYTES_SCHEMA)]
    assert record.key == expected and record.value == expected
    # the record's own headers went through the header converter
    assert [(h.key, h.value) for h in record.headers] == [("trace", "abc"), ("empty", None)]
    assert not reporter.contexts


def test_raw_headers_keep_order_and_duplicates():
    headers = raw_headers(raw(0, b"", headers=(("a", b"1"), ("a", b"2"), ("b", None))))
    assert [(h.key, h.value) for h in headers] == [("a", b"1"), ("a", b"2"), ("b", None)]


def test_a_converter_without_a_headers_parameter_is_still_called():
    converter, reporter = record_converter(value=TwoArgumentConverter())
    record = converter.convert_one(raw(0, b"plain", headers=(("h", b"1"),)))
    assert record.value == "plain" and not reporter.contexts


def test_each_failure_is_reported_with_its_stage_and_class_and_skipped_under_all():
    stages = [TransformationStage(Filter(), RecordIsTombstone()), TransformationStage(cast_value("a:int32"))]
    converter, reporter = record_converter(stages=stages)
    batch = converter.convert([
        raw(0, b'{"a": 1}'),
        raw(1, b"{not json"),
        raw(2, None),  # a tombstone: dropped by the guarded Filter, not an error
        raw(3, b'{"a": 2}', headers=(("h", b"\xff\xfe"),)),
        raw(4, b'{"a": 3}', key=b"\xc3\x28"),
        raw(5, b'{"a": "not a number"}'),
        raw(6, b'{"a": "7"}'),
    ])
    assert [(r.kafka_offset, r.value) for r in batch.records] == [(0, {"a": 1}), (6, {"a": 7})]
    assert batch.consumed == {(TOPIC, 0): 7}
    assert set(batch.raw_by_coordinates) == {(TOPIC, 0, 0), (TOPIC, 0, 6)}
    assert [(c.record.offset, c.stage.value, c.executing_class) for c in reporter.contexts] == [
        (1, "VALUE_CONVERTER", JSON),
        (3, "HEADER_CONVERTER", STRING),
        (4, "KEY_CONVERTER", STRING),
        (5, "TRANSFORMATION", "org.apache.kafka.connect.transforms.Cast$Value"),
    ]


def test_tolerance_none_fails_on_the_first_bad_record_naming_record_stage_and_class():
    converter, reporter = record_converter(tolerance=ToleranceType.NONE)
    with pytest.raises(ToleranceExceededException) as failure:
        converter.convert([raw(0, b"{}"), raw(1, b"[1,"), raw(2, b"{}")])
    message = str(failure.value)
    assert "orders[0]@1" in message and "VALUE_CONVERTER" in message and JSON in message
    assert [c.record.offset for c in reporter.contexts] == [1]  # reported before failing


def test_a_retriable_failure_that_exhausts_its_retries_fails_the_task_under_none():
    converter, reporter = record_converter(tolerance=ToleranceType.NONE, stages=[TransformationStage(BusyTransform())],
                                           retry_timeout_ms=0)
    with pytest.raises(ToleranceExceededException, match=r"'TRANSFORMATION' with class 'test.Busy'.*orders\[0\]@0"):
        converter.convert([raw(0, b"{}")])
    assert len(reporter.contexts) == 1


def test_a_retriable_failure_that_exhausts_its_retries_is_skipped_under_all():
    converter, reporter = record_converter(stages=[TransformationStage(BusyTransform())])
    assert converter.convert([raw(0, b"{}")]).records == []
    assert reporter.contexts[0].stage.value == "TRANSFORMATION"


def connector_config(**extra: str) -> ConnectorConfig:
    props = {
        "name": "json-sink", "connector.class": "RecordingSink", "topics": TOPIC, "recording.dir": "/tmp/unused",
        "value.converter": "JsonConverter", "value.converter.schemas.enable": "false",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "orders-dlq", "errors.log.enable": "true",
        "transforms": "dropTombstones,cast", "transforms.dropTombstones.type": "Filter",
        "transforms.dropTombstones.predicate": "isTombstone", "transforms.cast.type": "Cast$Value",
        "transforms.cast.spec": "a:int32", "predicates": "isTombstone",
        "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    }
    props.update(extra)
    return ConnectorConfig(props)


def worker_config() -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": "127.0.0.1:1", "key.converter": "StringConverter",
                         "value.converter": "ByteArrayConverter", "checkpoint.location": "/tmp/unused"})


def test_build_task_plugins_wires_chain_reporters_and_converter_serializer():
    plugins = build_task_plugins(connector_config(), worker_config(), 3)
    handler = plugins.error_handler
    assert [type(r) for r in handler.reporters] == [DeadLetterQueueReporter, LogReporter]
    assert [s.executing_class for s in plugins.converter.chain] == [
        "org.apache.kafka.connect.transforms.Filter", "org.apache.kafka.connect.transforms.Cast$Value"]
    assert isinstance(plugins.converter.chain.stages[0].predicate, RecordIsTombstone)

    # a record the task built itself goes to the DLQ serialized with the connector's converters
    built = SinkRecord("orders", 0, Schema.OPTIONAL_STRING_SCHEMA, "key-1", None, {"a": 1}, 11, None,
                       headers=Headers().add("n", "x", Schema.STRING_SCHEMA))
    serialized = handler._serialize(built)
    assert (serialized.key, json.loads(serialized.value), serialized.offset) == (b"key-1", {"a": 1}, 11)
    assert serialized.headers == (("n", b"x"),)

    record = plugins.converter.convert_one(raw(0, b'{"a": "5"}'))
    assert record.value == {"a": 5}


def test_task_plugins_stop_and_close_shut_the_handler_and_its_dlq_producer():
    plugins = build_task_plugins(connector_config(), worker_config(), 0)
    dlq = plugins.error_handler.reporters[0]
    plugins.stop()
    plugins.close()
    plugins.close()  # idempotent, never raises
    with pytest.raises(DeadLetterQueueException, match="is closed"):
        dlq.start()


def test_dlq_producer_settings_are_translated_and_checked():
    assert producer_kwargs({"max.request.size": "4194304", "compression.type": "none", "linger.ms": 5,
                            "security.protocol": "PLAINTEXT"}) == {
        "max_request_size": 4194304, "compression_type": None, "linger_ms": 5}
    with pytest.raises(DeadLetterQueueException, match="max.request.size"):
        producer_kwargs({"max.request.size": "big"})
