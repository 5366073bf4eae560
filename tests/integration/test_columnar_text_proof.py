"""Schemaless JSON's text proof (a regular expression, the values read from the text split at a delimiter):
the rows it refuses fall back or take the general check, and every row converts as per record. Real Spark.

The plan splits a proved text at colons when the sample's strings hold none (fewer pieces than at quotes), and
proves a row's bytes valid UTF-8 without ``is_valid_utf8`` (Java reads malformed UTF-8 as U+FFFD, which a
proved text can hold only in a string's piece). These cases aim at what those two shortcuts could let
through, beside the texts Spark's ``from_json`` would read but the per-record converter would not.
"""

from __future__ import annotations

from connect_spark.columnar.plan import compile_plan
from connect_spark.streaming.raw_batch import RAW_DDL
from tests.integration.frame_batches import SCHEMALESS, plan_connector, raw_row
from tests.integration.test_columnar_equivalence import run_both

DOMINANT = '{"id":%d,"user":"u-%d","price":%s,"ok":true,"note":"%s"}'

#: (text, the reason it must not pass the text proof as it stands)
ODD = [
    (b'{"id":1,"user":"u","price":1.5,"ok":true,"note":"x\xffy"}', "malformed UTF-8 in a string"),
    (b'{"id":2,"user":"u","price":1.5,"ok":true,"note":"x\xc3"}', "a truncated sequence"),
    (b'{"id":3,"user":"u","price":1.5,"ok":true,"note":"\xc0\xaf"}', "an overlong encoding"),
    (b'{"id":4,"user":"u","price":1.5,"ok":true,"note":"\xed\xa0\x80"}', "an encoded surrogate"),
    (b'{"id":5,"user":"u","price":1.5,"ok":true,"note":"\xf4\x90\x80\x80"}', "beyond U+10FFFF"),
    (b'{"id":6,"user":"u\xff","price":1.5,"ok":true,"note":"n:x"}', "malformed UTF-8 and a colon"),
    (b'{"id":7\xff,"user":"u","price":1.5,"ok":true,"note":"n"}', "malformed UTF-8 outside strings"),
    (b'{"id":8,"user":7,"price":1.5,"ok":true,"note":"n"}', "a number in a string field"),
    (b'{"id":9,"user":"u","price":1e400,"ok":true,"note":"n"}', "1e400"),
    (b'{"id":10,"id":11,"user":"u","price":1.5,"ok":true,"note":"n"}', "duplicate keys"),
    (b'{"id":12,"user":"u","price":1.5,"ok":true,"note":"n"} ', "trailing space"),
    (b'{"id":13,"user":"u","price":1.5,"ok":true,"note":"n\\u003a"}', "an escape"),
    (b'{"id":014,"user":"u","price":1.5,"ok":true,"note":"n"}', "a leading zero"),
    (b'{"id":15,"user":"u","price":NaN,"ok":true,"note":"n"}', "NaN"),
    (b'{"id":16,"user":"u","price":"1.5","ok":true,"note":"n"}', "a string in a fraction field"),
    (b'{"id":17,"user":"u","price":5,"ok":true,"note":"n"}', "an integer in a fraction field"),
    (b'{"id":18,"user":"u","price":1.5,"ok":true,"note":"n","x":1}', "an extra key"),
    (b'{"id":19,"user":"u","price":1.5,"ok":true}', "a missing key"),
]
#: rows the text proof refuses but which convert per record: the general check takes them or they fall back
GENERAL = [
    (b'{"id":30,"user":"u","price":1.5,"ok":true,"note":"a:b"}', "a colon in a string (split at colons)"),
    (b'{"id":31,"user":"u","price":1.5,"ok":true,"note":"\xef\xbf\xbd"}', "a real U+FFFD"),
    (b'{"id":32,"user":"http://x:8080","price":1.5,"ok":true,"note":"::"}', "colons in two strings"),
    (b'{"id":33,"user":"u","price":1.5,"ok":true,"note":"n"} x', "text after the value (Kafka reads the first)"),
]


def _rows(notes: list[str]) -> list[tuple]:
    prices = ["0.5", "12.25", "3.0", "1.75", "100.50"]
    return [raw_row(i + 1000, (DOMINANT % (i, i, prices[i % 5], notes[i % len(notes)])).encode(), key=b"k")
            for i in range(40)]


def _fallback_offsets(spark, tmp_path, rows: list[tuple]) -> set[int]:
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    plan = compile_plan(connector, worker)
    out = plan.apply(spark.createDataFrame(rows, RAW_DDL))
    return {r["offset"] for r in out.fallback.select("offset").collect()}


def test_rows_the_text_proof_cannot_vouch_for_convert_as_per_record(spark, tmp_path):
    rows = _rows(["n", "note"])
    odd = [raw_row(i, text, key=b"k") for i, (text, _) in enumerate(ODD)]
    general = [raw_row(100 + i, text, key=b"k") for i, (text, _) in enumerate(GENERAL)]
    counts = run_both(spark, tmp_path, rows + odd + general, **SCHEMALESS)
    assert counts["good"] >= len(rows) + len(GENERAL)
    fallback = _fallback_offsets(spark, tmp_path / "plan", rows + odd + general)  # split at colons
    for i, (_, reason) in enumerate(ODD):
        if reason not in ("an integer in a fraction field", "a missing key", "duplicate keys", "trailing space",
                          "an escape", "1e400"):
            assert i in fallback, reason  # (those can pass the general check: other shapes or texts, read exactly;
            # 1e400 is Infinity both ways)
    assert not fallback & {100 + i for i in range(len(GENERAL))}


def test_a_sample_with_colons_in_strings_splits_at_quotes(spark, tmp_path):
    rows = _rows(["2026-01-01T10:00:00Z", "n"])
    odd = [raw_row(i, text, key=b"k") for i, (text, _) in enumerate(ODD)]
    counts = run_both(spark, tmp_path, rows + odd, **SCHEMALESS)
    assert counts["good"] >= len(rows)
    fallback = _fallback_offsets(spark, tmp_path / "plan", rows + odd)  # split at quotes
    assert not fallback & {r[2] for r in rows}
    assert {0, 1, 2, 3, 4, 5, 6} <= fallback  # malformed UTF-8, wherever it is
