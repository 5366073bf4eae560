"""The frame path's one Spark pass per micro-batch, into a real Delta table.

Raw batches (the Kafka source's columns) go through :class:`FrameBatches` into the Delta sink task as
the runner hands them over: a clean batch is read, converted and written by one Spark job with the
offsets given up front; a batch with rows that need the per-record path commits nothing on its first
try and is written once, those rows converted per record beside the others.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from py4j.clientserver import ClientServerConnection

from connect_spark.columnar.plan import CACHE_COMPRESSION, batch_offset_ranges
from connect_spark.streaming.raw_batch import RAW_DDL
from tests.integration.frame_batches import (
    deliver_clean_then_mixed,
    deliver_frame,
    delta_offsets_history,
    open_delta_task,
    order_json,
    plain_delta_write_jobs,
    plan_frames,
    raw_row,
)


def _setup(spark, tmp_path):
    frames = plan_frames(spark, tmp_path)
    path = str(tmp_path / "orders")
    task = open_delta_task(path, "one-pass")
    return frames, task, path


def test_a_clean_batch_is_one_spark_job_and_stores_the_given_offsets(spark, tmp_path):
    frames, task, path = _setup(spark, tmp_path)
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)  # learns the shape
    # a range may end past its last row (a record a transform dropped, a transaction marker): it is stored as given
    ranges, jobs = deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)], 1,
                            extra_end=3)
    assert len(jobs) == plain_delta_write_jobs(spark, tmp_path), f"more than the write's own jobs: {jobs}"
    assert (frames.one_pass_batches, frames.checked_batches) == (2, 0)
    assert delta_offsets_history(spark, path)[-1] == {"orders": {"0": 42, "1": 43}}  # ends 39 and 40, + 3
    got = sorted(r["id"] for r in spark.read.format("delta").load(path).collect())
    assert got == list(range(40))


def test_a_clean_batch_costs_few_round_trips_to_the_jvm(spark, tmp_path, monkeypatch):
    """Every PySpark Column or DataFrame call is a round trip to the JVM (several, with PySpark's DataFrame
    debugging on): a batch must not build its expressions again. A clean batch took ~2,200 before its write
    with debugging on and the expressions rebuilt per batch; ~190 with both fixed, the write included."""
    frames, task, path = _setup(spark, tmp_path)
    for batch_id in range(2):  # learns the shape, creates the table
        deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(batch_id * 20, batch_id * 20 + 20)],
                 batch_id)
    raw = spark.createDataFrame([raw_row(i, order_json(i), key=b"k") for i in range(40, 60)], RAW_DDL)
    ranges = batch_offset_ranges(raw)
    calls = []
    send = ClientServerConnection.send_command

    def counted(connection, command):
        calls.append(command[:1])
        return send(connection, command)

    monkeypatch.setattr(ClientServerConnection, "send_command", counted)
    frames.deliver(raw, ranges, lambda frame: task.put_dataframe_batch(frame, 2, ranges), task.writes_atomically())
    monkeypatch.undo()
    assert frames.one_pass_batches == 3
    assert len(calls) < 300, f"{len(calls)} round trips to the JVM for one clean batch"
    assert sorted(r["id"] for r in spark.read.format("delta").load(path).collect()) == list(range(60))


def test_rows_for_the_per_record_path_are_written_beside_the_others_in_one_commit(spark, tmp_path):
    frames, task, path = _setup(spark, tmp_path)
    deliver_clean_then_mixed(spark, frames, task)  # order 23 survives the per-record path, 24 fails it
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (1, 1, 2)
    history = delta_offsets_history(spark, path)
    assert len(history) == 2, "the abandoned one-pass write must not commit"
    assert history[-1] == {"orders": {"0": 39, "1": 40}}
    table = {r["id"]: r for r in spark.read.format("delta").load(path).collect()}
    assert sorted(table) == [i for i in range(40) if i != 24]
    assert table[23]["price"] == 7.0 and table[23]["kafka_offset"] == 23


def test_rows_that_leave_out_a_field_are_written_in_the_one_pass_with_it_null(spark, tmp_path):
    frames = plan_frames(spark, tmp_path, frame_task=True)  # as the runtime's DataFrame processor compiles it
    path = str(tmp_path / "orders")
    task = open_delta_task(path, "fewer-fields")
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[3] = raw_row(23, b'{"id":23,"price":23.5,"tags":[1,2]}', key=b"k")
    rows[4] = raw_row(24, b'{"id":24,"user":null,"price":24.5}', key=b"k")
    _, jobs = deliver_frame(spark, frames, task, rows, 1)
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (2, 0, 0)
    assert len(jobs) == plain_delta_write_jobs(spark, tmp_path), f"more than the write's own jobs: {jobs}"
    table = {r["id"]: r for r in spark.read.format("delta").load(path).collect()}
    assert sorted(table) == list(range(40))
    assert (table[23]["user"], table[23]["tags"], table[23]["price"]) == (None, [1, 2], 23.5)
    assert (table[24]["user"], table[24]["tags"], table[24]["price"]) == (None, None, 24.5)
    assert table[22]["user"] == "u-22"


def test_a_value_of_another_type_is_reported_without_building_the_batch_again_from_records(spark, tmp_path, caplog):
    """A string where the others hold a double is the batch's misfit: reported under errors.*, while the
    rows Spark converted and the per-record survivors that fit are written, and nothing is built twice."""
    frames, task, path = _setup(spark, tmp_path)
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[3] = raw_row(23, order_json(23, "7"), key=b"k")  # survives the per-record path and fits
    rows[5] = raw_row(25, order_json(25, '"12.5"'), key=b"k")  # a string among doubles
    failures_before = frames.converter.errors.metrics.record_failures
    with caplog.at_level(logging.INFO, logger="connect_spark.runtime.processors.dataframe_batches"):
        deliver_frame(spark, frames, task, rows, 1)
    said = [r.getMessage() for r in caplog.records]
    assert not any("handed over from records" in m for m in said), said
    assert frames.converter.errors.metrics.record_failures == failures_before + 1
    table = {r["id"]: r for r in spark.read.format("delta").load(path).collect()}
    assert sorted(table) == [i for i in range(40) if i != 25]
    assert table[23]["price"] == 7.0
    assert delta_offsets_history(spark, path)[-1] == {"orders": {"0": 39, "1": 40}}


def _cached_bytes(spark) -> int:
    return sum(info.memSize() + info.diskSize() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo())


def test_a_checked_batch_is_cached_uncompressed_and_the_sessions_setting_is_kept(spark, tmp_path):
    from pyspark import StorageLevel

    frames, _, _ = _setup(spark, tmp_path)
    raw = spark.createDataFrame([raw_row(i, order_json(i), key=b"k") for i in range(4000)], RAW_DDL)
    before = spark.conf.get(CACHE_COMPRESSION)
    assert before == "true"  # Spark's default, which Spark's own caches keep

    def filled_size(output) -> int:
        empty = _cached_bytes(spark)
        try:
            assert output.fallback.toArrow().num_rows == 0  # the job that fills the cache
            return _cached_bytes(spark) - empty
        finally:
            output.staged.unpersist(blocking=True)

    output = frames.plan.apply(raw)
    compressed = filled_size(replace(output, staged=output.staged.persist(StorageLevel.DISK_ONLY)))
    uncompressed = filled_size(frames.plan.apply(raw).persisted())
    assert uncompressed > 1.2 * compressed > 0
    assert spark.conf.get(CACHE_COMPRESSION) == before
    spark.conf.set(CACHE_COMPRESSION, "false")
    try:
        frames.plan.apply(raw).persisted().unpersist()
        assert spark.conf.get(CACHE_COMPRESSION) == "false"
    finally:
        spark.conf.set(CACHE_COMPRESSION, before)


def test_checked_batches_of_connectors_sharing_a_session_leave_its_setting_as_it_was(spark, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    frames, _, _ = _setup(spark, tmp_path)
    raw = spark.createDataFrame([raw_row(i, order_json(i), key=b"k") for i in range(10)], RAW_DDL)
    outputs = [frames.plan.apply(raw) for _ in range(2)]
    before = spark.conf.get(CACHE_COMPRESSION)

    def persist_many(output) -> None:
        for _ in range(25):
            output.persisted().unpersist()

    with ThreadPoolExecutor(2) as pool:  # two connectors' query threads
        list(pool.map(persist_many, outputs))
    assert spark.conf.get(CACHE_COMPRESSION) == before
