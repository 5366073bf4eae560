"""Kafka's connect-file-sink.properties, unchanged, through the real runtime and a real broker."""

from __future__ import annotations

import json

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce


def test_kafka_file_sink_properties_run_unchanged(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=1)
    values = [{"b": 1, "a": "x"}, "plain", None, [1, 2.5], {"aa": True}]
    produce(bootstrap_servers, topic_name,
            [(0, b"k", None if v is None else json.dumps(v).encode(), []) for v in values])
    worker = worker_properties(bootstrap_servers, work_dir,
                               **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                  "value.converter.schemas.enable": "false"})
    sink = work_dir / "test.sink.txt"
    connector = {"name": "local-file-sink", "connector.class": "FileStreamSink", "tasks.max": "1",
                 "file": str(sink), "topics": topic_name}
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    assert sink.read_text().splitlines() == ["{a=x, b=1}", "plain", "null", "[1, 2.5]", "{aa=true}"]
    assert result.committed == {TopicPartition(topic_name, 0): 5}
