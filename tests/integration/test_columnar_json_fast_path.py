"""Schemaless JSON's cheap exactness check (from_json → to_json) and shapes learned across batches.

The plan proves most rows exact by re-serializing them; these cases aim at the texts where a
re-serialization could match while the per-record converter reads something else (``-0.0``, ``NaN``,
single quotes, integers where fractions are expected, trailing zeros, other key orders, escapes),
and at a plan reusing a shape from an earlier batch. Real Spark.
"""

from __future__ import annotations

import json

from connect_spark.columnar.plan import batch_offset_ranges, compile_plan
from connect_spark.runtime.processors.dataframe_batches import FrameBatches
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.streaming.raw_batch import RAW_DDL
from tests.integration.frame_batches import SCHEMALESS, plan_connector, raw_row
from tests.integration.test_columnar_equivalence import run_both

DOMINANT = '{"id":%d,"user":"u-%d","price":%s,"ok":true,"tags":[1,2],"inner":{"b":"x","a":%d}}'

EDGE_TEXTS = [
    b'{"id":1,"user":"u","price":12.40,"ok":true,"tags":[1],"inner":{"b":"x","a":1}}',  # trailing zero
    b'{"id":2,"user":"u","price":5.000,"ok":false,"tags":[],"inner":{"b":"y","a":2}}',
    b'{"id":3,"user":"u","price":5,"ok":true,"tags":[1],"inner":{"b":"x","a":3}}',  # an int where a fraction was
    b'{"id":4,"user":"u","price":-0.0,"ok":true,"tags":[1],"inner":{"b":"x","a":4}}',  # -0.0 reads as 0.0
    b'{"id":5,"user":"u","price":-0.00,"ok":true,"tags":[1],"inner":{"b":"x","a":5}}',
    b'{"id":6,"user":"u","price":NaN,"ok":true,"tags":[1],"inner":{"b":"x","a":6}}',
    b'{"id":7,"user":\'u\',"price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":7}}',  # single quotes
    b'{"user":"u","id":8,"price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":8}}',  # other key order
    b'{"id": 9, "user": "u", "price": 1.5, "ok": true, "tags": [1], "inner": {"b": "x", "a": 9}}',  # spaced
    b'{"id":10,"user":"\\u00e9\\"q\\"","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":10}}',  # escapes
    b'{"id":11,"user":"u","price":1.5E3,"ok":true,"tags":[1],"inner":{"b":"x","a":11}}',  # exponent
    b'{"id":12,"user":"u","price":1e-7,"ok":true,"tags":[1],"inner":{"b":"x","a":12}}',
    b'{"id":13,"id":14,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":13}}',  # duplicate
    b'{"id":15,"user":"u","price":1.5,"ok":"true","tags":[1],"inner":{"b":"x","a":15}}',  # a string for a boolean
    b'{"id":16,"user":7,"price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":16}}',  # a number for a string
    b'{"id":17.0,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":17}}',  # a fraction for an int
    b'{"id":18,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"a":18,"b":"x"}}',  # nested key order
    b'{"id":19,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":19},"extra":1}',
    b'{"id":20,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":20}} ',  # trailing space
    b'{"id":21,"user":"u","price":0.1000000000000000055511151231257827,"ok":true,"tags":[1],"inner":{"b":"x","a":1}}',
    b'{"id":22,"user":"a.10","price":2.50,"ok":true,"tags":[1],"inner":{"b":"y.500","a":1}}',  # zeros in strings
]


def _dominant_rows(first: int, count: int) -> list[tuple]:
    prices = ["0.5", "12.25", "3.0", "1.75", "100.5"]
    return [raw_row(i, (DOMINANT % (i, i, prices[i % len(prices)], i)).encode(), key=b"k")
            for i in range(first, first + count)]


def test_fast_check_edge_texts_match_per_record(spark, tmp_path):
    rows = _dominant_rows(0, 30)
    rows += [raw_row(100 + i, text, key=b"k") for i, text in enumerate(EDGE_TEXTS)]
    counts = run_both(spark, tmp_path, rows, **SCHEMALESS)
    assert counts["good"] >= 30  # the dominant shape and the texts it proves exact
    assert counts["fallback"] >= 8  # NaN, single quotes, duplicates, wrong kinds, extra keys, ...


