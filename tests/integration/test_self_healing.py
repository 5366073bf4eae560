"""The restart policy on a real broker and real Spark: a sink whose target is down comes back by itself."""

from __future__ import annotations

import threading
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.config.validation import validate_configs
from connect_spark.metrics.prometheus import render
from connect_spark.runtime.worker.standalone import EXIT_FAILED, EXIT_OK, StandaloneWorker
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import fill_topic, topic_end_offsets
from connect_spark.testing.recording import decode_value, read_recorded_calls, read_recorded_records
from connect_spark.testing.waiting import wait_for

TOTAL = 200


def _connector(name, topic, work_dir, marker, **extra):
    props = {"name": name, "connector.class": "connect_spark.testing.outage.OutageSinkConnector", "topics": topic,
             "recording.dir": str(Path(work_dir) / "out"), "outage.marker": str(marker)}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def _start(spark, worker_props, connector_props):
    worker, connectors = validate_configs(worker_props, [connector_props])
    standalone = StandaloneWorker(worker, connectors, spark=spark, available_now=True)
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("code", standalone.run()), daemon=True)
    thread.start()
    return standalone, thread, outcome


def _calls(work_dir, call):
    return [c for c in read_recorded_calls(Path(work_dir) / "out") if c["call"] == call]


def test_failed_connector_restarts_after_the_outage_and_loses_nothing(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, TOTAL, 2)
    marker = Path(work_dir) / "down"
    marker.touch()
    worker = worker_properties(bootstrap_servers, work_dir, errors_restart_max_attempts=10,
                               errors_restart_backoff_min_ms=200, errors_restart_backoff_max_ms=800)
    name = f"heal-{topic_name}"
    standalone, thread, outcome = _start(spark, worker, _connector(name, topic_name, work_dir, marker))
    wait_for(lambda: len(_calls(work_dir, "put_failed")) >= 3, timeout=120, what="three failed puts")
    marker.unlink()  # the target is back
    thread.join(timeout=300)

    assert outcome["code"] == EXIT_OK
    assert standalone.failures == []
    assert standalone.restarts[name].attempts >= 3
    keys = sorted(decode_value(r["key"]) for r in read_recorded_records(Path(work_dir) / "out"))
    assert keys == sorted(f"k{i}".encode() for i in range(TOTAL))
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)
    assert len(_calls(work_dir, "start")) == standalone.restarts[name].attempts + 1
    # Freshness: the newest committed record of each partition is the last one produced to it.
    last = standalone.runners[-1]
    assert last.freshness.timestamps == {TopicPartition(topic_name, 0): 1_700_000_000_000 + TOTAL - 2,
                                         TopicPartition(topic_name, 1): 1_700_000_000_000 + TOTAL - 1}
    lag = last.metrics()["lag"]
    assert all(e["freshness-ms"] > 0 for e in lag["partitions"]) and lag["record-freshness-max-ms"] > 0
    assert "record_freshness_ms{" in render([last.metrics()])


def test_without_a_policy_the_connector_stays_failed(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, TOTAL, 2)
    marker = Path(work_dir) / "down"
    marker.touch()
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"nopolicy-{topic_name}"
    standalone, thread, outcome = _start(spark, worker, _connector(name, topic_name, work_dir, marker))
    thread.join(timeout=300)

    assert outcome["code"] == EXIT_FAILED
    assert [n for n, _ in standalone.failures] == [name]
    assert len(_calls(work_dir, "start")) == 1
    assert read_recorded_records(Path(work_dir) / "out") == []


def test_non_restartable_failure_is_never_restarted(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, TOTAL, 2)
    marker = Path(work_dir) / "down"
    marker.touch()
    worker = worker_properties(bootstrap_servers, work_dir, errors_restart_max_attempts=-1,
                               errors_restart_backoff_min_ms=100)
    name = f"fatal-{topic_name}"
    standalone, thread, outcome = _start(spark, worker, _connector(name, topic_name, work_dir, marker,
                                                                    outage_fatal="true"))
    thread.join(timeout=300)

    assert outcome["code"] == EXIT_FAILED
    assert standalone.restarts[name].attempts == 0
    assert len(_calls(work_dir, "start")) == 1


def test_blocked_put_is_reported_as_a_stall_and_restarted(spark, bootstrap_servers, topic_name, work_dir):
    fill_topic(bootstrap_servers, topic_name, TOTAL, 2)
    marker = Path(work_dir) / "hung"
    marker.touch()
    worker = worker_properties(bootstrap_servers, work_dir, errors_restart_max_attempts=3,
                               errors_restart_backoff_min_ms=100, errors_stall_timeout_ms=6000,
                               errors_stall_action="fail")
    name = f"stall-{topic_name}"
    standalone, thread, outcome = _start(spark, worker, _connector(name, topic_name, work_dir, marker,
                                                                    outage_mode="block"))
    wait_for(lambda: standalone.runners and standalone.runners[0].stalls.stall, timeout=120, what="the stall report")
    first = standalone.runners[0]
    assert "micro-batch has been running" in first.stalls.stall
    assert first.metrics()["stall"]["stalls-total"] == 1
    marker.unlink()  # the hung call returns; the failed connector is stopped and restarted
    thread.join(timeout=300)

    assert outcome["code"] == EXIT_OK
    assert standalone.restarts[name].attempts >= 1  # more only if a later batch of a loaded machine ran 6 s
    keys = sorted(decode_value(r["key"]) for r in read_recorded_records(Path(work_dir) / "out"))
    assert set(keys) == {f"k{i}".encode() for i in range(TOTAL)}
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def test_connector_created_with_an_offsets_file_reads_from_exactly_there(spark, bootstrap_servers, topic_name, work_dir):
    import json

    from connect_spark.herder.initial_offsets import seed_standalone_offsets
    from connect_spark.testing.harness import run_connector

    fill_topic(bootstrap_servers, topic_name, TOTAL, 2)
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"seeded-{topic_name}"
    connector = {"name": name, "connector.class": "RecordingSink", "topics": topic_name,
                 "recording.dir": str(Path(work_dir) / "out")}
    offsets_file = Path(work_dir) / "offsets.json"
    offsets_file.write_text(json.dumps({"offsets": [
        {"partition": {"kafka_topic": topic_name, "kafka_partition": 0}, "offset": {"kafka_offset": 90}},
        {"partition": {"kafka_topic": topic_name, "kafka_partition": 1}, "offset": {"kafka_offset": 7}}]}))
    assert len(seed_standalone_offsets(worker, connector, str(offsets_file))) == 2
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    firsts = {}
    for r in read_recorded_records(Path(work_dir) / "out"):
        firsts.setdefault(r["partition"], r["offset"])
    assert firsts == {0: 90, 1: 7}
    assert seed_standalone_offsets(worker, connector, str(offsets_file)) == {}  # it has committed offsets now
