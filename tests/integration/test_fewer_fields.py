"""A DataFrame task's plan converts schemaless JSON objects that leave out some of the shape's fields, or hold
nulls in them, in Spark: its frame then holds what the per-record converter gives once fitted to the frame
(a missing key is a null column there), which is what the runtime does with every row it converts per record.

Real Spark, raw batches built in memory; the expected frame is the per-record conversion of the same rows
(:class:`~connect_spark.runtime.conversion.records.RecordConverter`), fitted to the plan's frame types.
"""

from __future__ import annotations

import pyarrow as pa

from connect_spark.columnar.fit_to_frame import arrow_fitted
from connect_spark.columnar.records import fit_records_to_frame
from tests.integration.frame_batches import plan_and_per_record, raw_row

#: the first ten rows are the shape's; the next ones leave fields out or null them; the last ones are other shapes
VALUES = [('{"id":%d,"user":{"name":"u-%d","tier":2},"amount":%d.25,"note":"n"}' % (i, i, i)) for i in range(10)] + [
    '{"id":10,"user":{"name":"u-10","tier":2},"amount":10.25}',       # the optional note left out
    '{"id":11,"user":{"name":"u-11","tier":2},"amount":11.25,"note":null}',  # ... or null
    '{"id":12,"note":"n"}',                                                  # two fields left out
    '{"user":{"tier":null},"amount":null,"id":13}',            # another key order, nulls, a nested field left out
    '{}',
    '{"id":15,"user":{"name":"u-15","tier":2},"amount":15.25,"note":"n","coupon":"x"}',  # a field the shape lacks
    '{"id":16,"user":{"name":"u-16","tier":2,"vip":true}}',             # ... also in a nested object
    '{"id":17,"user":{"name":"u-17"},"amount":"12.5"}',                 # a string where the shape has a fraction
    '{"id":18,"user":"u-18"}',                                          # a string where it has an object
]
FEWER = list(range(10, 15))
OTHER_SHAPES = [15, 16, 17, 18]


def _rows() -> list[tuple]:
    return [raw_row(i, value.encode()) for i, value in enumerate(VALUES)]


def _split(spark, tmp_path, frame_task: bool, **props: str) -> tuple[pa.Table, list[int], list]:
    return plan_and_per_record(spark, tmp_path, _rows(), frame_task, **props)


def test_a_frame_task_converts_objects_with_fields_left_out_or_null_as_the_per_record_rows_fitted_to_the_frame(
        spark, tmp_path):
    good, fallback, records = _split(spark, tmp_path, frame_task=True)
    assert fallback == OTHER_SHAPES
    converted = [r for r in records if r.kafka_offset in FEWER]
    assert "note" not in converted[0].value and converted[1].value["note"] is None  # per record: missing, null
    per_record = arrow_fitted(fit_records_to_frame([r for r in records if r.kafka_offset not in fallback])
                              .table.select(["offset", "value"]), good.schema)
    by_offset = dict(zip(good.column("offset").to_pylist(), good.column("value").to_pylist()))
    assert by_offset == dict(zip(per_record.column("offset").to_pylist(), per_record.column("value").to_pylist()))
    assert [by_offset[i] for i in FEWER] == [
        {"id": 10, "user": {"name": "u-10", "tier": 2}, "amount": 10.25, "note": None},
        {"id": 11, "user": {"name": "u-11", "tier": 2}, "amount": 11.25, "note": None},
        {"id": 12, "user": None, "amount": None, "note": "n"},
        {"id": 13, "user": {"name": None, "tier": None}, "amount": None, "note": None},
        {"id": None, "user": None, "amount": None, "note": None},
    ]


def test_fields_left_out_take_the_per_record_path_for_record_tasks_and_under_transforms(spark, tmp_path):
    _, fallback, _ = _split(spark, tmp_path, frame_task=False)
    assert fallback == [10, 11, 12, 13, 14, *OTHER_SHAPES]  # a record built from the frame would hold note=None
    _, fallback, _ = _split(spark, tmp_path, frame_task=True, **{
        "transforms": "tag", "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.static.field": "source", "transforms.tag.static.value": "web"})
    assert fallback == [10, 11, 12, 13, 14, *OTHER_SHAPES]  # a transform could tell a missing key from a null
