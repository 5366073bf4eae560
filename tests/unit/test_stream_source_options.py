"""The Kafka source options of a connector's stream: the fetch hold time default, and what the client settings override."""

from __future__ import annotations

import json

from connect_spark.api.records import TopicPartition
from connect_spark.streaming.source import STREAM_FETCH_MAX_WAIT_MS, kafka_source_options

POSITIONS = {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 0}


def test_the_stream_holds_fetches_briefly_unless_the_client_settings_say_otherwise():
    options = kafka_source_options({"bootstrap.servers": "b:9092"}, ["orders"], None, POSITIONS, None)
    assert options["kafka.fetch.max.wait.ms"] == str(STREAM_FETCH_MAX_WAIT_MS) == "100"
    assert options["kafka.bootstrap.servers"] == "b:9092"
    assert json.loads(options["startingOffsets"]) == {"orders": {"0": 5, "1": 0}}

    mine = kafka_source_options({"bootstrap.servers": "b:9092", "fetch.max.wait.ms": 500}, ["orders"], None,
                                POSITIONS, None)
    assert mine["kafka.fetch.max.wait.ms"] == "500"


def test_settings_spark_manages_are_left_out_and_the_bound_is_passed():
    options = kafka_source_options({"bootstrap.servers": "b:9092", "group.id": "g", "auto.offset.reset": "latest"},
                                   None, "orders-.*", POSITIONS, 1000, include_headers=False)
    assert "kafka.group.id" not in options and "kafka.auto.offset.reset" not in options
    assert options["subscribePattern"] == "orders-.*" and options["maxOffsetsPerTrigger"] == "1000"
    assert options["includeHeaders"] == "false"
