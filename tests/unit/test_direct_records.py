"""DirectRecordBuilder gives exactly the records of the per-record path, or declines the batch (no JVM)."""

from __future__ import annotations

import random

import pytest

from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.conversion.sink_records import raw_records
from connect_spark.runtime.conversion.direct_records import DirectRecordBuilder
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.raw_batches import raw_record_batch

STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _converter(key=STRING, value=STRING, header=None, **connector_props):
    worker = {**worker_properties("127.0.0.1:9", "/tmp/unused"), "key.converter": key, "value.converter": value}
    if header:
        worker["header.converter"] = header
    connector = ConnectorConfig({"name": "d", "connector.class": "RecordingSink", "topics": "t", **connector_props})
    return build_task_plugins(connector, WorkerConfig(worker), 0).converter


def _batch(rows):
    topics, partitions, offsets, timestamps, types, keys, values, headers = (list(c) for c in zip(*rows))
    return raw_record_batch(values, topic=topics, partitions=partitions, offsets=offsets, timestamps=timestamps,
                            timestamp_types=types, keys=keys,
                            headers=[[(h["key"], h["value"]) for h in hs] for hs in headers])


def _random_rows(seed, count=300, headers=True):
    rng = random.Random(seed)
    offsets = {("a", 0): 10, ("a", 1): 0, ("b", 0): 5}
    rows = []
    for _ in range(count):
        tp = rng.choice(list(offsets))
        offsets[tp] += rng.choice((1, 1, 1, 3))  # gaps, as compaction and transactions leave
        text = rng.choice(["", "plain", "ünïcödé ✓", '{"id": 1}', "x" * rng.randint(0, 300)])
        row_headers = [{"key": rng.choice(["h", "trace", "h"]), "value": rng.choice([b"1", b"abc", None, b"true"])}
                       for _ in range(rng.choice((0, 0, 1, 2)))] if headers else []
        rows.append((tp[0], tp[1], offsets[tp], rng.choice([None, -1, 0, 1_700_000_000_000 + rng.randint(0, 10**6)]),
                     rng.choice([0, 1]), rng.choice([None, b"k1", "ключ".encode()]),
                     rng.choice([None, text.encode()]), row_headers))
    return rows


@pytest.mark.parametrize("key, value", [(STRING, STRING), (BYTES, BYTES), (STRING, BYTES), (BYTES, STRING)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_records_and_offsets_as_the_per_record_path(key, value, seed):
    converter = _converter(key, value)
    batch = _batch(_random_rows(seed))
    direct = DirectRecordBuilder.for_converter(converter).build(batch)
    expected = converter.convert(raw_records(batch))
    assert direct is not None
    assert direct.records == expected.records
    assert direct.consumed == expected.consumed
    some = expected.records[len(expected.records) // 2]
    coordinates = (some.topic, some.kafka_partition, some.kafka_offset)
    assert direct.raw_by_coordinates.get(coordinates) == expected.raw_by_coordinates[coordinates]
    assert direct.raw_by_coordinates.get(("nope", 0, 0)) is None


def test_records_do_not_share_header_objects():
    converter = _converter()
    records = DirectRecordBuilder.for_converter(converter).build(_batch(_random_rows(7, headers=False))).records
    records[0].headers.add("added", "v")
    assert len(records[1].headers) == 0


@pytest.mark.parametrize("change, reason", [
    (lambda row: (*row[:6], b"\xff\xfe bad", row[7]), "invalid UTF-8 value"),
    (lambda row: (*row[:5], b"\xc3", *row[6:]), "invalid UTF-8 key"),
    (lambda row: (*row[:3], -5, *row[4:]), "a timestamp below -1"),
])
def test_batches_that_need_the_per_record_path_are_declined(change, reason):
    rows = _random_rows(4)
    rows[17] = change(rows[17])
    assert DirectRecordBuilder.for_converter(_converter()).build(_batch(rows)) is None, reason


def test_a_header_the_header_converter_rejects_declines_the_batch():
    rows = _random_rows(5)
    rows[3] = (*rows[3][:7], [{"key": "h", "value": b"\xff not utf-8"}])
    converter = _converter(header=STRING)
    assert DirectRecordBuilder.for_converter(converter).build(_batch(rows)) is None


def test_only_byte_and_utf8_string_converters_without_transforms_qualify():
    assert DirectRecordBuilder.for_converter(_converter(value=JSON)) is None
    assert DirectRecordBuilder.for_converter(_converter(**{"value.converter": STRING, "value.converter.converter.encoding": "UTF-16"})) is None
    chained = _converter(transforms="r", **{"transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
                                             "transforms.r.regex": "(.*)", "transforms.r.replacement": "x-$1"})
    assert DirectRecordBuilder.for_converter(chained) is None
