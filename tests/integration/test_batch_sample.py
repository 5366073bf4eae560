"""A batch's head read on the driver with a Kafka client, so a plan learns its shapes without a Spark job.

Real broker, real Spark, a real Delta table: the sampler reads exactly the head of each partition's range,
its rows are a local relation (Spark answers on the driver), and the Delta sink's first batch, whose plan
has learned nothing yet, runs no Spark job besides the write.
"""

from __future__ import annotations

import json
import uuid

from kafka import KafkaConsumer

from connect_spark.api.records import TopicPartition
from connect_spark.columnar.plan import compile_plan
from connect_spark.connectors.delta import DeltaSinkTask
from connect_spark.runtime.conversion.batch_sample import BatchSampler
from connect_spark.runtime.processors.dataframe_batches import FrameBatches
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext
from connect_spark.kafka.clients import kafka_client_kwargs
from connect_spark.streaming.source import raw_columns
from connect_spark.testing.kafka import create_topic, produce
from tests.integration.frame_batches import SCHEMALESS, plain_delta_write_jobs, plan_connector


def _value(partition: int, i: int) -> bytes:
    return json.dumps({"id": i, "partition": partition, "price": i + 0.5}, separators=(",", ":")).encode()


def _fill(bootstrap_servers: str, topic: str, per_partition: int) -> None:
    create_topic(bootstrap_servers, topic, 2)
    produce(bootstrap_servers, topic, [(p, b"k%d" % i, _value(p, i), [("h", b"v")])
                                       for p in (0, 1) for i in range(per_partition)])


def _sampler(spark, bootstrap_servers: str, timeout_s: float = 3.0) -> BatchSampler:
    kwargs = kafka_client_kwargs({}, KafkaConsumer)
    kwargs["bootstrap_servers"] = bootstrap_servers
    return BatchSampler(spark, kwargs, timeout_s=timeout_s)


def _open_delta_task(path: str, name: str, topic: str) -> tuple[DeltaSinkTask, list[TopicPartition]]:
    """A Delta sink task on ``path`` with both partitions of ``topic`` open, as the runner opens it."""
    props = {"name": name, "delta.table.path": path}
    task = DeltaSinkTask()
    task.initialize(WorkerSinkTaskContext(props))
    task.start(props)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    task.context.set_assignment(set(tps))
    task.open(tps)
    return task, tps


