"""REST bodies in Kafka Connect's shapes, with secrets masked."""

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
from connect_spark.rest import entities
from connect_spark.status.records import StatusRecord
from connect_spark.status.states import State

SECRET_CONFIG = {
    "name": "s",
    "connector.class": "RecordingSink",
    "topics": "t",
    "consumer.override.sasl.jaas.config": 'PlainLoginModule required username="u" password="p";',
    "db.password": "hunter2",
    "api.token": "abc",
    "from.provider.password": "${file:/etc/s.properties:pw}",
}


def test_connector_info_masks_secrets():
    info = entities.connector_info("s", SECRET_CONFIG, 2)
    assert info["tasks"] == [{"connector": "s", "task": 0}, {"connector": "s", "task": 1}]
    assert info["type"] == "sink"
    config = info["config"]
    assert config["consumer.override.sasl.jaas.config"] == "[hidden]"
    assert config["db.password"] == "[hidden]"
    assert config["api.token"] == "[hidden]"
    assert config["from.provider.password"] == "${file:/etc/s.properties:pw}"  # a reference, not the secret
    assert config["topics"] == "t"
    assert "hunter2" not in repr(entities.task_infos("s", [SECRET_CONFIG]))


def test_state_entries_omit_an_empty_trace():
    running = entities.state_entry(StatusRecord("s", None, State.RUNNING, None, "h:1", 1))
    assert running == {"state": "RUNNING", "worker_id": "h:1"}
    failed = entities.state_entry(StatusRecord("s", 2, State.FAILED, "boom", "h:1", 1))
    assert failed == {"id": 2, "state": "FAILED", "worker_id": "h:1", "trace": "boom"}
    info = entities.connector_state_info("s", StatusRecord("s", None, State.RUNNING, "", "h:1"),
                                         [StatusRecord("s", 1, State.RUNNING, None, "h:1"),
                                          StatusRecord("s", 0, State.PAUSED, None, "h:1")])
    assert [t["id"] for t in info["tasks"]] == [0, 1]
    assert set(info) == {"name", "connector", "tasks", "type"}


def test_offsets_round_trip():
    body = entities.connector_offsets({TopicPartition("t", 1): 5, TopicPartition("t", 0): 7})
    assert body == {"offsets": [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 7}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 5}},
    ]}
    assert entities.parse_connector_offsets(body) == {TopicPartition("t", 0): 7, TopicPartition("t", 1): 5}
    reset = {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": "0"}, "offset": None}]}
    assert entities.parse_connector_offsets(reset) == {TopicPartition("t", 0): None}


@pytest.mark.parametrize("body", [
    {},
    {"offsets": [{"offset": {"kafka_offset": 1}}]},
    {"offsets": [{"partition": {"kafka_topic": "t"}, "offset": {"kafka_offset": 1}}]},
    {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": -3}}]},
    {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"other": 1}}]},
])
def test_bad_offsets_bodies(body):
    with pytest.raises(ValueError):
        entities.parse_connector_offsets(body)


def test_config_infos_shape_and_errors():
    infos = entities.config_infos("RecordingSink", CONNECTOR_CONFIG_DEF.keys.values(),
                                  {"name": "x", "tasks.max": "zero", "db.password": "pw"},
                                  {"tasks.max": ["not a number"], "db.password": ["bad"]})
    assert infos["name"] == "RecordingSink"
    assert infos["error_count"] == 2
    assert "Common" in infos["groups"]
    by_name = {c["definition"]["name"]: c for c in infos["configs"]}
    assert by_name["tasks.max"]["value"]["errors"] == ["not a number"]
    assert by_name["tasks.max"]["definition"]["type"] == "INT"
    assert by_name["name"]["definition"]["required"] is True
    assert by_name["db.password"]["value"]["value"] == "[hidden]"
    assert set(by_name["topics"]["definition"]) == {"name", "type", "required", "default_value", "importance",
                                                    "documentation", "group", "order", "width", "display_name",
                                                    "dependents"}
    assert set(by_name["topics"]["value"]) == {"name", "value", "recommended_values", "errors", "visible"}
