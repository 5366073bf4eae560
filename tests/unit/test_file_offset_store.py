"""FileOffsetStore: the standalone offsets file (no Kafka, no JVM)."""

from __future__ import annotations

import json
import logging
import os

import pytest

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.storage.offsets import (
    OffsetStoreError,
    UnexpectedOffsetRecord,
    decode_record,
    encode_key,
    encode_value,
)

TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)
TP_OTHER = TopicPartition("payments", 3)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "state" / "offsets.json"


@pytest.fixture
def store(path):
    with FileOffsetStore(path) as s:
        yield s


def test_round_trip(store):
    assert store.read("sink") == {}
    store.write("sink", {TP0: 10, TP1: 3})
    store.write("sink", {TP0: 12})  # partitions not named keep their offsets
    assert store.read("sink") == {TP0: 12, TP1: 3}


def test_new_instance_reads_what_an_earlier_one_wrote(store, path):
    store.write("sink", {TP0: 7})
    store.stop()
    with FileOffsetStore(path) as again:
        assert again.read("sink") == {TP0: 7}


def test_reset_removes_the_partition(store, path):
    store.write("sink", {TP0: 10, TP1: 3})
    store.write("sink", {TP0: None})
    assert store.read("sink") == {TP1: 3}
    store.write("sink", {TP1: None, TP_OTHER: None})  # resetting an unknown partition is fine
    assert store.read("sink") == {}
    assert json.loads(path.read_text()) == []


def test_connectors_do_not_see_each_other(store):
    store.write("a", {TP0: 1})
    store.write("b", {TP0: 2, TP_OTHER: 5})
    store.write("b", {TP0: None})
    assert store.read("a") == {TP0: 1}
    assert store.read("b") == {TP_OTHER: 5}
    assert store.read("c") == {}


def test_file_holds_the_connect_json_shapes(store, path):
    store.write("sink", {TP1: 42, TP0: 4711})
    text = path.read_text()
    assert text == (
        "[\n"
        '{"key":["sink",{"kafka_topic":"orders","kafka_partition":0}],"value":{"kafka_offset":4711}},\n'
        '{"key":["sink",{"kafka_topic":"orders","kafka_partition":1}],"value":{"kafka_offset":42}}\n'
        "]\n"
    )


def test_string_offsets_and_null_values_are_read(store, path):
    path.write_text(json.dumps([
        {"key": ["sink", {"kafka_topic": "orders", "kafka_partition": "0"}], "value": {"kafka_offset": "10"}},
        {"key": ["sink", {"kafka_topic": "orders", "kafka_partition": 1}], "value": {"kafka_offset": 5}},
        {"key": ["sink", {"kafka_topic": "orders", "kafka_partition": 1}], "value": None},
    ]))
    assert store.read("sink") == {TP0: 10}


def test_foreign_entries_are_skipped_with_a_warning_and_kept(store, path, caplog):
    source_entry = {"key": ["my-src", {"filename": "a.txt"}], "value": {"position": 30}}
    path.write_text(json.dumps([
        source_entry,
        "not an entry",
        {"key": ["sink", {"kafka_topic": "orders", "kafka_partition": 0}], "value": {"kafka_offset": "x1"}},
        {"key": ["sink", {"kafka_topic": "orders", "kafka_partition": 1}], "value": {"kafka_offset": 8}},
    ]))
    with caplog.at_level(logging.WARNING, logger="connect_spark.storage"):
        assert store.read("sink") == {TP1: 8}
        assert store.read("my-src") == {}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 6  # three entries, read twice
    assert any("not a sink connector's offset" in w for w in warnings)

    store.write("sink", {TP0: 1})
    entries = json.loads(path.read_text())
    assert source_entry in entries and "not an entry" in entries  # not lost by a rewrite
    assert store.read("sink") == {TP0: 1, TP1: 8}


def test_leftover_temp_file_of_a_killed_writer(path):
    with FileOffsetStore(path) as store:
        store.write("sink", {TP0: 10})
    # A writer killed after writing its temp file but before the rename leaves this behind.
    leftover = path.parent / f".{path.name}.abc123.tmp"
    leftover.write_text('[\n{"key":["sink",{"kafka_topic":"orders","kafka_part')
    with FileOffsetStore(path) as store:
        assert not leftover.exists()
        assert store.read("sink") == {TP0: 10}
        store.write("sink", {TP0: 11})
        assert store.read("sink") == {TP0: 11}
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_write_replaces_the_file_atomically(store, path, monkeypatch):
    store.write("sink", {TP0: 10})
    before = path.read_text()

    def killed(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(OffsetStoreError, match="Cannot write"):
        store.write("sink", {TP0: 11})
    monkeypatch.undo()
    assert path.read_text() == before
    assert store.read("sink") == {TP0: 10}
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_invalid_offsets_are_refused(store):
    for bad in ({TP0: -1}, {TP0: "10"}, {TP0: 1.5}, {TP0: True}, {("orders",): 1}, {("orders", -1): 1}):
        with pytest.raises(OffsetStoreError):
            store.write("sink", bad)
    with pytest.raises(OffsetStoreError):
        store.write("", {TP0: 1})
    assert store.read("sink") == {}


def test_plain_tuples_are_accepted_as_keys(store):
    store.write("sink", {("orders", 0): 3})
    assert store.read("sink") == {TP0: 3}


def test_corrupt_file_is_an_error_not_an_empty_store(path):
    path.parent.mkdir(parents=True)
    path.write_text('{"key": ')
    store = FileOffsetStore(path)
    with pytest.raises(OffsetStoreError, match="not valid JSON") as info:
        store.start()
    assert isinstance(info.value, ConnectException)


def test_not_started(path):
    store = FileOffsetStore(path)
    with pytest.raises(OffsetStoreError, match="not started"):
        store.read("sink")
    with pytest.raises(OffsetStoreError, match="not started"):
        store.write("sink", {TP0: 1})


def test_record_codec():
    key = encode_key("my sink ü", TP0)
    assert key == '["my sink ü",{"kafka_topic":"orders","kafka_partition":0}]'.encode()
    assert encode_value(5) == b'{"kafka_offset":5}'
    assert encode_value(None) is None
    record = decode_record(key, b'{"kafka_offset":"17"}')
    assert (record.connector, record.partition, record.offset) == ("my sink ü", TP0, 17)
    assert decode_record(key, None).offset is None
    for bad_key, bad_value in [
        (None, b"{}"),
        (b"not json", b"{}"),
        (b'["a"]', b"{}"),
        (b'[1,{"kafka_topic":"t","kafka_partition":0}]', b"{}"),
        (b'["a",{"filename":"x"}]', b'{"position":1}'),
        (b'["a",{"kafka_topic":"t","kafka_partition":0}]', b'{"position":1}'),
        (b'["a",{"kafka_topic":"t","kafka_partition":0}]', b'{"kafka_offset":true}'),
        (b'["a",{"kafka_topic":"t","kafka_partition":0}]', b'{"kafka_offset":-3}'),
    ]:
        with pytest.raises(UnexpectedOffsetRecord):
            decode_record(bad_key, bad_value)
