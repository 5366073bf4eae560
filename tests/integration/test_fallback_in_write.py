"""Rows the vectorized plan cannot prove, converted per record inside the one-pass write (classic sessions,
Spark 4.1 and later), into a real Delta table.

The batch is read from Kafka once and written in one commit: the rows Spark converted and the rows the
connector's converters took per record, side by side; tolerated failures are counted on the driver as if the
driver had converted them. A converted row the frame cannot hold (a field the others lack) makes the write
commit nothing and the batch take the checked way, which grows the table, without reporting twice a row the
write had already reported. With a dead letter queue, the write's tasks write the letters themselves, each
task when it has converted its last row: a task that failed has written none.
"""

from __future__ import annotations

import logging

from connect_spark.testing.kafka import read_topic
from tests.integration.frame_batches import (
    deliver_clean_then_mixed,
    deliver_frame,
    delta_offsets_history,
    open_delta_task,
    order_json,
    plan_frames,
    raw_row,
)


def _setup(spark, tmp_path, **props):
    frames = plan_frames(spark, tmp_path, in_write=True, **props)
    path = str(tmp_path / "orders")
    task = open_delta_task(path, "in-write", **{"auto.evolve": "true"})
    return frames, task, path


def _setup_with_dead_letters(spark, tmp_path, bootstrap_servers, topic_name):
    """A frame path and Delta task whose connector has a dead letter queue (with context headers), after a
    first clean batch (orders 0-19); returns the queue's topic too."""
    dlq = f"{topic_name}-dlq"
    frames, task, path = _setup(spark, tmp_path, bootstrap=bootstrap_servers, **{
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"})
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    return frames, task, path, dlq


def _table(spark, path):
    return {r["id"]: r for r in spark.read.format("delta").load(path).collect()}


def test_odd_rows_are_converted_by_the_write_itself_in_one_commit(spark, tmp_path, caplog):
    frames, task, path = _setup(spark, tmp_path)
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[3] = raw_row(23, order_json(23, "7"), key=b"k")  # valid, not provable by the plan: converted per record
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")  # fails per record: tolerated
    rows[5] = raw_row(25, order_json(25, '"12.5"'), key=b"k")  # a string among doubles: the batch's misfit
    metrics = frames.converter.errors.metrics
    failures_before, errors_before = metrics.record_failures, metrics.record_errors
    with caplog.at_level(logging.INFO, logger="connect_spark.runtime.processors.dataframe_batches"):
        _, jobs = deliver_frame(spark, frames, task, rows, 1)
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (2, 0, 3)
    assert not any("checked way" in r.getMessage() for r in caplog.records)
    # counted on the executors, added on the driver: two failed records, of which the one the converter
    # failed on ends in error (the misfit is the task's report, as on the driver)
    assert (metrics.record_failures, metrics.record_errors) == (failures_before + 2, errors_before + 1)
    assert metrics.last_error_timestamp > 0
    assert delta_offsets_history(spark, path) == [{"orders": {"0": 19, "1": 20}}, {"orders": {"0": 39, "1": 40}}]
    table = _table(spark, path)
    assert sorted(table) == [i for i in range(40) if i not in (24, 25)]
    assert table[23]["price"] == 7.0 and table[23]["kafka_offset"] == 23 and table[23]["user"] == "u-23"


def test_with_a_dead_letter_queue_the_write_sends_its_failed_rows_there_once_and_commits_the_rest(
        spark, tmp_path, bootstrap_servers, topic_name):
    frames, task, path, dlq = _setup_with_dead_letters(spark, tmp_path, bootstrap_servers, topic_name)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[3] = raw_row(23, order_json(23, "7"), key=b"k")  # valid, converted per record
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")  # fails per record: a dead letter
    rows[5] = raw_row(25, order_json(25, '"12.5"'), key=b"k")  # the batch's misfit: a dead letter
    deliver_frame(spark, frames, task, rows, 1)
    # read once, written in one commit: no checked way, nothing persisted
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (2, 0, 3)
    assert delta_offsets_history(spark, path) == [{"orders": {"0": 19, "1": 20}}, {"orders": {"0": 39, "1": 40}}]
    assert sorted(_table(spark, path)) == [i for i in range(40) if i not in (24, 25)]
    # the write's tasks wrote the dead letters, acknowledged before the table's commit: each once, as consumed,
    # with Kafka Connect's context headers
    letters = read_topic(bootstrap_servers, dlq)
    by_offset = {dict(r.headers)["__connect.errors.offset"]: r for r in letters}
    assert len(letters) == 2 and sorted(by_offset) == [b"24", b"25"]
    assert by_offset[b"24"].value == order_json(24, "NaN") and by_offset[b"24"].key == b"k"
    assert dict(by_offset[b"24"].headers)["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert dict(by_offset[b"25"].headers)["__connect.errors.topic"] == b"orders"


def test_the_write_bounds_its_arrow_batches_by_record_count_alone_and_restores_the_setting(spark, tmp_path):
    from connect_spark.runtime.processors.fallback_in_write import ARROW_BYTES_KEY

    frames, task, path = _setup(spark, tmp_path)
    before = spark.conf.get(ARROW_BYTES_KEY, None)
    seen = []
    put = task.put_dataframe_batch

    def observed(frame, *args):
        seen.append(frame.sparkSession.conf.get(ARROW_BYTES_KEY, None))
        return put(frame, *args)

    task.put_dataframe_batch = observed
    deliver_clean_then_mixed(spark, frames, task)
    assert frames.fallback_rows == 2
    # the clean batch and the guarded attempt at the mixed one run with the session's setting, the write that
    # converts in the write without Spark's byte bound
    assert seen[-1] == str(2**31 - 1) and set(seen[:-1]) == {before}
    assert spark.conf.get(ARROW_BYTES_KEY, None) == before
    assert sorted(_table(spark, path)) == [i for i in range(40) if i != 24]


def test_a_row_the_frame_cannot_hold_sends_the_batch_the_checked_way_without_reporting_twice(spark, tmp_path):
    frames, task, path = _setup(spark, tmp_path)
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")  # fails per record: tolerated, reported once
    rows[9] = raw_row(29, b'{"id":29,"user":"u-29","price":29.5,"tags":[1,2],"coupon":"SAVE"}', key=b"k")
    metrics = frames.converter.errors.metrics
    errors_before = metrics.record_errors
    deliver_frame(spark, frames, task, rows, 1)
    assert frames.checked_batches == 1  # the one-pass write committed nothing
    assert metrics.record_errors == errors_before + 1
    assert len(delta_offsets_history(spark, path)) == 2
    table = _table(spark, path)
    assert sorted(table) == [i for i in range(40) if i != 24]
    assert table[29]["coupon"] == "SAVE" and table[28]["coupon"] is None


def test_an_abandoned_write_leaves_every_dead_letter_in_the_queue_and_every_other_row_in_the_table(
        spark, tmp_path, bootstrap_servers, topic_name):
    frames, task, path, dlq = _setup_with_dead_letters(spark, tmp_path, bootstrap_servers, topic_name)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")
    rows[9] = raw_row(29, b'{"id":29,"user":"u-29","price":29.5,"tags":[1,2],"coupon":"SAVE"}', key=b"k")
    deliver_frame(spark, frames, task, rows, 1)
    assert frames.checked_batches == 1  # the one-pass write committed nothing
    table = _table(spark, path)
    assert sorted(table) == [i for i in range(40) if i != 24] and table[29]["coupon"] == "SAVE"
    # a task writes its dead letters when it has converted its last row: a task that failed wrote none, a
    # completed one reported them and the checked way does not write them again; only a task cancelled after
    # writing them and before it completed leaves them to be written twice (at least once, as Kafka Connect)
    offsets = [dict(r.headers)["__connect.errors.offset"] for r in read_topic(bootstrap_servers, dlq)]
    assert set(offsets) == {b"24"} and 1 <= len(offsets) <= 2


def test_a_task_that_fails_after_meeting_a_dead_letter_has_written_none(spark, tmp_path, bootstrap_servers,
                                                                        topic_name):
    frames, task, path, dlq = _setup_with_dead_letters(spark, tmp_path, bootstrap_servers, topic_name)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[1] = raw_row(21, order_json(21, "NaN"), key=b"k")  # a dead letter in the task's first Arrow batch
    rows[17] = raw_row(37, b'{"id":37,"user":"u-37","price":37.5,"tags":[1,2],"coupon":"SAVE"}', key=b"k")
    # one write task whose Arrow batches hold 4 rows: the dead letter is met (and held) before the row the
    # frame cannot hold fails the task
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:
        deliver_frame(spark, frames, task, rows, 1, spark_partitions=1)
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    assert frames.checked_batches == 1
    assert sorted(_table(spark, path)) == [i for i in range(40) if i != 21]
    offsets = [dict(r.headers)["__connect.errors.offset"] for r in read_topic(bootstrap_servers, dlq)]
    assert offsets == [b"21"]  # written once, by the checked way


def test_under_tolerance_none_a_failing_row_fails_the_batch_with_the_connectors_error(spark, tmp_path):
    import pytest

    from connect_spark.api.errors import ConnectException

    frames, task, path = _setup(spark, tmp_path, **{"errors.tolerance": "none"})
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")
    with pytest.raises(ConnectException) as failure:
        deliver_frame(spark, frames, task, rows, 1)
    assert "orders[0]@24" in str(failure.value)
    assert len(delta_offsets_history(spark, path)) == 1
