"""Confluent's S3 sink properties, unchanged but for the endpoint, credentials, topic and bucket, through the
real runtime, a real broker and registry, into moto's S3 server; objects read back with fastavro and json.

What each object must be called and hold is worked out here from what was produced, with Confluent's rules
written out plainly (a group per flush.size records; with the hourly one, also per 10 minutes of record
time), not with the connector's code.
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import fastavro
import pytest
from s3_faults import S3Faults

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import load_properties
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce

CONF = Path(__file__).resolve().parents[2] / "conf"
RECORD_SCHEMA = {"type": "record", "name": "Reading", "namespace": "plant", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "seq", "type": "long"},
    {"name": "celsius", "type": ["null", "double"], "default": None}]}


@pytest.fixture
def bucket(local_s3):
    name = f"it-{uuid.uuid4().hex[:12]}"
    local_s3.create_bucket(name)
    return name


def _connector(conf_file: str, local_s3, bucket: str, topic: str, registry_url: str = "") -> dict[str, str]:
    """The example file, with only the endpoints (S3's, the registry's), credentials, topic and bucket replaced."""
    props = load_properties(CONF / conf_file)
    if registry_url:
        props["value.converter.schema.registry.url"] = registry_url
    props.update(local_s3.connector_keys(bucket))
    props["topics"] = topic
    return props


def test_confluent_quickstart_avro_default_partitioner(spark, bootstrap_servers, schema_registry_url, local_s3,
                                                       bucket, topic_name, work_dir):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    create_topic(bootstrap_servers, topic_name, partitions=1)
    serialize = AvroSerializer(SchemaRegistryClient({"url": schema_registry_url}), json.dumps(RECORD_SCHEMA))
    values = [{"sensor": f"s{i % 7}", "seq": i, "celsius": None if i % 5 == 0 else i / 10} for i in range(25_000)]
    context = SerializationContext(topic_name, MessageField.VALUE)
    produce(bootstrap_servers, topic_name, [(0, None, serialize(v, context), []) for v in values])

    connector = _connector("s3-sink.properties", local_s3, bucket, topic_name, schema_registry_url)
    assert connector["flush.size"] == "10000" and connector["format.class"].endswith("AvroFormat")
    worker = worker_properties(bootstrap_servers, work_dir)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0

    objects = local_s3.objects(bucket)
    folder = f"topics/{topic_name}/partition=0"
    assert sorted(objects) == [f"{folder}/{topic_name}+0+0000000000.avro", f"{folder}/{topic_name}+0+0000010000.avro"]
    for start in (0, 10_000):
        reader = fastavro.reader(io.BytesIO(objects[f"{folder}/{topic_name}+0+{start:010d}.avro"]))
        assert reader.writer_schema["name"] == "plant.Reading"
        assert [f["name"] for f in reader.writer_schema["fields"]] == ["sensor", "seq", "celsius"]
        assert list(reader) == values[start:start + 10_000]
    # The last 5,000 records are in no object yet (flush.size not reached): they are not committed.
    assert result.committed == {TopicPartition(topic_name, 0): 20_000}


def _hourly(bootstrap_servers, topic_name):
    """1,300 records a partition on 2 partitions, one a second of record time, and the objects Confluent's
    rules make of them with the hourly example (rotation at 10 minutes of record time, 600 records, before
    flush.size: 1000; every group within hour 12, so one folder; 100 records per partition stay open)."""
    create_topic(bootstrap_servers, topic_name, partitions=2)
    t0 = 1_714_564_800_000  # 2024-05-01T12:00:00Z
    records = []
    for p in range(2):
        for i in range(1_300):
            records.append((p, None, json.dumps({"p": p, "i": i, "name": f"r{i}"}).encode(), [], t0 + 1000 * i + p))
    produce(bootstrap_servers, topic_name, records)
    expected = {}
    for p in range(2):
        for start in (0, 600):
            key = (f"topics/{topic_name}/year=2024/month=05/day=01/hour=12/"
                   f"{topic_name}+{p}+{start:010d}.json")
            expected[key] = [{"p": p, "i": i, "name": f"r{i}"} for i in range(start, start + 600)]
    return expected


def _assert_objects(local_s3, bucket, expected):
    objects = local_s3.objects(bucket)
    assert sorted(objects) == sorted(expected)
    for key, rows in expected.items():
        assert [json.loads(line) for line in objects[key].decode().splitlines()] == rows, key


def test_json_time_based_partitioner_in_executor_mode(spark, bootstrap_servers, local_s3, bucket, topic_name,
                                                      work_dir):
    expected = _hourly(bootstrap_servers, topic_name)
    connector = _connector("s3-json-hourly-sink.properties", local_s3, bucket, topic_name)
    worker = worker_properties(bootstrap_servers, work_dir)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    _assert_objects(local_s3, bucket, expected)
    assert result.committed == {TopicPartition(topic_name, 0): 1200, TopicPartition(topic_name, 1): 1200}


def test_an_upload_the_server_refuses_is_delivered_again_and_each_record_lands_once(
        spark, bootstrap_servers, local_s3, bucket, topic_name, work_dir):
    """The server refuses partition 0's second object once, with one attempt a request: the put raises
    RetriableException in the executor and the runtime delivers the same records again."""
    expected = _hourly(bootstrap_servers, topic_name)
    with S3Faults(local_s3.url) as faults:
        connector = _connector("s3-json-hourly-sink.properties", local_s3, bucket, topic_name)
        connector.update({"store.url": faults.url, "s3.retry.max.attempts": "1"})
        faults.refuse("PUT", f"{topic_name}+0+0000000600.json")
        worker = worker_properties(bootstrap_servers, work_dir)
        result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    assert len(faults.refused) == 1
    _assert_objects(local_s3, bucket, expected)
    committed = {tp: offset for tp, offset in result.committed.items() if tp.topic == topic_name}
    assert committed == {TopicPartition(topic_name, 0): 1200, TopicPartition(topic_name, 1): 1200}
