"""ConnectorConfig: sink connector keys, cross-key checks, overrides, transforms and converters."""

from __future__ import annotations

import pytest

from connect_spark.config.connector import (
    CONNECTOR_CONFIG_DEF,
    ConnectorConfig,
    PredicateConfig,
    TransformConfig,
    client_override_issues,
)
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.worker import WorkerConfig

BASE = {"name": "sink", "connector.class": "FileStreamSink", "topics": "orders"}


def issues(props):
    cfg, found = ConnectorConfig.check(props)
    assert cfg is None
    return found


def test_defaults():
    cfg = ConnectorConfig(BASE)
    assert cfg.name == "sink" and cfg.connector_class == "FileStreamSink"
    assert cfg.tasks_max == 1
    assert cfg.topics == ["orders"] and cfg.topics_regex is None
    assert cfg.errors_tolerance == "none"
    assert cfg.errors_retry_timeout == 0 and cfg.errors_retry_delay_max_ms == 60000
    assert cfg.errors_log_enable is False and cfg.errors_log_include_messages is False
    assert cfg.errors_deadletterqueue_topic_name == "" and cfg.dlq_topic is None
    assert cfg.errors_deadletterqueue_topic_replication_factor == 3
    assert cfg.errors_deadletterqueue_context_headers_enable is False
    assert cfg.consumer_group_id == "connect-sink"
    assert cfg.auto_offset_reset == "earliest"
    assert cfg.transforms == [] and cfg.transform_configs() == [] and cfg.predicate_configs() == []
    assert cfg.task_execution_mode is None
    assert cfg.config_action_reload == "restart"


def test_required_keys_and_name_rules():
    found = issues({"topics": "t"})
    assert [i.key for i in found] == ["name", "connector.class"]
    assert 'Missing required configuration "name"' in found[0].message
    assert [i.key for i in issues({**BASE, "name": "  "})] == ["name"]
    assert [i.key for i in issues({**BASE, "name": "a\u0007b"})] == ["name"]


def test_topics_are_cleaned():
    cfg = ConnectorConfig({**BASE, "topics": "a, b,,a , c"})
    assert cfg.topics == ["a", "b", "c"]


def test_topics_regex():
    cfg = ConnectorConfig({"name": "s", "connector.class": "X", "topics.regex": "orders-.*"})
    assert cfg.topics == [] and cfg.topics_regex == "orders-.*"


def test_topics_xor_regex_both_set():
    [issue] = issues({**BASE, "topics.regex": "orders-.*"})
    assert issue.key == "topics"
    assert "topics" in issue.message and "topics.regex" in issue.message and "both" in issue.message


@pytest.mark.parametrize("topics", [None, "", " , "])
def test_topics_xor_regex_neither_set(topics):
    props = {"name": "s", "connector.class": "X"}
    if topics is not None:
        props["topics"] = topics
    [issue] = issues(props)
    assert issue.message == "Must configure one of topics or topics.regex"


def test_invalid_regex():
    [issue] = issues({"name": "s", "connector.class": "X", "topics.regex": "orders-("})
    assert issue.key == "topics.regex" and "Invalid regular expression" in issue.message


def test_dlq_in_topics_is_an_error():
    [issue] = issues({**BASE, "topics": "orders,dlq", "errors.deadletterqueue.topic.name": "dlq"})
    assert issue.key == "errors.deadletterqueue.topic.name"
    assert "'dlq'" in issue.message and "topics=orders,dlq" in issue.message


def test_dlq_matched_by_regex_is_an_error():
    props = {"name": "s", "connector.class": "X", "topics.regex": "orders.*", "errors.deadletterqueue.topic.name": "orders-dlq"}
    [issue] = issues(props)
    assert "topics.regex=orders.*" in issue.message
    # the regex must match the whole name, as Java's Pattern.matches does
    ConnectorConfig({**props, "topics.regex": "orders", "errors.deadletterqueue.topic.name": "orders-dlq"})


