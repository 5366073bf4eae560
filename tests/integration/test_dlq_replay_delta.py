"""DLQ replay into the Delta sink on a real broker, real Spark and real Delta tables: exactly once.

A validation transform (``Cast`` of a ``check`` field, then the field dropped) fails on 2% of the records,
which go to the dead letter queue; the fix drops the validation. Replayed records must reach the table
with their original coordinates, once, also when a run stopped between the Delta commit and the commit
of its progress (simulated by a replay log that fails that write).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.validation import validate_configs
from connect_spark.connectors.delta.ledger import read_stored_offsets, replay_ledger_name
from connect_spark.connectors.delta.target import TableTarget
from connect_spark.dlq_replay import LetterFilter, replay_dead_letters
from connect_spark.dlq_replay.replay_log import ReplayLog
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce

_JSON = "org.apache.kafka.connect.json.JsonConverter"
_STRING = "org.apache.kafka.connect.storage.StringConverter"
DATA_EXCEPTION = ("connect_spark.api.errors.DataException", "TRANSFORMATION")


def _fill(bootstrap, topic, total, partitions):
    """``total`` records ``{"id", "amount", "check"}``; ``check`` is not a number for 2% of them. Returns those ids."""
    bad = {i for i in range(total) if i % 50 == 7}
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, ((i % partitions, f"k{i}".encode(),
                                json.dumps({"id": i, "amount": i * 10, "check": "x" if i in bad else "1"}).encode(),
                                [], 1_700_000_000_000 + i) for i in range(total)))
    return bad


def _connector(name, topics, table, fixed):
    props = {"name": name, "connector.class": "DeltaSink", "topics": topics, "delta.table.path": table,
             "delta.column.topic": "src_topic", "delta.column.partition": "src_partition",
             "delta.column.offset": "src_offset", "key.converter": _STRING, "value.converter": _JSON,
             "value.converter.schemas.enable": "false", "errors.tolerance": "all",
             "errors.deadletterqueue.topic.name": f"{name}-dlq", "errors.deadletterqueue.topic.replication.factor": "1",
             "errors.deadletterqueue.context.headers.enable": "true",
             "transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
             "transforms.drop.exclude": "check"}
    if not fixed:  # the validation that fails on a non-numeric check, before the field is dropped
        props.update({"transforms": "validate,drop",
                      "transforms.validate.type": "org.apache.kafka.connect.transforms.Cast$Value",
                      "transforms.validate.spec": "check:int32"})
    return props


def _replay(spark, worker, connector, **kwargs):
    worker_config, (connector_config,) = validate_configs(worker, [connector])
    return replay_dead_letters(spark, worker_config, connector_config, **kwargs)


class _StopsBeforeItsCommit(ReplayLog):
    """A replay log whose commit after a delivered chunk fails: the run stops with its chunk in flight."""

    def write_progress(self, progress):
        if not progress.in_flight:
            raise RuntimeError("stopped before committing the chunk")
        super().write_progress(progress)


def _replay_without_storing_the_position(spark, worker, connector, letter_filter=LetterFilter()):
    """A replay run that stops after delivering (the Delta commits made) but before it commits its progress."""
    worker_config, (connector_config,) = validate_configs(worker, [connector])
    with _StopsBeforeItsCommit.for_worker(worker_config, connector_config.name) as replay_log:
        with pytest.raises(RuntimeError, match="stopped before committing"):
            replay_dead_letters(spark, worker_config, connector_config, letter_filter, replay_log=replay_log)


def _version(spark, table):
    return spark.sql(f"DESCRIBE HISTORY delta.`{table}` LIMIT 1").collect()[0]["version"]


def _rows(spark, table):
    return [(r["id"], r["amount"], r["src_topic"], r["src_partition"], r["src_offset"])
            for r in spark.read.format("delta").load(table).collect()]


def test_replay_into_delta_writes_each_dead_letter_once(spark, bootstrap_servers, topic_name, work_dir):
    total, partitions = 200, 2
    bad = _fill(bootstrap_servers, topic_name, total, partitions)
    worker = worker_properties(bootstrap_servers, work_dir)
    table = str(Path(work_dir) / "orders")
    name = f"replay-{topic_name}"
    broken, fixed = (_connector(name, topic_name, table, fixed) for fixed in (False, True))
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert len(_rows(spark, table)) == total - len(bad)

    listed = _replay(spark, worker, broken, dry_run=True)
    assert listed.groups == {DATA_EXCEPTION: len(bad)}
    assert "would replay 4 dead letter(s)" in listed.report(dry_run=True)

    # Replayed while still broken: every letter fails again and goes back with its replay count ...
    assert _replay(spark, worker, broken).replayed == len(bad)
    assert len(_rows(spark, table)) == total - len(bad)
    # ... and a later run is not kept from them by the position the table stored meanwhile.
    assert _replay(spark, worker, broken, dry_run=True).groups == {DATA_EXCEPTION: len(bad)}

    # Fixed, and the run stops after the Delta commit, before the offset store write ...
    _replay_without_storing_the_position(spark, worker, fixed)
    rows = _rows(spark, table)
    assert sorted(r[0] for r in rows) == list(range(total))
    assert all((topic, partition, offset) == (topic_name, i % partitions, i // partitions)
               for i, amount, topic, partition, offset in rows) and all(r[1] == r[0] * 10 for r in rows)
    version = _version(spark, table)
    # ... so the next run reads the same letters again: the table holds them, nothing is written.
    again = _replay(spark, worker, fixed)
    assert (again.replayed, again.held) == (0, len(bad)) and "0 dead letter(s)" in again.report(dry_run=False)
    assert _version(spark, table) == version and len(_rows(spark, table)) == total
    # A second run after a complete one: nothing new to read, nothing written.
    assert _replay(spark, worker, fixed).replayed == 0
    assert _version(spark, table) == version and len(_rows(spark, table)) == total

    # The connector's own offsets document is untouched; the replay's commits carry its own.
    target = TableTarget(path=table)
    own = read_stored_offsets(spark, target, name)
    assert own.offsets == {TopicPartition(topic_name, p): total // partitions for p in range(partitions)}
    assert own.replayed == {}
    replay_ledger = read_stored_offsets(spark, target, replay_ledger_name(name, f"{name}-dlq"))
    assert replay_ledger.offsets == {} and sum(replay_ledger.replayed[f"{name}-dlq"].values()) == 2 * len(bad)
    worker_config, (connector_config,) = validate_configs(worker, [fixed])
    with ReplayLog.for_worker(worker_config, name) as replay_log:  # the finished run cleared the in-flight letters
        progress = replay_log.progress()
        assert (progress.position, progress.done, progress.in_flight) == ({0: 2 * len(bad)}, {}, {})


def test_replay_into_tables_per_topic_leaves_out_only_what_each_table_holds(spark, bootstrap_servers, topic_name,
                                                                             work_dir):
    total = 100
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    bad = _fill(bootstrap_servers, first, total, 1)
    _fill(bootstrap_servers, second, total, 1)
    worker = worker_properties(bootstrap_servers, work_dir)
    tables = Path(work_dir) / "tables"
    name = f"replay-{topic_name}"
    broken, fixed = (_connector(name, f"{first},{second}", str(tables / "${topic}"), fixed) for fixed in (False, True))
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert [len(_rows(spark, str(tables / t))) for t in (first, second)] == [total - len(bad)] * 2

    # A run that stopped between the two tables' commits: the first table holds its letters, the second not.
    _replay_without_storing_the_position(spark, worker, fixed, LetterFilter(topic=first))
    assert len(_rows(spark, str(tables / first))) == total
    assert len(_rows(spark, str(tables / second))) == total - len(bad)

    # Run again: every letter goes through, each table leaves out only what it holds.
    assert _replay(spark, worker, fixed).replayed == 2 * len(bad)
    for topic in (first, second):
        rows = _rows(spark, str(tables / topic))
        assert sorted(r[0] for r in rows) == list(range(total))
        assert all((r[2], r[3], r[4]) == (topic, 0, r[0]) for r in rows)
    assert _replay(spark, worker, fixed).replayed == 0
