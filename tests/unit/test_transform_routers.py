"""RegexRouter and TimestampRouter (cases from Kafka's RegexRouterTest and TimestampRouterTest)."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException, SinkRecord
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.regex_router import RegexRouter
from connect_spark.transforms.timestamp_router import TimestampRouter


def route(regex, replacement, topic):
    t = RegexRouter()
    t.configure({"regex": regex, "replacement": replacement})
    return t.apply(SinkRecord(topic, 0, None, None, None, None, 7)).topic


@pytest.mark.parametrize(
    "regex, replacement, topic, expected",
    [
        ("foo", "bar", "foo", "bar"),
        ("foo", "bar", "foo-bar", "foo-bar"),  # must match the whole topic
        ("foo-.*", "bar", "foo-bar", "bar"),
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)-(\\d\\d)", "$2-$1", "sales-42", "42-sales"),
        ("(?<name>.*)-x", "${name}-y", "abc-x", "abc-y"),
        ("(.*)", "cost\\$1", "orig", "cost$1"),
        ("(.*)", "$1$10", "a", "aa0"),  # $10 is group 1 then '0' when there is no group 10
    ],
)
def test_regex_router(regex, replacement, topic, expected):
    assert route(regex, replacement, topic) == expected


def test_regex_router_keeps_original_coordinates():
    t = RegexRouter()
    t.configure({"regex": "(.*)", "replacement": "new-$1"})
    out = t.apply(SinkRecord("old", 3, None, "k", None, "v", 7))
    assert out.topic == "new-old" and out.kafka_partition == 3 and out.key == "k"
    assert out.original_topic == "old" and out.original_kafka_partition == 3 and out.original_kafka_offset == 7
    assert RegexRouter.kafka_class_name == "org.apache.kafka.connect.transforms.RegexRouter"


def test_regex_router_config_errors():
    with pytest.raises(ConfigException, match="regex"):
        RegexRouter().configure({"regex": "(unclosed", "replacement": "x"})
    with pytest.raises(ConfigException, match="No group 2"):
        RegexRouter().configure({"regex": "(a)", "replacement": "$2"})
    with pytest.raises(ConfigException, match="replacement"):
        RegexRouter().configure({"regex": "a"})


def test_timestamp_router_defaults():
    t = TimestampRouter()
    t.configure({})
    out = t.apply(SinkRecord("test", 0, None, None, None, None, 0, timestamp=1483425001864))
    assert out.topic == "test-20170103"
    assert out.original_topic == "test"


def test_timestamp_router_formats():
    t = TimestampRouter()
    t.configure({"topic.format": "${timestamp}_${topic}_${topic}", "timestamp.format": "yyyy-MM-dd'T'HH"})
    assert t.apply(SinkRecord("a", 0, None, None, None, None, 0, timestamp=1483425001864)).topic == "2017-01-03T06_a_a"


def test_timestamp_router_needs_a_timestamp():
    t = TimestampRouter()
    t.configure({})
    with pytest.raises(DataException, match="Timestamp missing on record"):
        t.apply(SinkRecord("a", 0, None, None, None, None, 0))
    with pytest.raises(ConfigException, match="timestamp.format"):
        TimestampRouter().configure({"timestamp.format": "yyyy'"})