def test_error_keys():
    cfg = ConnectorConfig(
        {
            **BASE,
            "errors.tolerance": "ALL",
            "errors.retry.timeout": "-1",
            "errors.retry.delay.max.ms": "1000",
            "errors.log.enable": "true",
            "errors.log.include.messages": "TRUE",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        }
    )
    assert cfg.errors_tolerance == "all"
    assert cfg.errors_retry_timeout == -1 and cfg.errors_retry_delay_max_ms == 1000
    assert cfg.errors_log_enable and cfg.errors_log_include_messages
    assert cfg.dlq_topic == "dlq" and cfg.errors_deadletterqueue_topic_replication_factor == 1
    assert cfg.errors_deadletterqueue_context_headers_enable


def test_every_problem_at_once():
    props = {
        "name": "",
        "tasks.max": "0",
        "topics": "a",
        "topics.regex": "b",
        "errors.tolerance": "some",
        "errors.retry.timeout": "-2",
        "errors.retry.delay.max.ms": "0",
        "errors.log.enable": "yes",
        "errors.deadletterqueue.topic.replication.factor": "x",
        "transforms": "t1,t1,t2",
        "transforms.t2.type": "Cast$Value",
        "transforms.t2.predicate": "nope",
        "consumer.override.auto.offset.reset": "smallest",
        "task.execution.mode": "cluster",
    }
    with pytest.raises(ConfigValidationError) as info:
        ConnectorConfig(props)
    keys = [i.key for i in info.value.issues]
    assert set(keys) == {
        "name", "connector.class", "tasks.max", "topics", "errors.tolerance", "errors.retry.timeout",
        "errors.retry.delay.max.ms", "errors.log.enable", "errors.deadletterqueue.topic.replication.factor",
        "transforms", "transforms.t1.type", "transforms.t2.predicate", "consumer.override.auto.offset.reset",
        "task.execution.mode",
    }
    text = str(info.value)
    assert text.startswith(f"{len(keys)} configuration problems:")
    assert "duplicate alias t1" in text


def test_transforms_and_predicates():
    cfg = ConnectorConfig(
        {
            **BASE,
            "transforms": "dropTombstones, route",
            "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.dropTombstones.predicate": "isTombstone",
            "transforms.dropTombstones.negate": "false",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "$1-copy",
            "transforms.route.predicate": "onOrders",
            "transforms.route.negate": "true",
            "predicates": "isTombstone,onOrders",
            "predicates.isTombstone.type": "RecordIsTombstone",
            "predicates.onOrders.type": "TopicNameMatches",
            "predicates.onOrders.pattern": "orders",
        }
    )
    assert cfg.transform_configs() == [
        TransformConfig("dropTombstones", "org.apache.kafka.connect.transforms.Filter",
                        {"type": "org.apache.kafka.connect.transforms.Filter"}, "isTombstone", False),
        TransformConfig("route", "RegexRouter",
                        {"type": "RegexRouter", "regex": "(.*)", "replacement": "$1-copy"}, "onOrders", True),
    ]
    assert cfg.predicate_configs() == [
        PredicateConfig("isTombstone", "RecordIsTombstone", {"type": "RecordIsTombstone"}),
        PredicateConfig("onOrders", "TopicNameMatches", {"type": "TopicNameMatches", "pattern": "orders"}),
    ]
    alias, type_, props, predicate, negate = cfg.transform_configs()[1]
    assert (alias, predicate, negate) == ("route", "onOrders", True)


def test_transform_and_predicate_problems():
    found = issues(
        {
            **BASE,
            "transforms": "a,,b,c",
            "transforms.a.type": "Filter",
            "transforms.a.predicate": "missing",
            "transforms.b.type": "Filter",
            "transforms.b.negate": "maybe",
            "transforms.c.type": " ",
            "predicates": "p,p,q",
            "predicates.p.type": "RecordIsTombstone",
        }
    )
    messages = {(i.key, i.message) for i in found}
    keys = [i.key for i in found]
    assert keys.count("transforms") == 1  # the empty alias
    assert "transforms.c.type" in keys and "predicates.q.type" in keys
    assert any(k == "predicates" and "duplicate alias p" in m for k, m in messages)
    assert any(k == "transforms.a.predicate" and "'missing'" in m and "(p, q)" in m for k, m in messages)
    negate_messages = [m for k, m in messages if k == "transforms.b.negate"]
    assert len(negate_messages) == 2  # not a boolean, and no predicate to negate
    assert any("either true or false" in m for m in negate_messages)
    assert any("transforms.b.predicate" in m for m in negate_messages)


