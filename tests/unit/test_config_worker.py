"""WorkerConfig: Kafka Connect's worker keys and defaults, connect_spark's keys, pass-through prefixes."""

from __future__ import annotations

import logging

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.worker import AVAILABLE_NOW, WORKER_CONFIG_DEF, WorkerConfig, parse_trigger

MINIMAL = {"key.converter": "StringConverter", "value.converter": "JsonConverter"}


def test_kafka_defaults():
    cfg = WorkerConfig(MINIMAL)
    assert cfg.bootstrap_servers == "localhost:9092"
    assert cfg.key_converter == "StringConverter" and cfg.value_converter == "JsonConverter"
    assert cfg.header_converter == "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    assert (cfg.offset_storage_topic, cfg.offset_storage_partitions, cfg.offset_storage_replication_factor) == (
        "connect-offsets", 25, 3,
    )
    assert cfg.offset_storage_file_filename is None
    assert (cfg.offset_flush_interval_ms, cfg.offset_flush_timeout_ms, cfg.task_shutdown_graceful_timeout_ms) == (
        60000, 5000, 5000,
    )
    assert (cfg.config_storage_topic, cfg.config_storage_replication_factor) == ("connect-configs", 3)
    assert (cfg.status_storage_topic, cfg.status_storage_partitions, cfg.status_storage_replication_factor) == (
        "connect-status", 5, 3,
    )
    assert cfg.group_id is None
    assert cfg.listeners == ["http://127.0.0.1:8083"]
    assert cfg.rest_advertised_host_name is None
    assert cfg.plugin_path == []
    assert cfg.config_providers == ["env", "file"]
    assert cfg.connector_client_config_override_policy == "All"
    assert cfg.security_protocol == "PLAINTEXT"


def test_connect_spark_defaults():
    cfg = WorkerConfig(MINIMAL)
    assert cfg.checkpoint_location == "./.data/checkpoints"
    assert cfg.trigger == 1000
    assert cfg.task_execution_mode == "executor"
    assert cfg.max_offsets_per_trigger is None


def test_converters_are_required_like_kafka_4():
    with pytest.raises(ConfigValidationError) as info:
        WorkerConfig({})
    assert [i.key for i in info.value.issues] == ["key.converter", "value.converter"]
    assert 'Missing required configuration "key.converter"' in str(info.value)


def test_typed_values_and_get():
    cfg = WorkerConfig(
        {
            **MINIMAL,
            "bootstrap.servers": "b1:9092, b2:9092",
            "offset.flush.interval.ms": "1000",
            "offset.storage.replication.factor": "-1",
            "offset.storage.file.filename": "/tmp/offsets",
            "max.offsets.per.trigger": "10000",
            "task.execution.mode": "driver",
            "trigger": "available-now",
            "plugin.path": "/opt/a, /opt/b",
            "connector.client.config.override.policy":
                "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy",
            "custom.key": "x",
        }
    )
    assert cfg.bootstrap_servers == "b1:9092,b2:9092"
    assert cfg.offset_flush_interval_ms == 1000
    assert cfg.offset_storage_replication_factor == -1
    assert cfg.offset_storage_file_filename == "/tmp/offsets"
    assert cfg.max_offsets_per_trigger == 10000
    assert cfg.task_execution_mode == "driver"
    assert cfg.trigger == AVAILABLE_NOW
    assert cfg.plugin_path == ["/opt/a", "/opt/b"]
    assert cfg.connector_client_config_override_policy == "None"
    assert cfg.get("offset.flush.interval.ms") == 1000
    assert cfg.get("custom.key") == "x"
    assert cfg.get("absent") is None


@pytest.mark.parametrize(
    "raw, expected",
    [("500ms", 500), ("10s", 10_000), ("1m", 60_000), ("2h", 7_200_000), ("250", 250), (" 3 S ", 3000),
     ("0ms", 0), ("Available-Now", AVAILABLE_NOW)],
)
def test_parse_trigger(raw, expected):
    assert parse_trigger(raw) == expected


@pytest.mark.parametrize("raw", ["", "fast", "1.5s", "10 sec", "-1s", "1d"])
def test_bad_trigger(raw):
    with pytest.raises(ConfigException, match="interval"):
        parse_trigger(raw)
    [issue] = WORKER_CONFIG_DEF.validate({**MINIMAL, "trigger": raw})
    assert issue.key == "trigger"


def test_every_worker_problem_at_once():
    with pytest.raises(ConfigValidationError) as info:
        WorkerConfig(
            {
                **MINIMAL,
                "trigger": "soon",
                "listeners": "ftp://x:1",
                "offset.storage.replication.factor": "0",
                "offset.storage.partitions": "0",
                "connector.client.config.override.policy": "all",
                "task.execution.mode": "cluster",
                "max.offsets.per.trigger": "0",
                "offset.flush.interval.ms": "soon",
                "security.protocol": "TLS",
            }
        )
    keys = {i.key for i in info.value.issues}
    assert keys == {
        "trigger", "listeners", "offset.storage.replication.factor", "offset.storage.partitions",
        "connector.client.config.override.policy", "task.execution.mode", "max.offsets.per.trigger",
        "offset.flush.interval.ms", "security.protocol",
    }
    assert "Invalid value 'ftp://x:1' for configuration listeners" in str(info.value)