def test_the_sample_is_the_head_of_each_partition_range_as_a_local_relation(spark, bootstrap_servers, topic_name):
    _fill(bootstrap_servers, topic_name, 10)
    sampler = _sampler(spark, bootstrap_servers)
    ranges = {TopicPartition(topic_name, 0): (2, 10), TopicPartition(topic_name, 1): (0, 2)}
    sample = sampler.sample(ranges, rows=6)
    assert "LocalRelation" in sample._jdf.queryExecution().optimizedPlan().toString()
    rows = sorted((r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"]), [(h["key"], bytes(h["value"])) for h in r["headers"]])
                  for r in sample.collect())
    # three per partition from the start of each range, never past a range's end (partition 1 has two)
    assert [(p, o) for p, o, *_ in rows] == [(0, 2), (0, 3), (0, 4), (1, 0), (1, 1)]
    assert rows[0][2:] == (b"k2", _value(0, 2), [("h", b"v")])
    assert sample.schema == raw_columns(spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                                        .option("subscribe", topic_name).option("includeHeaders", "true").load()).schema
    assert (sampler.samples, sampler.failures) == (1, 0)


def test_the_first_batch_head_read_ahead_is_used_when_the_batch_starts_there(spark, bootstrap_servers, topic_name):
    _fill(bootstrap_servers, topic_name, 10)
    sampler = _sampler(spark, bootstrap_servers)
    tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    sampler.prefetch({tp0: 2, tp1: 0}, rows=6)  # reads offsets 2-4 and 0-2 in the background
    sample = sampler.sample({tp0: (2, 10), tp1: (0, 2)}, rows=6)
    assert "LocalRelation" in sample._jdf.queryExecution().optimizedPlan().toString()
    # the same head as read for the batch itself: offset 2 of partition 1 lies past its range and is left out
    assert sorted((r["partition"], r["offset"]) for r in sample.collect()) == [(0, 2), (0, 3), (0, 4), (1, 0), (1, 1)]
    assert (sampler.samples, sampler.prefetched, sampler.failures) == (1, 1, 0)
    # read ahead from other positions than the batch starts at: the batch's head is read for it
    sampler.prefetch({tp0: 0}, rows=6)
    sample = sampler.sample({tp0: (5, 10)}, rows=2)
    assert sorted(r["offset"] for r in sample.collect()) == [5, 6]
    assert (sampler.samples, sampler.prefetched) == (2, 1)


def test_an_unreachable_head_gives_none_and_the_plan_samples_with_spark(spark, bootstrap_servers, topic_name):
    _fill(bootstrap_servers, topic_name, 3)
    sampler = _sampler(spark, bootstrap_servers, timeout_s=1.0)
    # the range claims records the log does not have yet: they never arrive within the timeout
    assert sampler.sample({TopicPartition(topic_name, 0): (0, 50)}) is None
    assert (sampler.samples, sampler.failures) == (0, 1)


def test_the_first_batch_learns_its_shape_without_a_spark_job(spark, bootstrap_servers, topic_name, tmp_path):
    _fill(bootstrap_servers, topic_name, 20)
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    sampler = _sampler(spark, bootstrap_servers)
    frames = FrameBatches(spark, compile_plan(connector, worker), build_task_plugins(connector, worker, 0).converter,
                          sampler)
    path = str(tmp_path / "table")
    task, tps = _open_delta_task(path, "sampled", topic_name)
    plain_jobs = plain_delta_write_jobs(spark, tmp_path)

    raw = raw_columns(spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                      .option("subscribe", topic_name).load())
    ranges = {tp: (0, 20) for tp in tps}
    group = f"sampled-first-batch-{uuid.uuid4().hex}"  # job groups outlive a test in the shared session
    spark.sparkContext.setJobGroup(group, "the first batch")
    try:
        frames.deliver(raw, ranges, lambda frame: task.put_dataframe_batch(frame, 0, ranges), task.writes_atomically())
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(group)
    assert sampler.samples == 1
    assert (frames.one_pass_batches, frames.checked_batches) == (1, 0)  # the shape fitted every row
    assert len(jobs) <= plain_jobs, f"more than a plain write's jobs: {jobs}"
    got = sorted((r["partition"], r["id"], r["price"]) for r in spark.read.format("delta").load(path).collect())
    assert got == [(p, i, i + 0.5) for p in (0, 1) for i in range(20)]


def test_a_first_batch_whose_sample_has_rows_for_the_per_record_path_skips_the_doomed_one_pass_write(
        spark, bootstrap_servers, topic_name, tmp_path, caplog):
    import logging

    create_topic(bootstrap_servers, topic_name, 2)
    odd = {(0, 3), (1, 5)}  # a string among doubles, an integer among doubles: both taken per record
    produce(bootstrap_servers, topic_name, [
        (p, b"k%d" % i, (json.dumps({"id": i, "partition": p, "price": "12.5" if (p, i) == (0, 3) else
                                     (7 if (p, i) == (1, 5) else i + 0.5)}, separators=(",", ":")).encode()), [])
        for p in (0, 1) for i in range(20)])
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    frames = FrameBatches(spark, compile_plan(connector, worker), build_task_plugins(connector, worker, 0).converter,
                          _sampler(spark, bootstrap_servers))
    path = str(tmp_path / "table")
    task, tps = _open_delta_task(path, "sampled-odd", topic_name)
    raw = raw_columns(spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                      .option("subscribe", topic_name).load())
    ranges = {tp: (0, 20) for tp in tps}
    with caplog.at_level(logging.INFO, logger="connect_spark.runtime.processors.dataframe_batches"):
        frames.deliver(raw, ranges, lambda frame: task.put_dataframe_batch(frame, 0, ranges), task.writes_atomically())
    said = [r.getMessage() for r in caplog.records]
    assert not any("one-pass write committed nothing" in m for m in said), said
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (0, 1, 2)
    got = sorted((r["partition"], r["id"], r["price"]) for r in spark.read.format("delta").load(path).collect())
    assert got == [(p, i, 7.0 if (p, i) == (1, 5) else i + 0.5) for p in (0, 1) for i in range(20) if (p, i) not in odd
                   or (p, i) == (1, 5)]
