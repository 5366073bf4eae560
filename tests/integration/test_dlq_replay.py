"""DLQ replay on a real broker and real Spark: dead letters go back through the connector's normal path."""

from __future__ import annotations

import json
import subprocess
import urllib.request
import sys
from pathlib import Path

import pytest
from kafka import KafkaProducer

from connect_spark.api.errors import ConnectException

from connect_spark.config.properties import format_properties
from connect_spark.config.validation import validate_configs
from connect_spark.dlq_replay import LetterFilter, replay_dead_letters
from connect_spark.status.states import TargetState
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.recording import decode_value, read_recorded_records

TOTAL, PARTITIONS = 200, 2
BAD = {i for i in range(TOTAL) if i % 50 == 7}  # 2% of the records fail the transform


def _fill(bootstrap, topic):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(TOTAL):
        value = b"bad" if i in BAD else str(i).encode()
        producer.send(topic, key=f"k{i}".encode(), value=value, partition=i % PARTITIONS,
                      timestamp_ms=1_700_000_000_000 + i, headers=[("h", str(i).encode())])
    producer.flush()
    producer.close()


def _connector(name, topic, work_dir, fixed):
    props = {"name": name, "connector.class": "RecordingSink", "topics": topic,
             "recording.dir": str(Path(work_dir) / "out"), "value.converter": "StringConverter",
             "errors.tolerance": "all", "errors.deadletterqueue.topic.name": f"{topic}-dlq",
             "errors.deadletterqueue.topic.replication.factor": "1",
             "errors.deadletterqueue.context.headers.enable": "true"}
    if not fixed:
        props.update({"transforms": "cast", "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
                      "transforms.cast.spec": "int32"})
    return props


def _cli_dry_run(worker, connector, work_dir):
    """``connect-spark dlq replay --dry-run`` as a child process (no Spark needed): what it prints."""
    folder = Path(work_dir)
    (folder / "worker.properties").write_text(format_properties(worker))
    (folder / "connector.properties").write_text(format_properties(connector))
    done = subprocess.run([sys.executable, "-m", "connect_spark.cli", "dlq", "replay", "--dry-run",
                           str(folder / "worker.properties"), str(folder / "connector.properties")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rest_dry_run(worker, connector, tmp_path_factory):
    """``POST /connectors/{name}/dlq/replay`` with ``dry_run`` on a real REST server (connectors run by
    ScriptedHandle: nothing but the replay touches Kafka)."""
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.herder import Herder
    from connect_spark.rest.app import create_app
    from connect_spark.rest.server import RestServer
    from connect_spark.status.log import MemoryLog
    from connect_spark.status.stores import ConfigStore, StatusStore
    from connect_spark.storage.file_offsets import FileOffsetStore
    from connect_spark.testing.handles import ScriptedHandle

    status, config = StatusStore(MemoryLog()), ConfigStore(MemoryLog())
    status.start()
    config.start()
    offsets = FileOffsetStore(str(tmp_path_factory.mktemp("rest") / "offsets.json"))
    herder = Herder(WorkerConfig(worker), config, status, offsets, ScriptedHandle, "127.0.0.1:8083")
    herder.create_connector(connector["name"], connector, TargetState.STOPPED)
    server = RestServer(create_app(herder), "http://127.0.0.1:0")
    server.start()
    try:
        request = urllib.request.Request(f"{server.url}/connectors/{connector['name']}/dlq/replay", method="POST",
                                         data=json.dumps({"dry_run": True}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read())
    finally:
        server.stop()


def _replay(spark, worker, connector, **kwargs):
    worker_config, (connector_config,) = validate_configs(worker, [connector])
    return replay_dead_letters(spark, worker_config, connector_config, **kwargs)


def test_replay_dry_run_loop_guard_and_resumed_position(spark, bootstrap_servers, topic_name, work_dir,
                                                        tmp_path_factory):
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    admin.create_topics([NewTopic(topic_name, PARTITIONS, 1)])
    admin.close()
    _fill(bootstrap_servers, topic_name)
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"dlq-{topic_name}"
    broken, fixed = _connector(name, topic_name, work_dir, False), _connector(name, topic_name, work_dir, True)
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert len(read_recorded_records(Path(work_dir) / "out")) == TOTAL - len(BAD)

    listed = _replay(spark, worker, broken, dry_run=True)
    assert listed.groups == {("connect_spark.api.errors.DataException", "TRANSFORMATION"): len(BAD)}
    assert "would replay 4 dead letter(s)" in listed.report(dry_run=True)
    assert _replay(spark, worker, broken, letter_filter=LetterFilter(stage="VALUE_CONVERTER"), dry_run=True).groups == {}
    printed = _cli_dry_run(worker, broken, work_dir)
    assert "would replay 4 dead letter(s)" in printed and "DataException  (stage TRANSFORMATION)" in printed
    assert _rest_dry_run(worker, broken, tmp_path_factory) == {
        "dry_run": True, "replayed": 0,
        "groups": [{"error_class": "connect_spark.api.errors.DataException", "stage": "TRANSFORMATION", "count": 4}],
        "skipped": {"filtered_out": 0, "over_limit": 0, "unrestorable": 0, "superseded": 0, "already_in_sink": 0}}

    # A sink that seeks to offsets of its own when opened would drop the letters: nothing is replayed.
    with pytest.raises(ConnectException, match="keeps its own offsets"):
        _replay(spark, worker, {**fixed, "recording.rewind": f"{topic_name}:1:0"})
    assert _replay(spark, worker, broken, dry_run=True).groups == listed.groups

    # Replayed with the transform still broken: every letter fails again and goes back with its replay count.
    assert _replay(spark, worker, broken).replayed == len(BAD)
    again = _replay(spark, worker, broken, dry_run=True, max_replays=1)
    assert (again.groups, again.over_limit) == ({}, len(BAD))

    # The transform fixed: the letters reach the sink with their original coordinates, once.
    assert _replay(spark, worker, fixed).replayed == len(BAD)
    records = read_recorded_records(Path(work_dir) / "out")
    replayed = [r for r in records if r["value"] == "bad"]  # StringConverter: the value is text
    assert sorted((r["partition"], r["offset"]) for r in replayed) == sorted((i % PARTITIONS, i // PARTITIONS) for i in BAD)
    for r in replayed:
        i = int(decode_value(r["key"]).decode()[1:])
        assert r["topic"] == topic_name and r["timestamp"] == 1_700_000_000_000 + i
        assert [h[0] for h in r["headers"]][0] == "h"
    assert _replay(spark, worker, fixed).replayed == 0  # its position was committed: nothing new
    assert len(read_recorded_records(Path(work_dir) / "out")) == TOTAL
