"""Connector configurations with errors.*, transforms and predicates: every problem reported before start,
and every built-in converter usable as a header converter."""

from __future__ import annotations

import pytest

from connect_spark import plugins
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import validate_configs

WORKER = {"bootstrap.servers": "127.0.0.1:9092", "key.converter": "StringConverter",
          "value.converter": "StringConverter", "checkpoint.location": "/tmp/unused"}


def connector(**extra: str) -> dict[str, str]:
    props = {"name": "c", "connector.class": "RecordingSink", "topics": "orders", "recording.dir": "/tmp/unused"}
    props.update(extra)
    return props


def problems(props: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigValidationError) as failure:
        validate_configs(WORKER, [props])
    return [issue.message for issue in failure.value.issues]


def test_every_transform_and_predicate_problem_is_reported_at_once():
    found = problems(connector(**{
        "errors.deadletterqueue.topic.name": "orders",
        "transforms": "cast,route,mask,nope,guarded",
        "transforms.cast.type": "Cast$Value", "transforms.cast.spec": "amount:money",
        "transforms.route.type": "RegexRouter", "transforms.route.regex": "(orders", "transforms.route.replacement": "x",
        "transforms.mask.type": "MaskField$Value",
        "transforms.nope.type": "NoSuchTransform",
        "transforms.guarded.type": "Filter", "transforms.guarded.predicate": "isTombstone",
        "transforms.filtr.type": "Filter",
        "predicates": "isTombstne", "predicates.isTombstne.type": "RecordIsTombstone",
        "predicates.isTombstone.type": "RecordIsTombstone",
    }))
    text = "\n".join(found)
    assert len(found) == 8, text
    expected = [
        "The dead letter queue topic 'orders' may not be one of the consumed topics",
        "configuration transforms.cast.spec: Invalid type found in casting spec: money",
        "configuration transforms.route.regex: Invalid regular expression",
        'Missing required configuration "transforms.mask.fields"',
        "Unknown transform class NoSuchTransform",
        "Invalid value 'isTombstone' for configuration transforms.guarded.predicate",
        "Unknown transform alias 'filtr' in transforms.filtr.type",
        "Unknown predicate alias 'isTombstone' in predicates.isTombstone.type",
    ]
    for fragment in expected:
        assert fragment in text, f"{fragment!r} missing from:\n{text}"
    assert "(did you mean 'isTombstne'?)" in text


def test_a_dlq_matching_the_topics_regex_is_refused():
    props = connector(**{"errors.deadletterqueue.topic.name": "orders-dlq", "topics.regex": "orders.*"})
    del props["topics"]
    assert any("may not match the consumed topics" in p for p in problems(props))


def test_a_transform_listed_without_type_is_reported():
    assert any('"transforms.cast.type"' in p for p in problems(connector(transforms="cast")))


@pytest.mark.parametrize("name", [
    "StringConverter", "ByteArrayConverter", "JsonConverter", "IntegerConverter", "LongConverter",
    "org.apache.kafka.connect.converters.DoubleConverter", "BooleanConverter", "SimpleHeaderConverter",
])
def test_every_built_in_converter_is_a_header_converter(name):
    converter = plugins.instantiate("header_converter", name, key="header.converter")
    converter.configure({"schemas.enable": "false"})
    converter.to_connect_header("t", "h", None)
    worker, [parsed] = validate_configs(WORKER, [connector(**{"header.converter": name})])
    assert parsed.name == "c"


def test_json_header_converter_reads_plain_json_headers():
    converter = plugins.instantiate("header_converter", "JsonConverter")
    converter.configure({"schemas.enable": "false"})
    assert converter.to_connect_header("t", "h", b'{"a": [1, 2]}').value == {"a": [1, 2]}
