"""DLQ replay on a real broker and real Spark: dead letters go back through the connector's normal path."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from connect_spark.api.errors import ConnectException

from connect_spark.config.properties import format_properties
from connect_spark.config.validation import validate_configs
from connect_spark.dlq_replay import LetterFilter, ReplayInProgressError, replay_dead_letters
from connect_spark.dlq_replay.command import EXIT_REPLAY_RUNNING
from connect_spark.dlq_replay.replay_log import ReplayLog, lease_key
from connect_spark.status.log import KafkaLog
from connect_spark.status.states import TargetState
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce
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


def _cli(worker, connector, work_dir, *options):
    """``connect-spark dlq replay OPTIONS`` as a child process: the finished process."""
    folder = Path(work_dir)
    (folder / "worker.properties").write_text(format_properties(worker))
    (folder / "connector.properties").write_text(format_properties(connector))
    return subprocess.run([sys.executable, "-m", "connect_spark.cli", "dlq", "replay", *options,
                           str(folder / "worker.properties"), str(folder / "connector.properties")],
                          capture_output=True, text=True, timeout=120)


def _cli_dry_run(worker, connector, work_dir):
    """``connect-spark dlq replay --dry-run`` as a child process (no Spark needed): what it prints."""
    done = _cli(worker, connector, work_dir, "--dry-run")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rest_replay(worker, connector, tmp_path_factory, body):
    """``POST /connectors/{name}/dlq/replay`` with ``body`` on a real REST server (connectors run by
    ScriptedHandle: nothing but the replay touches Kafka): the answer's status and JSON."""
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
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
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
    assert _rest_replay(worker, broken, tmp_path_factory, {"dry_run": True}) == (200, {
        "dry_run": True, "replayed": 0,
        "groups": [{"error_class": "connect_spark.api.errors.DataException", "stage": "TRANSFORMATION", "count": 4}],
        "kept": {"filtered_out": 0, "over_limit": 0, "unrestorable": 0},
        "dropped": {"over_limit": 0, "unrestorable": 0},
        "passed_over": {"superseded": 0, "already_in_sink": 0}})

    # A sink that seeks to offsets of its own when opened would drop the letters: nothing is replayed.
    with pytest.raises(ConnectException, match="keeps its own offsets"):
        _replay(spark, worker, {**fixed, "recording.rewind": f"{topic_name}:1:0"})
    # ... also when its tasks run on the executors: the replay delivers on the driver, where it sees the seek
    # (another recording folder: the sink rewinds once per folder).
    with pytest.raises(ConnectException, match="keeps its own offsets"):
        _replay(spark, worker, {**fixed, "recording.rewind": f"{topic_name}:1:0", "task.execution.mode": "executor",
                                "recording.dir": str(Path(work_dir) / "out-executor")})
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


def _fill_many(bootstrap, topic, total, partitions):
    """``total`` records, 2% of them (``i % 50 == 7``) not numbers; returns those indexes."""
    bad = {i for i in range(total) if i % 50 == 7}
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, ((i % partitions, f"k{i}".encode(), b"bad" if i in bad else str(i).encode(), [],
                                1_700_000_000_000 + i) for i in range(total)))
    return bad


def test_letters_a_filter_leaves_out_are_replayed_by_a_later_run_and_none_twice(spark, bootstrap_servers,
                                                                                topic_name, work_dir):
    total, partitions = 500, 2
    bad = _fill_many(bootstrap_servers, topic_name, total, partitions)
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"dlq-{topic_name}"
    broken, fixed = _connector(name, topic_name, work_dir, False), _connector(name, topic_name, work_dir, True)
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert len(read_recorded_records(Path(work_dir) / "out")) == total - len(bad) == 490

    # --until-ms 1 chooses no letter: every letter is kept for later.
    first = _replay(spark, worker, fixed, letter_filter=LetterFilter(until_ms=1))
    assert (first.replayed, first.filtered_out) == (0, len(bad))
    assert "kept for a later replay: 10 filtered out" in first.report(dry_run=False)
    # --since-ms chooses the later half, delivered in chunks of 3: the earlier half is kept before them.
    second = _replay(spark, worker, fixed, letter_filter=LetterFilter(since_ms=1_700_000_000_000 + 250), chunk_size=3)
    assert (second.replayed, second.filtered_out) == (5, 5)
    assert len(read_recorded_records(Path(work_dir) / "out")) == 495
    # Without a filter: the kept letters, and only those.
    third = _replay(spark, worker, fixed, chunk_size=4)
    assert (third.replayed, third.filtered_out) == (5, 0)
    records = read_recorded_records(Path(work_dir) / "out")
    assert len(records) == total
    assert sorted((r["partition"], r["offset"]) for r in records) == sorted(
        (i % partitions, i // partitions) for i in range(total))
    assert _replay(spark, worker, fixed).replayed == 0


def test_one_replay_per_connector_at_a_time_and_a_crashed_ones_lease_expires(spark, bootstrap_servers, topic_name,
                                                                             work_dir, tmp_path_factory):
    bad = _fill_many(bootstrap_servers, topic_name, 100, 1)
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"dlq-{topic_name}"
    broken, fixed = _connector(name, topic_name, work_dir, False), _connector(name, topic_name, work_dir, True)
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    worker_config, (connector_config,) = validate_configs(worker, [fixed])

    with ReplayLog.for_worker(worker_config, name) as running:  # a replay is on
        running.claim()
        refused = _cli(worker, fixed, work_dir)
        assert refused.returncode == EXIT_REPLAY_RUNNING == 3, refused.stderr
        assert f"Another dead letter replay of connector {name} is running" in refused.stderr
        status, answer = _rest_replay(worker, fixed, tmp_path_factory, {})
        assert status == 409 and answer["error_code"] == 409
        assert f"Another dead letter replay of connector {name} is running" in answer["message"]
        assert len(read_recorded_records(Path(work_dir) / "out")) == 100 - len(bad)

    # A replay that crashed holding the lease: refused until the lease expires, then taken over.
    crashed = KafkaLog(bootstrap_servers, worker_config.config_storage_topic, 1, 1,
                       config_key="config.storage.topic")
    crashed.bind(lambda key, value: None)
    crashed.start()
    try:
        expires_ms = int(time.time() * 1000) + 4_000
        crashed.send([(lease_key(name), json.dumps({"owner": "crashed", "at_ms": expires_ms - 60_000,
                                                    "expires_ms": expires_ms}).encode())])
    finally:
        crashed.stop()
    with pytest.raises(ReplayInProgressError, match=r"\(crashed\)"):
        _replay(spark, worker, fixed)
    time.sleep(max(expires_ms / 1000 - time.time(), 0) + 0.5)
    assert _replay(spark, worker, fixed).replayed == len(bad)
    assert len(read_recorded_records(Path(work_dir) / "out")) == 100
