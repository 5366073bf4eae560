"""headers_needed: Kafka headers are left unread only when nothing would notice (no JVM)."""

from __future__ import annotations

import pytest

from connect_spark.api.transforms import Transformation
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.connectors.file import FileStreamSinkTask
from connect_spark.runtime.conversion.header_reads import headers_needed
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.recording import HeaderBlindRecordingSinkTask, RecordingSinkTask

KT = "org.apache.kafka.connect.transforms."


class UpperTopic(Transformation):
    """A custom transform: it could read headers, so the runtime must assume it does."""

    def configure(self, props):
        pass

    def apply(self, record):
        return record

    def config(self):
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def close(self):
        pass


def _needed(task_class, props=None, worker_extra=None):
    worker = WorkerConfig({**worker_properties("127.0.0.1:9", "/tmp/unused"), **(worker_extra or {})})
    connector = ConnectorConfig({"name": "h", "connector.class": "RecordingSink", "topics": "orders", **(props or {})})
    return headers_needed(task_class, connector, worker)


def test_a_task_that_reads_headers_gets_them():
    needed, why = _needed(RecordingSinkTask)
    assert needed and "RecordingSinkTask reads headers" in why


def test_header_blind_tasks_skip_headers_by_default():
    assert _needed(HeaderBlindRecordingSinkTask) == (
        False, "HeaderBlindRecordingSinkTask does not read headers and nothing else needs them")
    assert _needed(FileStreamSinkTask)[0] is False


@pytest.mark.parametrize("props, reason", [
    ({"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq"}, "dead letter queue"),
    ({"errors.log.enable": "true", "errors.log.include.messages": "true"}, "errors.log.include.messages"),
    ({"header.converter": "org.apache.kafka.connect.storage.StringConverter"}, "header.converter StringConverter"),
    ({"header.converter": "org.apache.kafka.connect.json.JsonConverter"}, "header.converter JsonConverter"),
    ({"transforms": "f", "transforms.f.type": KT + "Filter", "transforms.f.predicate": "p",
      "predicates": "p", "predicates.p.type": KT + "predicates.HasHeaderKey", "predicates.p.name": "h"},
     "predicate p (HasHeaderKey)"),
    ({"transforms": "u", "transforms.u.type": f"{__name__}:UpperTopic"}, "transform u (UpperTopic)"),
])
def test_anything_that_could_notice_missing_headers_keeps_them(props, reason):
    needed, why = _needed(HeaderBlindRecordingSinkTask, props)
    assert needed
    assert reason in why


def test_built_in_transforms_and_header_blind_predicates_do_not_need_headers():
    props = {"transforms": "r,f,i,d",
             "transforms.r.type": KT + "RegexRouter", "transforms.r.regex": "(.*)", "transforms.r.replacement": "x-$1",
             "transforms.f.type": KT + "Filter", "transforms.f.predicate": "t",
             "transforms.i.type": KT + "InsertHeader", "transforms.i.header": "a", "transforms.i.value.literal": "b",
             "transforms.d.type": KT + "DropHeaders", "transforms.d.headers": "a",
             "predicates": "t,n",
             "predicates.t.type": KT + "predicates.TopicNameMatches", "predicates.t.pattern": "tmp-.*",
             "predicates.n.type": KT + "predicates.RecordIsTombstone",
             "header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}
    needed, why = _needed(HeaderBlindRecordingSinkTask, props)
    assert not needed, why


def test_the_worker_header_converter_counts_too():
    needed, why = _needed(HeaderBlindRecordingSinkTask,
                          worker_extra={"header.converter": "org.apache.kafka.connect.storage.StringConverter"})
    assert needed and "StringConverter" in why
