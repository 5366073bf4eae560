"""The vectorized plan parses each JSON value once: no parse re-inlined into the good/fallback filters,
no from_json split into one pruned parse per field. Real Spark; only query plans are inspected."""

from __future__ import annotations

import json
import re

import pytest

from connect_spark.columnar.plan import compile_plan
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.testing.harness import worker_properties

RAW_DDL = ("topic string, partition int, offset long, timestamp_ms long, timestamp_type int, key binary, "
           "value binary, headers array<struct<key:string,value:binary>>")
SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False}, {"field": "name", "type": "string", "optional": False},
    {"field": "price", "type": "double", "optional": False}]}
PARSES = ("from_json", "parseJson", "get_json_object", "jsonObjectKeys")


T = "org.apache.kafka.connect.transforms."
#: InsertField, MaskField, Cast and ValueToKey, each reading every field the previous one built.
FIELD_CHAIN = {
    "transforms": "ins,mask,cast,key",
    "transforms.ins.type": T + "InsertField$Value", "transforms.ins.offset.field": "o",
    "transforms.ins.static.field": "s", "transforms.ins.static.value": "v",
    "transforms.mask.type": T + "MaskField$Value", "transforms.mask.fields": "name",
    "transforms.cast.type": T + "Cast$Value", "transforms.cast.spec": "id:int32,price:float32,name:boolean",
    "transforms.key.type": T + "ValueToKey", "transforms.key.fields": "id,o",
}


def _plans(spark, tmp_path, envelope: bool, **props: str) -> list[str]:
    worker = WorkerConfig(worker_properties("127.0.0.1:9", tmp_path))
    connector = ConnectorConfig({
        "name": "vec", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector",
        "topics": "orders", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": str(envelope).lower(), **props})
    rows = []
    for i in range(20):
        payload = {"id": i, "name": f"n{i}", "price": i + 0.5}
        value = {"schema": SCHEMA, "payload": payload} if envelope else payload
        rows.append(("orders", 0, i, 1_700_000_000_000, 0, None, json.dumps(value).encode(), []))
    out = compile_plan(connector, worker).apply(spark.createDataFrame(rows, RAW_DDL))
    assert out.good.count() == 20
    return [df._jdf.queryExecution().optimizedPlan().toString() for df in (out.good, out.fallback)]


@pytest.mark.parametrize("envelope", [False, True])
def test_filters_read_the_projected_condition_instead_of_parsing_again(spark, tmp_path, envelope):
    for plan in _plans(spark, tmp_path, envelope):
        filters = [line for line in plan.splitlines() if "Filter " in line]
        assert filters
        for line in filters:
            assert not any(p in line for p in PARSES), line


def test_the_payload_parse_is_one_from_json_over_the_whole_schema(spark, tmp_path):
    good_plan, _ = _plans(spark, tmp_path, True)
    parses = set(re.findall(r"from_json\((.*?)\(mode", good_plan))
    assert len(parses) == 1, parses
    assert all(f"StructField({f['field']}," in next(iter(parses)) for f in SCHEMA["fields"])


@pytest.mark.parametrize("envelope", [False, True])
def test_a_field_transform_chain_compiles_and_keeps_one_parse(spark, tmp_path, envelope):
    good_plan, fallback_plan = _plans(spark, tmp_path, envelope, **FIELD_CHAIN)
    for plan in (good_plan, fallback_plan):
        assert all(not any(p in line for p in PARSES) for line in plan.splitlines() if "Filter " in line)
    if envelope:
        assert len(set(re.findall(r"from_json\((.*?)\(mode", good_plan))) == 1
    assert len(good_plan) < 60_000  # linear in the chain: fields are read from the built struct's columns


def test_a_field_chain_parses_schemaless_json_a_bounded_number_of_times_per_row(spark, tmp_path):
    """Fields read through the converter's CASE WHEN would each parse the JSON again (one parse per field)."""
    worker = WorkerConfig(worker_properties("127.0.0.1:9", tmp_path))
    connector = ConnectorConfig({
        "name": "vec", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector",
        "topics": "orders", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", **FIELD_CHAIN})
    rows = [("orders", 0, i, 1_700_000_000_000, 0, None,
             json.dumps({"id": i, "name": f"n{i}", "price": i + 0.5, **{f"f{k}": k for k in range(8)}}).encode(), [])
            for i in range(20)]
    good = compile_plan(connector, worker).apply(spark.createDataFrame(rows, RAW_DDL)).good
    assert good.count() == 20
    generated = spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(good._jdf.queryExecution().debug().codegenToSeq())
    code = "\n".join(str(stage._2()) for stage in generated)
    assert 1 <= code.count("parseJson") <= 4  # 15 when every one of the 11 fields parses again
