"""TopicNameMatches, HasHeaderKey, RecordIsTombstone (cases from Kafka's predicate tests)."""

from __future__ import annotations

import pytest

from connect_spark.api import Headers, SinkRecord
from connect_spark.api.data import Schema
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches


def rec(topic="topic", value="v", headers=None, value_schema=None):
    return SinkRecord(topic, 0, None, None, value_schema, value, 0, headers=headers or Headers())


def test_topic_name_matches():
    p = TopicNameMatches()
    p.configure({"pattern": "my-prefix-.*"})
    assert p.test(rec("my-prefix-foo"))
    assert not p.test(rec("x-my-prefix-foo"))
    assert not p.test(rec("my-prefix"))  # must match the whole name
    assert TopicNameMatches.kafka_class_name == "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"


@pytest.mark.parametrize("pattern, message", [("", "non-empty"), ("[", "Invalid regular expression"), (None, "pattern")])
def test_topic_name_matches_config(pattern, message):
    with pytest.raises(ConfigException, match=message):
        TopicNameMatches().configure({} if pattern is None else {"pattern": pattern})


def test_has_header_key():
    p = HasHeaderKey()
    p.configure({"name": "h"})
    assert p.test(rec(headers=Headers().add("other", 1).add("h", None)))
    assert not p.test(rec(headers=Headers().add("other", 1)))
    assert not p.test(rec())
    with pytest.raises(ConfigException, match="name"):
        HasHeaderKey().configure({"name": ""})


def test_record_is_tombstone():
    p = RecordIsTombstone()
    p.configure({})
    assert p.test(rec(value=None))
    assert p.test(rec(value=None, value_schema=Schema.OPTIONAL_STRING_SCHEMA))  # a schema may still be present
    assert not p.test(rec(value=""))
