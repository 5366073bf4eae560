"""A DataFrame task's plan proves short integers where a schemaless JSON shape has a fraction, and reads a
negative zero as 0.0: its frame then holds what the per-record converter gives once cast to the frame's types,
which is what the runtime does with every row it converts per record.

Real Spark, raw batches built in memory; the expected frame is the per-record conversion of the same rows
(:class:`~connect_spark.runtime.conversion.records.RecordConverter`), fitted to the plan's frame types.
"""

from __future__ import annotations

import pyarrow as pa

from connect_spark.columnar.fit_to_frame import arrow_fitted
from connect_spark.columnar.records import fit_records_to_frame
from tests.integration.frame_batches import plan_and_per_record, raw_row

#: amounts written the ways producers write a double; the first ten rows are plain fractions the shape comes from
AMOUNTS = [f"{i}.25" for i in range(10)] + [
    "7", "-3", "0", "-0", "999999999999999",  # integers of up to 15 digits: exact as doubles
    "-0.0", "-0.000",                         # negative zero: 0.0 per record
    "1234567890123456",                       # 16 digits: not every one is an exact double
    '"12.5"',                                 # a string: another type
]
SIXTEEN_DIGITS, STRING = 17, 18


def _rows() -> list[tuple]:
    return [raw_row(i, ('{"id":%d,"user":"u-%d","amount":%s,"ok":true}' % (i, i, amount)).encode())
            for i, amount in enumerate(AMOUNTS)]


def _comparable(values: list) -> list:
    """Values with floats by their repr, so -0.0 and 0.0 differ."""
    def one(v):
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        return repr(v) if isinstance(v, float) else v
    return [one(v) for v in values]


def _split(spark, tmp_path, frame_task: bool, **props: str) -> tuple[pa.Table, list[int], list]:
    return plan_and_per_record(spark, tmp_path, _rows(), frame_task, **props)


def test_a_frame_task_proves_short_integers_and_negative_zeros_as_the_per_record_rows_cast_to_the_frame(
        spark, tmp_path):
    good, fallback, records = _split(spark, tmp_path, frame_task=True)
    assert fallback == [SIXTEEN_DIGITS, STRING]
    assert good.schema.field("value").type.field("amount").type == pa.float64()
    proved = [r for r in records if r.kafka_offset not in fallback]
    assert [type(r.value["amount"]) for r in proved[10:15]] == [int] * 5  # per record, these are INT64 values
    per_record = arrow_fitted(fit_records_to_frame(proved).table.select(["offset", "value"]), good.schema)
    by_offset = sorted(zip(good.column("offset").to_pylist(), _comparable(good.column("value").to_pylist())))
    assert by_offset == sorted(zip(per_record.column("offset").to_pylist(),
                                   _comparable(per_record.column("value").to_pylist())))
    amounts = dict(zip(good.column("offset").to_pylist(), [v["amount"] for v in good.column("value").to_pylist()]))
    assert [repr(amounts[i]) for i in range(10, 17)] == ["7.0", "-3.0", "0.0", "0.0", "999999999999999.0", "0.0",
                                                         "0.0"]


def test_integers_among_fractions_take_the_per_record_path_for_record_tasks_and_under_transforms(spark, tmp_path):
    integers = list(range(10, 15))
    _, fallback, _ = _split(spark, tmp_path, frame_task=False)
    assert fallback == [*integers, SIXTEEN_DIGITS, STRING]  # records built from the frame would carry 7.0, not 7
    _, fallback, _ = _split(spark, tmp_path, frame_task=True, **{
        "transforms": "tag", "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.static.field": "source", "transforms.tag.static.value": "web"})
    assert fallback == [*integers, SIXTEEN_DIGITS, STRING]  # a transform could tell 7 from 7.0
