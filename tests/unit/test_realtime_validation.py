"""task.execution.mode=realtime at validation: accepted for record and Arrow tasks on Spark 4.2, refused with the
reason otherwise (no JVM: the running Spark version is named through CONNECT_SPARK_SPARK_VERSION)."""

from __future__ import annotations

import pytest

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import validate_configs
from connect_spark.config.worker import REALTIME_OFFSET_FLUSH_INTERVAL_MS, WorkerConfig
from connect_spark.jvm.spark_versions import SPARK_VERSION_ENV, running_versions

WORKER = {"bootstrap.servers": "localhost:9092", "offset.storage.replication.factor": "1",
          "key.converter": "org.apache.kafka.connect.storage.StringConverter",
          "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
FILE_SINK = {"name": "orders-file", "connector.class": "FileStreamSink", "topics": "orders", "file": "/tmp/out.txt",
             "task.execution.mode": "realtime"}
DELTA_SINK = {"name": "lake", "connector.class": "connect_spark.connectors.delta.DeltaSinkConnector",
              "topics": "orders", "delta.table.path": "/tmp/lake", "task.execution.mode": "realtime"}


@pytest.fixture
def spark_version(monkeypatch):
    """Set the Spark version validation sees (the variable is read once per process: the cache is cleared)."""
    def use(version: str) -> None:
        monkeypatch.setenv(SPARK_VERSION_ENV, version)
        running_versions.cache_clear()

    yield use
    running_versions.cache_clear()


def _problems(worker, connector) -> list[str]:
    with pytest.raises(ConfigValidationError) as raised:
        validate_configs(worker, [connector])
    return [issue.message for issue in raised.value.issues]


def test_realtime_is_accepted_for_a_record_task_on_spark_4_2(spark_version):
    spark_version("4.2.0")
    worker, [connector] = validate_configs(WORKER, [FILE_SINK])
    assert connector.execution_mode(worker) == "realtime"


def test_realtime_on_spark_4_1_is_refused_naming_the_key_the_value_the_version_and_what_is_allowed(spark_version):
    spark_version("4.1.1")
    [problem] = _problems(WORKER, FILE_SINK)
    assert problem.startswith("connector 'orders-file': task.execution.mode=realtime: connector orders-file needs "
                              "Spark 4.2 or newer")
    assert "the running pyspark is 4.1.1" in problem and problem.endswith("executor or driver.")


def test_a_bulk_dataframe_task_in_realtime_is_refused_at_validation(spark_version):
    spark_version("4.2.0")
    problems = _problems(WORKER, DELTA_SINK)
    assert any("runs DeltaSinkTask, a bulk DataFrame task" in p and "foreachBatch" in p for p in problems), problems


def test_realtime_set_on_the_worker_applies_to_its_connectors(spark_version):
    spark_version("4.0.0")
    connector = {k: v for k, v in FILE_SINK.items() if k != "task.execution.mode"}
    [problem] = _problems({**WORKER, "task.execution.mode": "realtime"}, connector)
    assert "needs Spark 4.2 or newer" in problem


def test_realtime_with_available_now_is_refused(spark_version):
    spark_version("4.2.0")
    [problem] = _problems({**WORKER, "trigger": "available-now"}, FILE_SINK)
    assert "cannot run with trigger=available-now" in problem and "Set trigger to an interval" in problem


def test_realtime_with_offsets_in_a_file_is_refused(spark_version, tmp_path):
    spark_version("4.2.0")
    offsets = str(tmp_path / "offsets.json")
    [problem] = _problems({**WORKER, "offset.storage.file.filename": offsets}, FILE_SINK)
    assert f"offset.storage.file.filename={offsets} keeps them in a file of the driver" in problem


def test_an_unknown_mode_names_the_three_allowed_values():
    problems = _problems(WORKER, {**FILE_SINK, "task.execution.mode": "streaming"})
    assert any("realtime" in p and "driver" in p and "executor" in p for p in problems), problems


def test_the_realtime_commit_tick_is_short_unless_the_worker_sets_it():
    assert WorkerConfig(WORKER).realtime_offset_flush_interval_ms == REALTIME_OFFSET_FLUSH_INTERVAL_MS == 200
    assert WorkerConfig(WORKER).offset_flush_interval_ms == 60000
    assert WorkerConfig({**WORKER, "offset.flush.interval.ms": "500"}).realtime_offset_flush_interval_ms == 500
