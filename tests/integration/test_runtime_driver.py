"""The driver-resident WorkerSinkTask loop on a real broker and real Spark: delivery and offset semantics."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import cli_command, committed_offsets, run_connector, start_cli, worker_properties
from connect_spark.testing.kafka import fill_topic, topic_end_offsets
from connect_spark.testing.recording import decode_value, read_recorded_calls, read_recorded_records

PARTITIONS = 3


def _connector(name, topic, work_dir, **extra):
    props = {
        "name": name,
        "connector.class": "RecordingSink",
        "topics": topic,
        "recording.dir": str(Path(work_dir) / "out"),
    }
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def _group_offsets(bootstrap, group):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = admin.list_group_offsets(group)[group]
        return {TopicPartition(tp.topic, tp.partition): meta.offset for tp, meta in listed.items()}
    finally:
        admin.close()


def test_every_record_delivered_once_in_order_and_committed(spark, bootstrap_servers, topic_name, work_dir):
    total = 30_000
    fill_topic(bootstrap_servers, topic_name, total, PARTITIONS)
    name = f"rec-{topic_name}"
    result = run_connector(_connector(name, topic_name, work_dir), bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0

    records = read_recorded_records(Path(work_dir) / "out")
    assert len(records) == total
    seen = {}
    for r in records:
        i = int(decode_value(r["key"]).decode()[1:])
        assert r["topic"] == topic_name and r["partition"] == i % PARTITIONS
        assert decode_value(r["value"]) == f"v{i}".encode()
        # The worker's default header converter (SimpleHeaderConverter) infers "17" as the integer 17.
        assert [[h[0], decode_value(h[1])] for h in r["headers"]] == [["h", i]]
        assert r["timestamp"] == 1_700_000_000_000 + i
        seen.setdefault(r["partition"], []).append(r["offset"])
    for partition, offsets in seen.items():
        assert offsets == list(range(len(offsets))), f"partition {partition}: not once and in order"

    ends = topic_end_offsets(bootstrap_servers, topic_name)
    assert result.committed == ends
    assert _group_offsets(bootstrap_servers, f"connect-{name}") == ends
    calls = [c["call"] for c in read_recorded_calls(Path(work_dir) / "out")]
    assert calls[0] == "start" and calls[1] == "open" and calls[-2:] == ["close", "stop"]
    assert "pre_commit" in calls


def test_deleted_checkpoint_resumes_from_committed_offsets(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 900, PARTITIONS)
    name = f"ckpt-{topic_name}"
    connector = _connector(name, topic_name, work_dir)
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark).exit_code == 0
    shutil.rmtree(Path(work_dir) / "checkpoints")
    fill_topic(bootstrap_servers, topic_name, 300, PARTITIONS, start=900)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    keys = [decode_value(r["key"]) for r in read_recorded_records(Path(work_dir) / "out")]
    assert len(keys) == 1200 and len(set(keys)) == 1200
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_rewind_in_open_feeds_from_those_offsets(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 300, PARTITIONS)
    name = f"rewind-{topic_name}"
    connector = _connector(name, topic_name, work_dir, recording_rewind=f"{topic_name}:0:40,{topic_name}:2:95")
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    by_partition = {}
    for r in read_recorded_records(Path(work_dir) / "out"):
        by_partition.setdefault(r["partition"], []).append(r["offset"])
    assert by_partition[0] == list(range(40, 100))
    assert by_partition[1] == list(range(0, 100))
    assert by_partition[2] == [] if 2 not in by_partition else by_partition[2] == list(range(95, 100))
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_retriable_put_failures_redeliver_without_moving_offsets(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 600, PARTITIONS)
    name = f"retry-{topic_name}"
    connector = _connector(name, topic_name, work_dir, connector_class="connect_spark.testing.recording.FaultySinkConnector",
                           faulty_retriable_puts=3, faulty_timeout_ms=200)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    calls = read_recorded_calls(Path(work_dir) / "out")
    retries = [i for i, c in enumerate(calls) if c["call"] == "put_retriable"]
    assert len(retries) == 3
    # No offset was committed while the batch was being retried.
    commits_during = [c for c in calls[retries[0]:retries[-1]] if c["call"] == "pre_commit"]
    assert all(offset == 0 for c in commits_during for _, _, offset in c["offered"])
    keys = [decode_value(r["key"]) for r in read_recorded_records(Path(work_dir) / "out")]
    assert sorted(keys) == sorted(f"k{i}".encode() for i in range(600))
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_bad_config_lists_every_error_without_starting_spark(tmp_path):
    worker = {"bootstrap.servers": "127.0.0.1:1", "key.converter": "StringConverter", "value.converter": "StringConverter"}
    connector = {"topics": "a", "topics.regex": "b.*", "tasks.max": "abc", "connector.class": "no.such.Connector"}
    command = cli_command(worker, {"name": "x", **connector}, tmp_path)
    (tmp_path / "x.properties").write_text("topics=a\ntopics.regex=b.*\ntasks.max=abc\nconnector.class=no.such.Connector\n")
    # A Spark that started would fail at once: spark-submit refuses this option, so exit code 2 and the
    # list of errors below can only come from validation before Spark.
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--no-such-spark-submit-option pyspark-shell"}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "gateway" not in (proc.stdout + proc.stderr).lower()
    err = proc.stderr
    for expected in ("name", "topics.regex", "tasks.max", "abc", "connector.class", "no.such.Connector"):
        assert expected in err, f"{expected!r} missing from:\n{err}"
    assert "SparkSession" not in err and "Spark" not in proc.stdout


def test_non_retriable_failure_exits_nonzero_and_commits_only_completed_work(bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, 300, 1)
    name = f"fatal-{topic_name}"
    worker = worker_properties(bootstrap_servers, work_dir, max_offsets_per_trigger=100, spark_master="local[1]",
                               spark_ui_enabled="false")
    connector = _connector(name, topic_name, work_dir, connector_class="connect_spark.testing.recording.FaultySinkConnector",
                           faulty_fail_on_put=2)
    proc = subprocess.run(cli_command(worker, connector, work_dir, available_now=True), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode not in (0, 2), proc.stderr[-3000:]
    assert "faulty task fails on put #2" in proc.stderr
    assert "Traceback" in proc.stderr  # the trace is logged
    assert committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 100}
    calls = [c["call"] for c in read_recorded_calls(Path(work_dir) / "out")]
    assert calls[-3:] == ["pre_commit", "close", "stop"]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT (Ctrl-C)"])
def test_a_stop_signal_stops_cleanly_with_accepted_records_committed(bootstrap_servers, topic_name, work_dir,
                                                                     stop_signal):
    fill_topic(bootstrap_servers, topic_name, 2_000, PARTITIONS)
    name = f"term-{topic_name}"
    worker = worker_properties(bootstrap_servers, work_dir, offset_flush_interval_ms=60_000, spark_master="local[1]",
                               spark_ui_enabled="false")
    proc = start_cli(worker, _connector(name, topic_name, work_dir), work_dir)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(read_recorded_records(Path(work_dir) / "out")) < 2_000:
        time.sleep(0.5)
    proc.send_signal(stop_signal)
    assert proc.wait(120) == 0, (Path(work_dir) / "cli.log").read_text()[-3000:]
    log = (Path(work_dir) / "cli.log").read_text()
    assert f"Received {stop_signal.name}: stopping gracefully" in log
    assert "StreamingQueryException" not in log and "Py4JJavaError" not in log and "KeyboardInterrupt" not in log
    delivered = len(read_recorded_records(Path(work_dir) / "out"))
    assert delivered == 2_000
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)