def test_overrides():
    cfg = ConnectorConfig(
        {
            **BASE,
            "consumer.override.group.id": "my-group",
            "consumer.override.auto.offset.reset": "Latest",
            "consumer.override.max.poll.records": "10",
            "producer.override.acks": "all",
            "admin.override.request.timeout.ms": "5",
        }
    )
    assert cfg.consumer_group_id == "my-group"
    assert cfg.auto_offset_reset == "latest"
    assert cfg.consumer_overrides == {"group.id": "my-group", "auto.offset.reset": "Latest", "max.poll.records": "10"}
    assert cfg.producer_overrides == {"acks": "all"}
    assert cfg.admin_overrides == {"request.timeout.ms": "5"}


def test_client_override_policy():
    props = {
        **BASE,
        "consumer.override.max.poll.records": "10",
        "consumer.override.sasl.jaas.config": "x",
        "producer.override.security.protocol": "SSL",
    }
    assert client_override_issues(props, "All") == []
    assert [i.key for i in client_override_issues(props, "Principal")] == ["consumer.override.max.poll.records"]
    found = client_override_issues(props, "None")
    assert len(found) == 3 and "policy is None" in found[0].message


WORKER = WorkerConfig(
    {
        "key.converter": "StringConverter",
        "key.converter.encoding": "UTF-16",
        "value.converter": "JsonConverter",
        "value.converter.schemas.enable": "false",
        "task.execution.mode": "executor",
    }
)


def test_converter_config_from_worker():
    cfg = ConnectorConfig(BASE)
    assert cfg.converter_config("key", WORKER) == ("StringConverter", {"encoding": "UTF-16", "converter.type": "key"})
    assert cfg.converter_config("value.converter", WORKER) == (
        "JsonConverter", {"schemas.enable": "false", "converter.type": "value"},
    )
    assert cfg.converter_config("header", WORKER) == (
        "org.apache.kafka.connect.storage.SimpleHeaderConverter", {"converter.type": "header"},
    )


def test_connector_converter_replaces_the_workers_with_its_own_settings():
    cfg = ConnectorConfig(
        {
            **BASE,
            "value.converter": "ByteArrayConverter",
            "value.converter.extra": "1",
            "key.converter.ignored": "because the connector does not set key.converter",
        }
    )
    assert cfg.converter_config("value", WORKER) == ("ByteArrayConverter", {"extra": "1", "converter.type": "value"})
    assert cfg.converter_config("key", WORKER)[1] == {"encoding": "UTF-16", "converter.type": "key"}
    with pytest.raises(ValueError):
        cfg.converter_config("body", WORKER)


def test_execution_mode_override():
    assert ConnectorConfig(BASE).execution_mode(WORKER) == "executor"
    assert ConnectorConfig({**BASE, "task.execution.mode": "driver"}).execution_mode(WORKER) == "driver"


def test_providers_in_connector_values(monkeypatch):
    monkeypatch.setenv("CS_TEST_TOPIC", "payments")
    cfg = ConnectorConfig({**BASE, "topics": "${env:CS_TEST_TOPIC}", "connection.password": "s3cret"})
    assert cfg.topics == ["payments"]
    assert "s3cret" not in repr(cfg)


def test_config_def_has_the_documented_keys():
    for key in ("name", "connector.class", "tasks.max", "topics", "topics.regex", "key.converter", "value.converter",
                "header.converter", "transforms", "predicates", "errors.tolerance", "errors.retry.timeout",
                "errors.retry.delay.max.ms", "errors.log.enable", "errors.log.include.messages",
                "errors.deadletterqueue.topic.name", "errors.deadletterqueue.topic.replication.factor",
                "errors.deadletterqueue.context.headers.enable", "task.execution.mode"):
        assert key in CONNECTOR_CONFIG_DEF
