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


T = "org.apache.kafka.connect.transforms."
FIELD_CHAIN = {
    "transforms": "flat,ins,tsc,mask,cast,v2k,ext,hoist,meta,route,hdr,ins2",
    "transforms.tsc.type": T + "TimestampConverter$Value", "transforms.tsc.field": "ts",
    "transforms.tsc.target.type": "string", "transforms.tsc.format": "yyyy-MM-dd",
    "transforms.flat.type": T + "Flatten$Value", "transforms.flat.delimiter": "_",
    "transforms.ins.type": T + "InsertField$Value", "transforms.ins.topic.field": "t!",
    "transforms.ins.timestamp.field": "ts?", "transforms.ins.static.field": "s", "transforms.ins.static.value": "v",
    "transforms.mask.type": T + "MaskField$Value", "transforms.mask.fields": "a,b", "transforms.mask.replacement": "0",
    "transforms.cast.type": T + "Cast$Value", "transforms.cast.spec": "a:int8,b:string",
    "transforms.v2k.type": T + "ValueToKey", "transforms.v2k.fields": "a",
    "transforms.ext.type": T + "ExtractField$Key", "transforms.ext.field": "a",
    "transforms.hoist.type": T + "HoistField$Key", "transforms.hoist.field": "k",
    "transforms.meta.type": T + "SetSchemaMetadata$Key", "transforms.meta.schema.name": "k.Key",
    "transforms.route.type": T + "TimestampRouter", "transforms.route.timestamp.format": "yyyyMMdd'T'HH",
    "transforms.hdr.type": T + "InsertHeader", "transforms.hdr.header": "h", "transforms.hdr.value.literal": "true",
    "transforms.ins2.type": T + "InsertField$Key", "transforms.ins2.offset.field": "o",
    "transforms.ins2.predicate": "tomb", "transforms.ins2.negate": "true",
    "predicates": "tomb", "predicates.tomb.type": T + "predicates.RecordIsTombstone",
}


def test_a_chain_of_field_transforms_gets_a_plan(tmp_path):
    plan = _compile(tmp_path, **JSON, **FIELD_CHAIN)
    assert plan is not None
    assert [s.alias for s in plan.steps] == FIELD_CHAIN["transforms"].split(",")
    assert plan.steps[-1].passes_null == "key" and plan.steps[-1].condition is not None


@pytest.mark.parametrize("props, reason", [
    ({"value.converter": "org.apache.kafka.connect.storage.StringConverter",
      "value.converter.converter.encoding": "UTF-16"}, "encoding"),
    ({"transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
      "transforms.h.fields": "a", "transforms.h.headers": "a", "transforms.h.operation": "copy"},
     "SimpleHeaderConverter does not preserve"),
    ({"transforms": "t", "transforms.t.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
      "transforms.t.target.type": "string", "transforms.t.format": "EEE"}, "letter 'EEE'"),
    ({"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.TimestampRouter",
      "transforms.r.timestamp.format": "EEE yyyy"}, "letter 'EEE'"),
    ({"transforms": "v", "transforms.v.type": "org.apache.kafka.connect.transforms.ValueToKey",
      "transforms.v.fields": "a,a"}, "a field twice"),
    ({"transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.InsertHeader",
      "transforms.h.header": "h", "transforms.h.value.literal": "42",
      "header.converter": "org.apache.kafka.connect.storage.StringConverter"}, "header converter StringConverter"),
    ({"value.converter": "org.apache.kafka.connect.converters.IntegerConverter"}, "has no vectorized form"),
])
def test_other_configurations_fall_back_with_a_logged_reason(tmp_path, caplog, props, reason):
    with caplog.at_level(logging.INFO, logger="connect_spark.columnar.plan"):
        assert _compile(tmp_path, **props) is None
    assert reason in caplog.text
