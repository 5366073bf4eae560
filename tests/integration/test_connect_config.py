"""A real Kafka Connect sink configuration (conf/json-filter-dlq-sink.properties) runs unchanged.

Only what names the environment is replaced (connector name, topic, DLQ topic, output folder); the
converters, the predicate-guarded Filter, ReplaceField, InsertField, RegexRouter and the errors.* keys
are the file's. It runs twice in one Spark run: as written (``schemas.enable=true``) and with
``value.converter.schemas.enable=false``; the task must receive exactly the expected records.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka import KafkaConsumer
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import load_properties
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import decode_value, read_recorded_records

CONF = Path(__file__).resolve().parents[2] / "conf" / "json-filter-dlq-sink.properties"
SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int32"},
    {"field": "amt", "type": "int64"},
    {"field": "internal", "type": "string", "optional": True},
]}


def _from_conf(name: str, topic: str, work_dir: Path, **overrides: str) -> dict[str, str]:
    props = {k: str(v) for k, v in load_properties(CONF).items()}
    props.update({"name": name, "topics": topic, "errors.deadletterqueue.topic.name": f"{topic}-dlq",
                  "recording.dir": str(work_dir / name)})
    props.update(overrides)
    return props


def _dlq(bootstrap: str, topic: str, expected: int) -> list[tuple[int, str, str]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=5000)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        found = []
        for record in consumer:
            headers = {k: bytes(v).decode() for k, v in record.headers}
            found.append((int(headers["__connect.errors.offset"]), headers["__connect.errors.stage"],
                          headers["__connect.errors.class.name"]))
            if len(found) == expected:
                break
        return found
    finally:
        consumer.close()


def _received(work_dir: Path, name: str) -> list[tuple]:
    return [(r["topic"], r["original"][2], decode_value(r["key"]), decode_value(r["value"]))
            for r in read_recorded_records(work_dir / name)]


def test_the_json_filter_dlq_example_runs_unchanged_with_both_schema_settings(spark, bootstrap_servers, topic_name,
                                                                               work_dir):
    with_schemas, schemaless = f"{topic_name}-s", f"{topic_name}-p"

    def envelope(payload) -> bytes:
        return json.dumps({"schema": SCHEMA, "payload": payload}).encode()

    create_topic(bootstrap_servers, with_schemas, 1)
    create_topic(bootstrap_servers, schemaless, 1)
    produce(bootstrap_servers, with_schemas, [
        (0, b"o1", envelope({"id": 1, "amt": 50, "internal": "x"}), []),
        (0, b"o1", None, []),  # a tombstone: dropped by the Filter its predicate guards
        (0, b"o2", b'{"id": 2, "amt": 60}', []),  # no envelope: DLQ
        (0, b"o3", envelope({"amt": 70}), []),  # a required field is missing: DLQ
        (0, b"o4", envelope({"id": 4, "amt": 80, "internal": None}), []),
    ])
    produce(bootstrap_servers, schemaless, [
        (0, b"p1", b'{"id": 1, "amt": 5, "internal": "x", "note": "n"}', []),
        (0, b"p2", b"{broken", []),  # DLQ
        (0, b"p2", None, []),  # tombstone, filtered
        (0, b"p3", b"[1, 2, 3]", []),  # ReplaceField$Value needs a map: DLQ
        (0, b"p4", b'{"id": 4}', []),
    ])
    connectors = [
        _from_conf(f"schemas-{topic_name}", with_schemas, work_dir),
        _from_conf(f"plain-{topic_name}", schemaless, work_dir, **{"value.converter.schemas.enable": "false"}),
    ]
    worker = worker_properties(bootstrap_servers, work_dir)
    assert run_standalone(worker, connectors, available_now=True, spark=spark) == 0

    clean = f"{with_schemas}-clean"
    assert _received(work_dir, connectors[0]["name"]) == [
        (clean, 0, "o1", "Struct{id=1,amount=50,kafka_offset=0,source=kafka}"),
        (clean, 4, "o4", "Struct{id=4,amount=80,kafka_offset=4,source=kafka}"),
    ]
    json_converter = "org.apache.kafka.connect.json.JsonConverter"
    assert sorted(_dlq(bootstrap_servers, f"{with_schemas}-dlq", 2)) == [
        (2, "VALUE_CONVERTER", json_converter), (3, "VALUE_CONVERTER", json_converter)]

    clean = f"{schemaless}-clean"
    assert _received(work_dir, connectors[1]["name"]) == [
        (clean, 0, "p1", {"id": 1, "amount": 5, "note": "n", "kafka_offset": 0, "source": "kafka"}),
        (clean, 4, "p4", {"id": 4, "kafka_offset": 4, "source": "kafka"}),
    ]
    assert sorted(_dlq(bootstrap_servers, f"{schemaless}-dlq", 2)) == [
        (1, "VALUE_CONVERTER", json_converter),
        (3, "TRANSFORMATION", "org.apache.kafka.connect.transforms.ReplaceField$Value")]

    for connector, topic in zip(connectors, (with_schemas, schemaless)):
        assert committed_offsets(worker, connector["name"]) == {TopicPartition(topic, 0): 5}
