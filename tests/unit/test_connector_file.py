"""FileStreamSink: Kafka's FileStreamSinkTask line format and flush semantics, on real files."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect_spark import plugins
from connect_spark.api.data.schema import SchemaBuilder
from connect_spark.api.data.struct import Struct
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.connectors.file import FileStreamSinkConnector, FileStreamSinkTask, java_string


def record(value, schema=None, offset=0):
    return SinkRecord("t", 0, None, None, schema, value, offset)


def test_kafka_class_names_resolve_to_the_connector():
    for name in ("org.apache.kafka.connect.file.FileStreamSinkConnector", "FileStreamSinkConnector", "FileStreamSink"):
        assert plugins.resolve("connector", name) is FileStreamSinkConnector


def test_lines_are_appended_and_durable_after_flush(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("existing\n")
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([record("hello"), record(None, offset=1), record(42, offset=2), record(True, offset=3)])
    tp = TopicPartition("t", 0)
    assert task.pre_commit({tp: 4}) == {tp: 4}  # default pre_commit: flush, then everything
    assert path.read_text() == "existing\nhello\nnull\n42\ntrue\n"
    task.put([])
    task.stop()
    assert path.read_text().endswith("true\n")


def test_unwritable_file_is_a_connect_exception(tmp_path):
    with pytest.raises(ConnectException, match="Couldn't find or create file"):
        FileStreamSinkTask().start({"file": str(tmp_path / "missing-dir" / "x.txt")})


def test_java_string_forms():
    schema = (SchemaBuilder.struct().field("id", SchemaBuilder.int32().build())
              .field("name", SchemaBuilder.string().optional().build())
              .field("ratio", SchemaBuilder.float32().build())
              .field("tags", SchemaBuilder.array(SchemaBuilder.string().build()).build()).build())
    value = Struct(schema).put("id", 7).put("ratio", 0.1).put("tags", ["a", "b"])
    assert java_string(value, schema) == "Struct{id=7,ratio=0.1,tags=[a, b]}"  # null field left out
    assert java_string(1.0) == "1.0"
    assert java_string(1e21) == "1.0E21"
    assert java_string(decimal.Decimal("12.50")) == "12.50"
    assert java_string(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) == "Thu Jan 01 00:00:00 UTC 1970"
    assert java_string([1, None, [2.5]]) == "[1, null, [2.5]]"


def test_maps_print_in_java_hash_map_order():
    # "b".hashCode()=98, "a"=97, "aa"=3104 -> buckets 2, 1, 0 of a 16-slot table
    assert java_string({"b": 1, "a": 2, "aa": 3}) == "{aa=3, a=2, b=1}"
    # 13 keys resize the table to 32 slots: "q" (113) lands in bucket 17, after "b" (98 -> 2)
    keys = {c: i for i, c in enumerate("qbcdefghijklm")}
    assert list(java_string(keys)[1:-1].split(", "))[:2] == ["b=1", "c=2"]
    assert java_string(keys).endswith("q=0}")


def test_connector_gives_each_task_the_configuration():
    connector = FileStreamSinkConnector()
    connector.start({"file": "x", "topics": "t"})
    assert connector.task_configs(2) == [{"file": "x", "topics": "t"}] * 2
    assert connector.config().validate({}) == []
