"""compile_plan's decisions: which connector configurations get a vectorized plan (no JVM)."""

from __future__ import annotations

import logging

import pytest

from connect_spark.columnar.plan import compile_plan
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.testing.harness import worker_properties

JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter"}


def _compile(tmp_path, **props):
    worker = WorkerConfig(worker_properties("127.0.0.1:9", tmp_path))
    connector = ConnectorConfig({"name": "vec", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector",
                                 "topics": "orders", **props})
    return compile_plan(connector, worker)


@pytest.mark.parametrize("props", [
    {},  # the test worker's ByteArrayConverter for key and value
    {**JSON, "value.converter.schemas.enable": "false"},
    {**JSON, "key.converter": "org.apache.kafka.connect.storage.StringConverter"},
    {"transforms": "r,f", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
     "transforms.r.regex": "(.*)", "transforms.r.replacement": "x-$1",
     "transforms.f.type": "org.apache.kafka.connect.transforms.Filter", "transforms.f.predicate": "t",
     "predicates": "t", "predicates.t.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"},
])
def test_vectorizable_configurations_get_a_plan(tmp_path, props):
    plan = _compile(tmp_path, **props)
    assert plan is not None
    assert len(plan.steps) == len([a for a in props.get("transforms", "").split(",") if a])


@pytest.mark.parametrize("props, reason", [
    ({"value.converter": "org.apache.kafka.connect.storage.StringConverter",
      "value.converter.converter.encoding": "UTF-16"}, "encoding"),
    ({"transforms": "c", "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
      "transforms.c.spec": "int32"}, "transform c"),
    ({"value.converter": "org.apache.kafka.connect.converters.IntegerConverter"}, "has no vectorized form"),
])
def test_other_configurations_fall_back_with_a_logged_reason(tmp_path, caplog, props, reason):
    with caplog.at_level(logging.INFO, logger="connect_spark.columnar.plan"):
        assert _compile(tmp_path, **props) is None
    assert reason in caplog.text
