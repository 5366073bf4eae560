"""The refusals of real-time mode: bulk DataFrame tasks, Spark older than 4.2, fewer task slots than partitions."""

from __future__ import annotations

import os

import pytest

from connect_spark.connectors.delta.task import DeltaSinkTask
from connect_spark.connectors.file import FileStreamSinkTask
from connect_spark.connectors.jdbc.task import JdbcSinkTask
from connect_spark.streaming.realtime_requirements import realtime_refusals, task_slots


@pytest.mark.parametrize("task_class", [FileStreamSinkTask, JdbcSinkTask])
def test_a_record_or_arrow_task_on_spark_4_2_with_a_slot_per_partition_is_not_refused(task_class):
    assert realtime_refusals("orders", task_class, "4.2.0", task_slots=4, partitions=4) == []


def test_a_bulk_dataframe_task_is_refused_naming_the_key_the_value_the_task_and_what_is_allowed():
    [refusal] = realtime_refusals("lake", DeltaSinkTask, "4.2.0")
    assert refusal.startswith("task.execution.mode=realtime: connector lake runs DeltaSinkTask, a bulk DataFrame task")
    assert "foreachBatch" in refusal
    assert refusal.endswith("Allowed for this connector: executor or driver.")


@pytest.mark.parametrize("version", ["4.1.1", "4.0.0", "3.5.3", "4.1.0.dev0"])
def test_spark_older_than_4_2_is_refused_with_the_running_version(version):
    [refusal] = realtime_refusals("orders", FileStreamSinkTask, version)
    assert refusal == (f"task.execution.mode=realtime: connector orders needs Spark 4.2 or newer (its real-time "
                       f"trigger); the running pyspark is {version}. Allowed with this Spark: executor or driver.")


@pytest.mark.parametrize("version", ["4.2.0", "4.2", "4.3.1", "5.0.0", "4.2.0.dev1"])
def test_spark_4_2_and_newer_pass(version):
    assert realtime_refusals("orders", FileStreamSinkTask, version) == []


def test_fewer_task_slots_than_partitions_are_refused_with_both_counts():
    [refusal] = realtime_refusals("orders", FileStreamSinkTask, "4.2.0", task_slots=2, partitions=6)
    assert "reads 6 Kafka partitions" in refusal
    assert "runs 2 tasks at once: give it at least 6 task slots" in refusal
    assert refusal.endswith("or use executor or driver.")


@pytest.mark.parametrize("slots, partitions", [(None, 6), (2, None), (None, None)])
def test_unknown_slots_or_partitions_are_not_checked(slots, partitions):
    assert realtime_refusals("orders", FileStreamSinkTask, "4.2.0", task_slots=slots, partitions=partitions) == []


def test_every_refusal_that_applies_is_reported_at_once():
    refusals = realtime_refusals("lake", DeltaSinkTask, "4.1.1", task_slots=1, partitions=3)
    assert [r.split(": connector lake ")[1].split(" ")[0] for r in refusals] == ["runs", "needs", "reads"]


@pytest.mark.parametrize("conf, slots", [
    ({"spark.master": "local"}, 1),
    ({"spark.master": "local[4]"}, 4),
    ({"spark.master": "local[4, 3]"}, 4),
    ({"spark.master": "local[*]"}, os.cpu_count()),
    ({"spark.master": "local-cluster[2,1,1024]"}, 2),
    ({"spark.master": "local-cluster[3, 2, 1024]"}, 6),
    ({"spark.master": "local[8]", "spark.task.cpus": "2"}, 4),
    ({"spark.master": "spark://host:7077", "spark.executor.instances": "3", "spark.executor.cores": "4"}, 12),
    ({"spark.master": "spark://host:7077", "spark.cores.max": "10"}, 10),
    ({"spark.master": "yarn"}, None),
    ({}, None),
])
def test_task_slots_from_the_session_settings(conf, slots):
    assert task_slots(conf) == slots
