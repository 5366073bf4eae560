"""The vectorized plan and the per-record RecordConverter give identical records on the same raw rows.

Property-style: each case generates a random batch (seeded, so failures reproduce) mixing valid
records with ones the per-record path rejects, runs it through ``ColumnarPlan.apply`` (good rows →
``frame_to_records``; fallback rows → RecordConverter) and through RecordConverter alone, and compares
record by record, value types included (an int is not a float). Real Spark, DataFrames built in memory.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pyarrow as pa
import pytest

from connect_spark.api.data import Struct
from connect_spark.columnar.plan import compile_plan, consumed_offsets
from connect_spark.runtime.conversion.sink_records import raw_records
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_COLUMNS, RAW_DDL
from tests.integration.frame_batches import SCHEMALESS, plan_connector, raw_row

def _typed(v: Any) -> Any:
    """A comparable form that keeps Python types (1 != 1.0 here)."""
    if isinstance(v, Struct):
        return ("Struct", v.schema, tuple(_typed(v.get_without_default(f)) for f in v.schema.fields))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((k, _typed(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("list", tuple(_typed(x) for x in v))
    if isinstance(v, float):
        return ("float", repr(v))  # -0.0 != 0.0 here, and NaN equals itself
    return (type(v).__name__, v)


def _signature(r: Any) -> tuple:
    return (r.topic, r.kafka_partition, r.kafka_offset, r.timestamp, r.timestamp_type, r.key_schema, _typed(r.key),
            r.value_schema, _typed(r.value), tuple((h.key, h.schema, _typed(h.value)) for h in r.headers),
            r.original_topic, r.original_kafka_partition, r.original_kafka_offset)


def run_both(spark, tmp_path, rows: list[tuple], **props: str) -> dict[str, int]:
    connector, worker = plan_connector(tmp_path, **props)
    plan = compile_plan(connector, worker)
    assert plan is not None, "expected a vectorizable configuration"
    converter = build_task_plugins(connector, worker, 0).converter
    raw_table = pa.Table.from_pylist([dict(zip(RAW_COLUMNS, r)) for r in rows], RAW_ARROW_SCHEMA)
    order = lambda r: (r.original_kafka_partition, r.original_kafka_offset)  # noqa: E731
    expected = sorted(converter.convert(raw_records(raw_table)).records, key=order)

    raw_df = spark.createDataFrame(rows, RAW_DDL).cache()
    out = plan.apply(raw_df)
    good_table = out.good.toArrow()
    fallback_table = out.fallback.toArrow()
    good = out.to_records(good_table)
    from_fallback = converter.convert(raw_records(fallback_table)).records
    actual = sorted(good + from_fallback, key=order)

    assert [_signature(r) for r in actual] == [_signature(r) for r in expected]
    good_offsets = set(good_table.column("original_offset").to_pylist())
    fallback_offsets = set(fallback_table.column("offset").to_pylist())
    assert not good_offsets & fallback_offsets, "a row is both good and fallback"
    consumed = consumed_offsets(raw_df)
    assert consumed == {tp: max(r[2] for r in rows if (r[0], r[1]) == tp) + 1 for tp in {(r[0], r[1]) for r in rows}}
    raw_df.unpersist()
    return {"good": len(good), "fallback": fallback_table.num_rows, "expected": len(expected)}


def _json_value(rnd: random.Random) -> Any:
    kind = rnd.random()
    if kind < 0.3:
        return rnd.randint(-2**40, 2**40)
    if kind < 0.5:
        return rnd.choice([1.5, -0.25, 100.0, 3.0e10, 1e-7])
    if kind < 0.7:
        return rnd.choice(["a", "é€", "", "with \"quote\"", "x" * 20])
    if kind < 0.8:
        return rnd.choice([True, False])
    if kind < 0.9:
        return None
    return [rnd.randint(0, 9) for _ in range(rnd.randint(0, 3))]


def _schemaless_batch(seed: int) -> list[tuple]:
    rnd = random.Random(seed)
    base = {"id": 1, "name": "n", "price": 2.5, "ok": True, "tags": [1, 2], "nested": {"a": 1, "b": "x"}}
    rows = []
    for i in range(40):
        roll = rnd.random()
        if roll < 0.6:  # the dominant shape
            doc = {"id": rnd.randint(-2**62, 2**62), "name": rnd.choice(["a", "β", "", "x\ny"]),
                   "price": rnd.choice([0.1, 2.5, -7.25, 1e300]), "ok": rnd.random() < 0.5,
                   "tags": [rnd.randint(0, 5) for _ in range(rnd.randint(1, 3))],
                   "nested": {"a": rnd.randint(0, 3), "b": rnd.choice(["p", "q"])}}
            value = json.dumps(doc, ensure_ascii=rnd.random() < 0.5).encode()
        elif roll < 0.8:  # a variation: missing key, null, int where a fraction was, ...
            doc = dict(base)
            field = rnd.choice(list(base))
            if rnd.random() < 0.5:
                del doc[field]
            else:
                doc[field] = _json_value(rnd)
            value = json.dumps(doc).encode()
        else:
            value = rnd.choice([None, b"", b"null", b"{bad", b"\xff\xfe{}", b"[1,2]", b"42", b'"s"',
                                b'{"id":1,"id":2}', b"NaN", b'{"id": 123456789012345678901}'])
        rows.append(raw_row(i, value, key=rnd.choice([None, b'"k"', b"7", str(i).encode()])))
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_schemaless_json_matches_per_record(spark, tmp_path, seed):
    counts = run_both(spark, tmp_path, _schemaless_batch(seed),
                      **{"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "key.converter.schemas.enable": "false",
                         "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "value.converter.schemas.enable": "false"})
    assert counts["good"] >= 15  # the dominant shape was vectorized
    assert counts["fallback"] >= 1


SCHEMA = {"type": "struct", "name": "com.example.Order", "optional": False, "fields": [
    {"field": "id", "type": "int32", "optional": False},
    {"field": "name", "type": "string", "optional": True},
    {"field": "price", "type": "double", "optional": False},
    {"field": "ok", "type": "boolean", "optional": True},
    {"field": "day", "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "optional": True},
    {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
     "optional": True},
    {"field": "blob", "type": "bytes", "optional": True},
    {"field": "tags", "type": "array", "items": {"type": "int64", "optional": False}, "optional": True},
    {"field": "attrs", "type": "map", "keys": {"type": "string", "optional": False},
     "values": {"type": "string", "optional": True}, "optional": True},
    {"field": "inner", "type": "struct", "optional": True, "fields": [
        {"field": "q", "type": "int16", "optional": False}, {"field": "r", "type": "float", "optional": True}]},
]}


def _envelope_batch(seed: int) -> list[tuple]:
    rnd = random.Random(seed)
    rows = []
    for i in range(40):
        payload = {"id": rnd.randint(-2**31, 2**31 - 1), "name": rnd.choice([None, "a", "ü"]),
                   "price": rnd.choice([1.5, 0.1, -3.0, 2e20]), "ok": rnd.choice([None, True, False]),
                   "day": rnd.choice([None, 0, 19000, -5]), "at": rnd.choice([None, 0, 1_700_000_000_123]),
                   "blob": rnd.choice([None, base64.b64encode(b"\x00\x01hi").decode()]),
                   "tags": rnd.choice([None, [], [1, 2, 3]]), "attrs": rnd.choice([None, {}, {"k": "v", "n": None}]),
                   "inner": rnd.choice([None, {"q": 3, "r": 0.5}, {"q": -7, "r": None}])}
        schema = SCHEMA
        roll = rnd.random()
        if roll < 0.25:  # something the per-record path treats differently or rejects
            field, bad = rnd.choice([("id", 2**40), ("id", "12"), ("id", 1.5), ("price", None), ("name", 5),
                                     ("day", 2**40), ("blob", "!!notbase64"), ("tags", [1, None]),
                                     ("inner", {"q": 70000}), ("ok", "yes"), ("price", 7)])
            payload[field] = bad
        elif roll < 0.3:
            schema = {**SCHEMA, "name": "com.example.Other"}
        elif roll < 0.35:
            payload.pop("name")
        envelope = {"schema": schema, "payload": payload}
        value = json.dumps(envelope).encode()
        if rnd.random() < 0.08:
            value = rnd.choice([None, b"", b'{"payload": 1}', b"{not json"])
        rows.append(raw_row(i, value, key=str(i).encode(), ts=rnd.choice([1_700_000_000_000, -1, None])))
    return rows


@pytest.mark.parametrize("seed", [11, 12])
def test_json_with_schemas_matches_per_record(spark, tmp_path, seed):
    counts = run_both(spark, tmp_path, _envelope_batch(seed),
                      **{"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                         "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "value.converter.schemas.enable": "true"})
    assert counts["good"] >= 15
    assert counts["fallback"] >= 3


def _routing_batch(seed: int) -> list[tuple]:
    rnd = random.Random(seed)
    rows = []
    for i in range(30):
        headers = rnd.choice([[], [{"key": "skip", "value": b"1"}], [{"key": "trace", "value": b"abc"},
                                                                    {"key": "drop-me", "value": b"42"}]])
        value = rnd.choice([None, json.dumps({"a": i, "b": "x", "c": [i]}).encode()])
        rows.append(raw_row(i, value, key=rnd.choice([None, b"k\xc3\xa9", b"\xff"]), headers=headers,
                         topic=rnd.choice(["orders", "orders-eu", "other"])))
    return rows


def test_string_keys_routing_filters_and_fields(spark, tmp_path):
    counts = run_both(spark, tmp_path, _routing_batch(5), **{
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "skip,tomb,route,fields,headers",
        "transforms.skip.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.skip.predicate": "hasSkip",
        "transforms.tomb.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.tomb.predicate": "isTombstone",
        "transforms.tomb.negate": "false",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "orders(-.*)?",
        "transforms.route.replacement": "all-orders$1",
        "transforms.route.predicate": "notOther",
        "transforms.route.negate": "true",
        "transforms.fields.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.fields.exclude": "c",
        "transforms.fields.renames": "a:id",
        "transforms.headers.type": "org.apache.kafka.connect.transforms.DropHeaders",
        "transforms.headers.headers": "drop-me",
        "predicates": "hasSkip,isTombstone,notOther",
        "predicates.hasSkip.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.hasSkip.name": "skip",
        "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
        "predicates.notOther.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.notOther.pattern": "other",
    })
    assert counts["good"] >= 5
    assert counts["expected"] < 30  # the filters dropped records


# --- field-level transforms (InsertField, MaskField, Cast, ValueToKey, ...) ----------------------

ENVELOPE = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true"}
T = "org.apache.kafka.connect.transforms."


def _chain(*transforms: tuple[str, str, dict[str, str]], **extra: str) -> dict[str, str]:
    """Connector properties for a transform chain: (alias, class suffix, props) each."""
    props = {"transforms": ",".join(alias for alias, _, _ in transforms), **extra}
    for alias, kind, settings in transforms:
        props[f"transforms.{alias}.type"] = T + kind
        props.update({f"transforms.{alias}.{k}": v for k, v in settings.items()})
    return props


def _flat_batch(seed: int, envelope: bool, rows: int = 48) -> list[tuple]:
    """Flat order records: mostly one shape, plus nulls, tombstones, odd values and missing timestamps."""
    rnd = random.Random(seed)
    schema = {"type": "struct", "name": "shop.Order", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "qty", "type": "int32", "optional": True},
        {"field": "name", "type": "string", "optional": True},
        {"field": "code", "type": "string", "optional": True},
        {"field": "price", "type": "double", "optional": False},
        {"field": "ratio", "type": "float", "optional": True},
        {"field": "ok", "type": "boolean", "optional": True},
        {"field": "tags", "type": "array", "items": {"type": "string", "optional": True}, "optional": True},
        {"field": "blob", "type": "bytes", "optional": True}]}
    out = []
    for i in range(rows):
        def pick(usual: list[Any], odd: list[Any]) -> Any:
            return rnd.choice(odd if odd and rnd.random() < 0.2 else usual)
        doc = {"id": pick([i, -i, 127, -128], [2**40 + i, 128, -129, 40000]),
               "qty": pick([None, 0, 5, -100], [300, -70000]),
               "name": pick([None, "alice", "", "é€"], []),
               "code": pick(["12", "+7", "-0", "007"], ["1.5", "abc", "1e3", " 4", "99999999999", "true", "TRUE",
                                                         "0.25", "-.5", "1e400", "٣"]),
               "price": pick([0.0, 2.5, -7.9, 40000.5], [1e300, 1e10, 127.99, -128.5]),
               "ratio": pick([None, 0.5, -1.25, 3.0], []),
               "ok": pick([None, True, False], []),
               "tags": pick([None, [], ["a", "b"]], []),
               "blob": pick([None, base64.b64encode(b"\x00hi").decode()], [])}
        if not envelope:
            doc.pop("blob")
            for k in ("qty", "name", "code", "ratio", "ok", "tags"):
                if doc[k] is None:  # schemaless nulls change the shape: keep most rows in the dominant one
                    doc[k] = {"qty": 1, "name": "n", "code": "5", "ratio": 0.75, "ok": True, "tags": ["t"]}[k]
        roll = rnd.random()
        if roll < 0.1:
            value = rnd.choice([None, b"", b"null"])
        elif roll < 0.15 and not envelope:
            value = rnd.choice([b"42", b'"text"', b"[1,2]"])
        else:
            value = json.dumps({"schema": schema, "payload": doc} if envelope else doc).encode()
        key = rnd.choice([None, b"17", b"-3", b"300", b"x1", b"+5", b"9223372036854775808"])
        headers = rnd.choice([[], [{"key": "skip", "value": b"1"}]])
        out.append(raw_row(i, value, key=key, headers=headers, ts=rnd.choice([1_700_000_000_123, 0, -1, None])))
    return out


def _field_chain() -> dict[str, str]:
    return _chain(
        ("insert", "InsertField$Value", {"topic.field": "t!", "partition.field": "p", "offset.field": "o?",
                                        "timestamp.field": "ts", "static.field": "origin", "static.value": "eu"}),
        ("mask", "MaskField$Value", {"fields": "name,ok,tags,ratio,absent"}),
        ("cast", "Cast$Value", {"spec": "id:int16,qty:int8,code:int32,price:float32,ok:string,ratio:float64"}),
        ("key", "ValueToKey", {"fields": "id,name,o"}),
    )


@pytest.mark.parametrize("envelope", [False, True])
@pytest.mark.parametrize("seed", [21, 22])
def test_insert_mask_cast_value_to_key(spark, tmp_path, seed, envelope):
    counts = run_both(spark, tmp_path, _flat_batch(seed, envelope), **(ENVELOPE if envelope else SCHEMALESS),
                      **_field_chain())
    assert counts["good"] >= 8
    assert counts["fallback"] >= 3  # tombstones, overflowing casts, missing timestamps


@pytest.mark.parametrize("envelope", [False, True])
def test_casts_from_strings_and_replacement_masks(spark, tmp_path, envelope):
    counts = run_both(spark, tmp_path, _flat_batch(31, envelope, rows=60), **(ENVELOPE if envelope else SCHEMALESS),
                      **_chain(("mask", "MaskField$Value", {"fields": "name,qty,price,ratio", "replacement": "42"}),
                               ("k", "Cast$Key", {"spec": "int64"}),
                               ("cast", "Cast$Value", {"spec": "code:float64,name:boolean,price:int64,ok:int32"})))
    assert counts["good"] >= 5
    assert counts["fallback"] >= 3


def test_whole_value_casts_of_string_keys(spark, tmp_path):
    rows = [raw_row(i, b'{"a":1}', key=k) for i, k in enumerate(
        [None, b"12", b"-0", b"+5", b"1.5", b"abc", b" 7", b"2147483648", b"-2147483648", b"007", b"\xd9\xa3"])]
    for target in ("int32", "float32", "boolean", "string"):
        counts = run_both(spark, tmp_path, rows, **SCHEMALESS, **_chain(("k", "Cast$Key", {"spec": target})))
        assert counts["good"] >= 5, target


@pytest.mark.parametrize("envelope", [False, True])
def test_extract_hoist_and_schema_metadata(spark, tmp_path, envelope):
    meta = [("meta", "SetSchemaMetadata$Value", {"schema.name": "shop.Renamed", "schema.version": "3"})]
    counts = run_both(spark, tmp_path, _flat_batch(41, envelope), **(ENVELOPE if envelope else SCHEMALESS),
                      **_chain(*(meta if envelope else []),
                               ("extract", "ExtractField$Value", {"field": "tags"}),
                               ("hoist", "HoistField$Value", {"field": "wrapped"}),
                               ("hoistKey", "HoistField$Key", {"field": "k"}),
                               ("extractKey", "ExtractField$Key", {"field": "k"})))
    assert counts["good"] >= 30


def test_schema_metadata_rejects_schemaless_values(spark, tmp_path):
    counts = run_both(spark, tmp_path, _flat_batch(42, False), **SCHEMALESS,
                      **_chain(("meta", "SetSchemaMetadata$Value", {"schema.name": "x"})))
    assert 0 < counts["good"] == counts["expected"] < 48  # only null values pass; the rest fail per record


def test_extract_field_schemaless_nested_v2(spark, tmp_path):
    counts = run_both(spark, tmp_path, _schemaless_batch(7),
                      **{**SCHEMALESS, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "key.converter.schemas.enable": "false"},
                      **_chain(("extract", "ExtractField$Value", {"field": "nested.b", "field.syntax.version": "V2"})))
    assert counts["good"] >= 15


@pytest.mark.parametrize("envelope", [False, True])
def test_router_header_and_guarded_field_transforms(spark, tmp_path, envelope):
    counts = run_both(spark, tmp_path, _flat_batch(51, envelope), **(ENVELOPE if envelope else SCHEMALESS),
                      **_chain(("route", "TimestampRouter", {"topic.format": "${topic}_${timestamp}_x",
                                                             "timestamp.format": "yyyy-MM-dd'T'HH:mm:ss.SSS yy y"}),
                               ("header", "InsertHeader", {"header": "source", "value.literal": "42"}),
                               ("mask", "MaskField$Value", {"fields": "name", "predicate": "hasSkip"}),
                               ("insert", "InsertField$Value", {"static.field": "s", "static.value": "v",
                                                                "predicate": "tomb", "negate": "true"}),
                               ("cast", "Cast$Value", {"spec": "id:string", "predicate": "hasSkip"}),
                               predicates="hasSkip,tomb",
                               **{"predicates.hasSkip.type": T + "predicates.HasHeaderKey",
                                  "predicates.hasSkip.name": "skip",
                                  "predicates.tomb.type": T + "predicates.RecordIsTombstone"}))
    assert counts["good"] >= 5
    assert counts["fallback"] >= 3


# seed 62 holds an invalid base64 "blob": such a row falls back instead of failing the batch
@pytest.mark.parametrize("seed", [61, 62, 63])
def test_logical_bytes_and_nested_fields_with_schemas(spark, tmp_path, seed):
    """Dates, timestamps, bytes, maps, arrays and structs: masked where Kafka can, cast only where exact."""
    counts = run_both(spark, tmp_path, _envelope_batch(seed), **ENVELOPE, **_chain(
        ("mask", "MaskField$Value", {"fields": "day,at,attrs,tags,ok"}),
        ("cast", "Cast$Value", {"spec": "price:int32,name:boolean,ok:int8"}),
        ("extract", "ExtractField$Value", {"field": "inner.r", "field.syntax.version": "V2"})))
    assert counts["good"] >= 12
    assert counts["fallback"] >= 5


def test_masks_and_casts_kafka_refuses_fall_back(spark, tmp_path):
    counts = run_both(spark, tmp_path, _envelope_batch(61), **ENVELOPE, **_chain(
        ("maskBad", "MaskField$Value", {"fields": "blob,inner"}),  # Kafka cannot mask bytes or structs
        ("cast", "Cast$Value", {"spec": "day:int64,at:string,price:string"})))  # logical types, float to string
    assert counts["good"] == 0 < counts["expected"]


def test_key_side_field_transforms(spark, tmp_path):
    rnd = random.Random(71)
    rows = []
    for i in range(40):
        usual = json.dumps({"id": i, "region": rnd.choice(["eu", "us"]), "n": 1.5}).encode()
        key = rnd.choice([usual, usual, usual, None, b"null", json.dumps({"id": 2**40, "region": "eu", "n": 2.5}).encode(),
                          b"7"])
        rows.append(raw_row(i, json.dumps({"a": i}).encode(), key=key, ts=rnd.choice([5, 5, None])))
    counts = run_both(spark, tmp_path, rows, **{**SCHEMALESS, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                                                "key.converter.schemas.enable": "false"}, **_chain(
        ("insert", "InsertField$Key", {"partition.field": "p", "timestamp.field": "n"}),
        ("mask", "MaskField$Key", {"fields": "region", "replacement": "xx"}),
        ("cast", "Cast$Key", {"spec": "id:int32,p:string"}),
        ("hoist", "HoistField$Key", {"field": "inner"}),
        ("flat", "Flatten$Key", {"delimiter": "/"})))
    assert counts["good"] >= 10
    assert counts["fallback"] >= 5


def test_schema_metadata_and_hoist_on_string_keys(spark, tmp_path):
    rows = [raw_row(i, json.dumps({"a": i}).encode(), key=k) for i, k in enumerate([None, b"k1", b"", b"\xff", b"k2"])]
    counts = run_both(spark, tmp_path, rows, **SCHEMALESS, **_chain(
        ("meta", "SetSchemaMetadata$Key", {"schema.name": "shop.Key", "schema.version": "2"}),
        ("hoist", "HoistField$Key", {"field": "k"}),
        ("cast", "Cast$Value", {"spec": "a:string"})))
    assert counts["good"] == 4 and counts["fallback"] == 1  # only the invalid UTF-8 key falls back


@pytest.mark.parametrize("seed", [61, 63])
def test_flatten_with_schemas(spark, tmp_path, seed):
    counts = run_both(spark, tmp_path, _envelope_batch(seed), **ENVELOPE, **_chain(
        ("flat", "Flatten$Value", {"delimiter": "_"}), ("cast", "Cast$Value", {"spec": "inner_q:int8"})))
    assert counts["good"] >= 15


def test_flatten_schemaless(spark, tmp_path):
    counts = run_both(spark, tmp_path, _schemaless_batch(8),
                      **{**SCHEMALESS, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "key.converter.schemas.enable": "false"},
                      **_chain(("flat", "Flatten$Value", {}), ("mask", "MaskField$Value", {"fields": "nested.a"})))
    assert counts["good"] >= 15


TIMESTAMP_CONVERSIONS = [
    ("Date", "milliseconds", ""), ("Time", "milliseconds", ""), ("unix", "seconds", ""),
    ("unix", "microseconds", ""), ("string", "milliseconds", "yyyy-MM-dd HH:mm:ss.SSS"),
]


@pytest.mark.parametrize("target, precision, fmt", TIMESTAMP_CONVERSIONS)
def test_timestamp_converter_with_schemas(spark, tmp_path, target, precision, fmt):
    counts = run_both(spark, tmp_path, _envelope_batch(61), **ENVELOPE, **_chain(
        ("at", "TimestampConverter$Value", {"field": "at", "target.type": target, "unix.precision": precision,
                                            **({"format": fmt} if fmt else {})}),
        ("day", "TimestampConverter$Value", {"field": "day", "target.type": "Timestamp"})))
    assert counts["good"] >= 15


# to Time without a schema gives datetime.time values, which a schemaless frame cannot carry: all fall back
@pytest.mark.parametrize("target, precision, fmt", [c for c in TIMESTAMP_CONVERSIONS if c[0] != "Time"]
                         + [("Timestamp", "nanoseconds", "")])
def test_timestamp_converter_schemaless(spark, tmp_path, target, precision, fmt):
    rnd = random.Random(81)
    usual = [0, 1_700_000_000_123, 86_400_000 * 365]
    rows = [raw_row(i, json.dumps({"at": rnd.choice(usual * 2 + [-1, -86_400_001, 2**62, 253402300800000]),
                                "s": "x"}).encode(), key=rnd.choice([None, b"5", b"5", b"-1234567", b"x"]))
            for i in range(30)]
    counts = run_both(spark, tmp_path, rows, **SCHEMALESS, **_chain(
        ("at", "TimestampConverter$Value", {"field": "at", "target.type": target, "unix.precision": precision,
                                            **({"format": fmt} if fmt else {})}),
        ("s", "TimestampConverter$Value", {"field": "missing", "target.type": "unix"}),
        ("k", "Cast$Key", {"spec": "int64"}),
        ("kt", "TimestampConverter$Key", {"target.type": target, "unix.precision": precision,
                                          **({"format": fmt} if fmt else {})})))
    assert counts["good"] >= 5


def _text_proof_batch() -> list[tuple]:
    """Rows of one flat shape (with a nested object and an always-null field) whose keys need regex escapes,
    written in every way the text proof must tell apart from the shape's exact form."""
    good = ('{"id":%s,"a.b":"%s","x+y":%s,"ok":%s,"$n":null,"in":{"q":%s,"[r]":"s"}}')
    texts = [good % (i, f"v{i}", f"{i}.25", "true" if i % 2 else "false", i) for i in range(12)]
    texts += [
        good % ("-0", "z", "12.40", "true", "0"),          # -0 as an integer and trailing zeros: exact
        good % ("-123456789012345678", "", "0.1000000000000000055511151231257827", "false", "999999999999999999"),
        good % ("0", "é€ ,:{}[]", "1" * 300 + ".5", "true", "-5"),  # JSON's punctuation inside a string
        good % ("7", "z", "-0.0", "true", "0"),            # negative zero fraction: 0.0 per record
        good % ("7", "z", "-0.000", "true", "0"),
        good % ("7", "z", "-0.5", "true", "0"),            # a negative fraction below one: exact
        good % ("7", "z", "1e5", "true", "0"),             # an exponent: the general check
        good % ("7", "z", "1.5E-3", "true", "0"),
        good % ("1234567890123456789", "z", "1.5", "true", "0"),  # 19 digits: the general check
        good % ("7", "\\u00e9", "1.5", "true", "0"),      # an escape
        good % ("7", "tab\\there", "1.5", "true", "0"),
        good % ("7", "z", "1.5", "true", "01"),            # a leading zero: not JSON
        good % ("7", "z", "5.", "true", "0"),
        good % ("7", "z", ".5", "true", "0"),
        good % ("+7", "z", "1.5", "true", "0"),
        good % ("7", "z", "1.5", "TRUE", "0"),
        good % ("7", "z", "1", "true", "0"),               # an integer where the shape has a fraction
        good % ("7.0", "z", "1.5", "true", "0"),           # a fraction where it has an integer
        good % ("null", "z", "1.5", "true", "0"),
        good % ("7", "z", "1.5", "true", "0") + "\n",      # trailing whitespace
        '{"id":7, "a.b":"z","x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"}}',
        '{"a.b":"z","id":7,"x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"}}',
        '{"id":7,"id":8,"a.b":"z","x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"}}',
        '{"id":7,"a.b":"z","x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"},"extra":1}',
        '{"id":7,"a.b":"z","x+y":1.5,"ok":true,"$n":"now set","in":{"q":0,"[r]":"s"}}',
        '{"id":7,"a.b":"z","x+y":1.5,"ok":true,"$n":null,"in":{"[r]":"s","q":0}}',
        '{"id":7,"axb":"z","x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"}}',  # '.' is no wildcard
        '{"id":7,"a.b":"z","xxy":1.5,"ok":true,"$n":null,"in":{"q":0,"[r]":"s"}}',
        '{"id":7,"a.b":"z","x+y":1.5,"ok":true,"$n":null,"in":{"q":0,"r":"s"}}',
    ]
    rows = [text.encode() for text in texts]
    # bytes that are not UTF-8 inside a string the expression matches (Spark reads each malformed sequence as
    # U+FFFD, so only the UTF-8 check refuses them), and a real U+FFFD (valid UTF-8)
    for inside in (b"\xff", b"ab\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xef\xbf\xbd"):
        rows.append((good % ("7", "@", "1.5", "true", "0")).encode().replace(b"@", inside))
    return [raw_row(i, value) for i, value in enumerate(rows)]


def test_text_proof_of_schemaless_rows_matches_per_record(spark, tmp_path, capsys):
    props = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
             "value.converter.schemas.enable": "false"}
    plan = compile_plan(*plan_connector(tmp_path, **props))
    plan.apply(spark.createDataFrame(_text_proof_batch(), RAW_DDL)).good.explain(extended=True)
    physical = capsys.readouterr().out.split("== Physical Plan ==")[1]
    assert "RLIKE" in physical  # the batch takes the text proof, not to_json
    # proved rows are read from the text split at its quotes, not parsed (the general check parses variants)
    assert "split(" in physical and "from_json" not in physical
    counts = run_both(spark, tmp_path, _text_proof_batch(), **props)
    assert counts["good"] >= 16  # the twelve clean rows, -0 and 12.40, the two long ones, -0.5 (and what the
    # general check proves)
    assert counts["fallback"] >= 14  # incl. the four rows that are not UTF-8