def _deliver(frames: FrameBatches, raw, atomic: bool = False):
    """Hand ``raw`` over as the runner does; the frame as Arrow (read while the batch's cache lives) and
    the batch's offset ranges."""
    ranges = batch_offset_ranges(raw)
    got = []
    frames.deliver(raw, ranges, lambda frame: got.append(frame.toArrow()), atomic)
    return (got[0] if got else None), ranges


def _ids(table) -> list[int]:
    return sorted(v["id"] for v in table.column("value").to_pylist())


def test_learned_shape_is_reused_then_relearned(spark, tmp_path):
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    plan = compile_plan(connector, worker)
    frames = FrameBatches(spark, plan, build_task_plugins(connector, worker, 0).converter)

    table, _ = _deliver(frames, spark.createDataFrame(_dominant_rows(0, 20), RAW_DDL))
    assert not plan.reused_samples
    assert [v["id"] for v in table.column("value").to_pylist()] == list(range(20))

    table, _ = _deliver(frames, spark.createDataFrame(_dominant_rows(20, 20), RAW_DDL))
    assert plan.reused_samples  # no sample: the shape of the first batch still fits
    assert [v["id"] for v in table.column("value").to_pylist()] == list(range(20, 40))

    other_shape = [raw_row(40 + i, json.dumps({"order": i, "amount": i + 0.5}).encode(), key=b"k") for i in range(20)]
    table, ranges = _deliver(frames, spark.createDataFrame(other_shape, RAW_DDL))
    assert not plan.reused_samples  # every row missed the old shape: learnt again from this batch
    values = table.column("value").to_pylist()
    assert [v["order"] for v in values] == list(range(20))
    assert [v["amount"] for v in values] == [i + 0.5 for i in range(20)]
    # offsets 40..59, even ones in partition 0 and odd ones in partition 1
    assert {(tp.topic, tp.partition): end for tp, (_, end) in ranges.items()} == {("orders", 0): 59, ("orders", 1): 60}


def test_one_pass_for_clean_batches_and_survivors_beside_the_good_rows_otherwise(spark, tmp_path):
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    frames = FrameBatches(spark, compile_plan(connector, worker), build_task_plugins(connector, worker, 0).converter)

    table, _ = _deliver(frames, spark.createDataFrame(_dominant_rows(0, 40), RAW_DDL), atomic=True)
    assert _ids(table) == list(range(40))
    assert (frames.one_pass_batches, frames.checked_batches) == (1, 0)

    # an integer where the shape has a fraction needs the per-record path and survives (widened to the
    # column's double); NaN fails it (errors.tolerance=all)
    rows = _dominant_rows(40, 40)
    rows[5] = raw_row(45, (DOMINANT % (45, 45, "7", 45)).encode(), key=b"k")
    rows[9] = raw_row(49, (DOMINANT % (49, 49, "NaN", 49)).encode(), key=b"k")
    table, _ = _deliver(frames, spark.createDataFrame(rows, RAW_DDL), atomic=True)
    assert _ids(table) == [i for i in range(40, 80) if i != 49]
    survivor = next(v for v in table.column("value").to_pylist() if v["id"] == 45)
    assert survivor["price"] == 7.0 and survivor["inner"] == {"b": "x", "a": 45}
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (1, 1, 2)
    assert not frames.one_pass_next  # rows fell back: the next batch is checked first

    table, _ = _deliver(frames, spark.createDataFrame(_dominant_rows(80, 10), RAW_DDL), atomic=True)
    assert _ids(table) == list(range(80, 90))
    assert (frames.one_pass_batches, frames.checked_batches) == (1, 2) and frames.one_pass_next
    table, _ = _deliver(frames, spark.createDataFrame(_dominant_rows(90, 10), RAW_DDL), atomic=True)
    assert (frames.one_pass_batches, frames.checked_batches) == (2, 2)


def test_a_survivor_that_does_not_fit_the_good_rows_rebuilds_the_batch_from_records(spark, tmp_path):
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    frames = FrameBatches(spark, compile_plan(connector, worker), build_task_plugins(connector, worker, 0).converter)
    rows = _dominant_rows(0, 20)
    rows.append(raw_row(20, b'{"id":20,"user":"u","price":1.5,"ok":true,"tags":[1],"inner":{"b":"x","a":1},"extra":1}',
                     key=b"k"))
    table, _ = _deliver(frames, spark.createDataFrame(rows, RAW_DDL), atomic=True)
    assert _ids(table) == list(range(21))