@pytest.mark.parametrize("listeners", ["http://:8083", "https://0.0.0.0:8443, http://localhost:8083", "http://[::1]:8083"])
def test_listeners(listeners):
    assert WorkerConfig({**MINIMAL, "listeners": listeners}).listeners


def test_pass_through_prefixes():
    cfg = WorkerConfig(
        {
            **MINIMAL,
            "bootstrap.servers": "broker:9093",
            "spark.master": "local[4]",
            "spark.sql.shuffle.partitions": "4",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
            "ssl.truststore.location": "/etc/ts.jks",
            "consumer.max.poll.records": "500",
            "consumer.security.protocol": "SSL",
            "producer.acks": "all",
            "admin.request.timeout.ms": "1000",
        }
    )
    assert cfg.spark_conf() == {"spark.master": "local[4]", "spark.sql.shuffle.partitions": "4"}
    assert cfg.kafka_client_config() == {
        "bootstrap.servers": "broker:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
        "ssl.truststore.location": "/etc/ts.jks",
    }
    assert cfg.consumer_config() == {"max.poll.records": "500", "security.protocol": "SSL"}
    assert cfg.producer_config() == {"acks": "all"}
    assert cfg.admin_config() == {"request.timeout.ms": "1000"}


def test_unknown_keys_are_allowed_and_logged_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="connect_spark.config.worker"):
        WorkerConfig({**MINIMAL, "plugin.discovery": "hybrid_warn", "spark.master": "local", "key.converter.x": "1"})
    messages = [r.getMessage() for r in caplog.records]
    assert any("plugin.discovery" in m for m in messages)
    assert not any("spark.master" in m or "key.converter.x" in m for m in messages)


def test_providers_resolve_in_worker_values_and_secrets_are_masked(monkeypatch, tmp_path):
    secrets = tmp_path / "s.properties"
    secrets.write_text("jaas=PlainLoginModule required password=\"hunter2\";\n")
    monkeypatch.setenv("CS_TEST_BOOTSTRAP", "envbroker:9092")
    cfg = WorkerConfig(
        {
            **MINIMAL,
            "bootstrap.servers": "${env:CS_TEST_BOOTSTRAP}",
            "sasl.jaas.config": f"${{file:{secrets}:jaas}}",
            "ssl.key.password": "plain-secret",
        }
    )
    assert cfg.bootstrap_servers == "envbroker:9092"
    assert "hunter2" in cfg.kafka_client_config()["sasl.jaas.config"]
    shown = repr(cfg)
    assert "hunter2" not in shown and "plain-secret" not in shown
    assert cfg.originals["bootstrap.servers"] == "${env:CS_TEST_BOOTSTRAP}"


def test_unresolvable_reference_is_reported_once():
    with pytest.raises(ConfigValidationError) as info:
        WorkerConfig({**MINIMAL, "offset.flush.interval.ms": "${env:CS_TEST_UNSET_VAR_123}"})
    [issue] = info.value.issues
    assert issue.key == "offset.flush.interval.ms" and "CS_TEST_UNSET_VAR_123" in issue.message


def test_declared_providers_limit_what_resolves(monkeypatch):
    monkeypatch.setenv("CS_TEST_X", "1")
    with pytest.raises(ConfigValidationError, match="'env' is not enabled"):
        WorkerConfig({**MINIMAL, "config.providers": "file", "group.id": "${env:CS_TEST_X}"})
    cfg = WorkerConfig({**MINIMAL, "config.providers": "env", "group.id": "${env:CS_TEST_X}"})
    assert cfg.group_id == "1" and cfg.config_providers == ["env"]


def test_from_properties(tmp_path):
    path = tmp_path / "worker.properties"
    path.write_text(
        "bootstrap.servers=localhost:9092\n"
        "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "key.converter.schemas.enable=true\n"
        "offset.storage.file.filename=/tmp/connect.offsets\n"
        "offset.flush.interval.ms=10000\n"
        "plugin.path=/usr/share/java\n"
    )
    cfg = WorkerConfig.from_properties(path)
    assert cfg.offset_flush_interval_ms == 10000
    assert cfg.originals_with_prefix("key.converter.") == {"schemas.enable": "true"}
    with pytest.raises(ConfigException, match="missing.properties"):
        WorkerConfig.from_properties(tmp_path / "missing.properties")


def test_check_returns_issues_without_raising():
    cfg, issues = WorkerConfig.check({"trigger": "x"})
    assert cfg is None and len(issues) == 3
    cfg, issues = WorkerConfig.check(MINIMAL)
    assert isinstance(cfg, WorkerConfig) and issues == []
