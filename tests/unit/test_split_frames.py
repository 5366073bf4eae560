"""Executor mode's split frames without Spark: the good rows' converted columns as a record frame, the
generation result's fallback count, and which Arrow tasks take records."""

from __future__ import annotations

import datetime

import pyarrow as pa

from connect_spark.api.bulk import RECORD_FRAME_COLUMNS, ArrowSinkTask, takes_records
from connect_spark.connectors.jdbc.task import JdbcSinkTask
from connect_spark.runtime.tasks.generation import GenerationResult
from connect_spark.runtime.processors.executor_vectorized import good_frame
from connect_spark.testing.noop import NoopArrowSinkTask

VALUE = pa.struct([("id", pa.int64()), ("name", pa.string())])


def _split_batch() -> pa.RecordBatch:
    """Rows as ``PlanOutput.split`` gives them: raw coordinates, converted ``frame_*`` columns, ``row_kind``."""
    return pa.RecordBatch.from_pydict({
        "topic": ["orders"] * 3, "partition": pa.array([1, 1, 1], pa.int32()), "offset": [7, 8, 9],
        "timestamp_ms": [1_700_000_000_000] * 3, "timestamp_type": pa.array([0] * 3, pa.int32()),
        "key": pa.array([None, None, b"raw"], pa.binary()), "value": pa.array([None, None, b"{"], pa.binary()),
        "frame_topic": ["routed"] * 3, "frame_partition": pa.array([1, 1, 1], pa.int32()),
        "frame_timestamp": pa.array([datetime.datetime(2023, 11, 14, 22, 13, 20)] * 3, pa.timestamp("us", "UTC")),
        "frame_timestamp_type": pa.array([0] * 3, pa.int32()), "frame_key": pa.array([None] * 3, pa.string()),
        "frame_value": pa.array([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, None], VALUE),
        "row_kind": pa.array([1, 1, 0], pa.int32())})


def test_good_frame_has_the_record_frame_columns_and_original_coordinates():
    frame = good_frame(_split_batch().slice(0, 2))
    assert frame.column_names == list(RECORD_FRAME_COLUMNS)
    assert frame.column("topic").to_pylist() == ["routed", "routed"]
    assert frame.column("original_topic").to_pylist() == ["orders", "orders"]
    assert frame.column("original_offset").to_pylist() == [7, 8]
    assert frame.column("value").to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert frame.column("headers").null_count == 2  # headers not shipped: none


def test_generation_result_carries_the_fallback_count():
    result = GenerationResult(3, records_read=10, records_fallback=4)
    assert GenerationResult.from_json(result.to_json()).records_fallback == 4


def test_arrow_tasks_that_implement_put_take_records():
    assert takes_records(JdbcSinkTask)
    assert not takes_records(NoopArrowSinkTask)
    assert not takes_records(ArrowSinkTask)
