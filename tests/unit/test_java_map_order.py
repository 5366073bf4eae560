"""Java map iteration order for schemaless values: the orders Kafka Connect's FileStreamSink prints, derived
by hand from java.util.HashMap's rules (bucket = (h ^ h>>>16) & (table-1), insertion order within a bucket,
table doubling past 0.75 × size, a 9-entry bin under 64 resizing, the constructors' table sizes)."""

from __future__ import annotations

import pickle

from connect_spark.api.data.java_map import (
    JavaHashMap,
    JavaLinkedHashMap,
    hash_map_copy,
    hash_map_with_capacity,
    java_hash,
    java_items,
)
from connect_spark.api.records import SinkRecord
from connect_spark.connectors.file import java_string
from connect_spark.converters.json import JsonConverter
from connect_spark.transforms.flatten import FlattenValue
from connect_spark.transforms.insert_field import InsertFieldValue
from connect_spark.transforms.replace_field import ReplaceFieldValue


def _schemaless(json_text: str) -> dict:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)
    return converter.to_connect_data("t", json_text.encode()).value


def _record(value) -> SinkRecord:
    return SinkRecord("t", 0, None, None, None, value, 5)


def _printed(transform, configs, json_text: str) -> str:
    transform.configure(configs)
    return java_string(transform.apply(_record(_schemaless(json_text))).value)


def test_string_hash_codes_are_javas():
    assert java_hash("a") == 97 and java_hash("ab") == 97 * 31 + 98
    assert java_hash("polygenelubricants") == -(2**31)  # the classic Integer.MIN_VALUE string
    assert java_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # two UTF-16 units
    assert java_hash(2**40) == (2**40 >> 32) and java_hash(True) == 1231


def test_json_converter_map_is_a_default_hash_map():
    # "b"=98 → bucket 2, "a"=97 → bucket 1 of 16
    assert java_string(_schemaless('{"b": 1, "a": "x"}')) == "{a=x, b=1}"


def test_replace_field_builds_a_hash_map_sized_to_the_source():
    # Without a transform: table 16, "b" (98) bucket 2, "e" (101) bucket 5: {b=1, e=2}.
    assert java_string(_schemaless('{"b": 1, "e": 2}')) == "{b=1, e=2}"
    # new HashMap<>(2): table 2 (threshold 1); the second put resizes to 4 (threshold 3);
    # "e" → 101 & 3 = 1, "b" → 98 & 3 = 2: {e=2, b=1}.
    assert _printed(ReplaceFieldValue(), {"exclude": "zzz"}, '{"b": 1, "e": 2}') == "{e=2, b=1}"


def test_insert_field_copies_into_a_hash_map_sized_by_the_copy_constructor():
    # new HashMap<>(m) with 2 entries: tableSizeFor((int)(2 / 0.75f + 1)) = tableSizeFor(3) = 4, filled in the
    # source's order b, e; then put "a" (97 & 3 = 1, size 3 = threshold, no resize). Buckets: 1: e, a; 2: b.
    assert _printed(InsertFieldValue(), {"static.field": "a", "static.value": "x"}, '{"b": 1, "e": 2}') \
        == "{e=2, a=x, b=1}"


def test_flatten_builds_a_linked_hash_map_walking_the_source_in_java_order():
    # Source (table 16): "a" (97) bucket 1 before "z" (122) bucket 10; nested: "b" bucket 2 before "e" bucket 5.
    # LinkedHashMap keeps that insertion order (re-hashing the flattened keys would give {z.e=2, a=0, z.b=1}).
    assert _printed(FlattenValue(), {}, '{"z": {"e": 2, "b": 1}, "a": 0}') == "{a=0, z.b=1, z.e=2}"


def test_table_sizes_of_the_constructors_and_resizes():
    assert hash_map_with_capacity(3).table_size == 4 and hash_map_with_capacity(0).table_size == 1
    # Java 17's copy constructor: (int)(12 / 0.75f + 1.0f) = 17 → 32 (a default map of 12 stays at 16).
    twelve = {f"k{i}": i for i in range(12)}
    assert hash_map_copy(twelve).table_size == 32
    # Integer keys 0..128 step 16 all fall in bucket 0 of 16; the 9th put resizes to 32 (treeifyBin under 64):
    # bucket 0 holds 0, 32, 64, 96, 128 and bucket 16 holds 16, 48, 80, 112.
    colliding = {k: k for k in range(0, 129, 16)}
    assert [k for k, _ in java_items(colliding)] == [0, 32, 64, 96, 128, 16, 48, 80, 112]
    # 13 string entries: the 13th put passes 12 (0.75 × 16) and the table doubles to 32.
    keys = [chr(ord("a") + i) for i in range(13)]  # hashes 97..109
    thirteen = {k: 0 for k in reversed(keys)}
    assert [k for k, _ in java_items(thirteen)] == sorted(keys, key=lambda k: ord(k) & 31)


def test_marked_maps_survive_pickling_and_linked_maps_keep_insertion_order():
    copy = pickle.loads(pickle.dumps(JavaHashMap({"b": 1, "e": 2}, table_size=4)))
    assert isinstance(copy, JavaHashMap) and copy.table_size == 4
    assert [k for k, _ in java_items(copy)] == ["e", "b"]
    linked = pickle.loads(pickle.dumps(JavaLinkedHashMap({"z": 1, "a": 2})))
    assert [k for k, _ in java_items(linked)] == ["z", "a"]
