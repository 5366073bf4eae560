"""Issue 15 acceptance: the JDBC sink into a real PostgreSQL, from a real broker through real Spark executors.

* every write mode (insert, upsert by record_key and by record_value, update, delete) with auto.create and
  auto.evolve, checked with plain SQL;
* 1% of the rows violate a CHECK constraint: those reach the dead letter queue with the database's error,
  all the others are in the table, and the task keeps going;
* the CLI killed with SIGKILL three times while records flow in insert mode, the database restarted under the
  running connector in one of the runs: the table holds exactly the produced rows, none twice, and the
  committed offsets (the database's, and Kafka's wherever the final run wrote records) reach the end;
* the database ahead of ``connect-offsets`` (a crash between the two commits): the next run resumes from the
  database, and Kafka's offsets catch up with the next records written, as in Connect;
* driver mode: the sink gets frames built from records, carrying their Connect schemas (NOT NULL key column).
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest
from kafka import KafkaConsumer

from connect_spark.api.records import TopicPartition
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.storage.owner import build_offset_store
from connect_spark.testing.harness import committed_offsets, offsets_after_drain, start_cli, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce

_JSON = "org.apache.kafka.connect.json.JsonConverter"
_KEY_SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int64", "optional": False}]}
_FIELDS = [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "name", "type": "string", "optional": True},
    {"field": "qty", "type": "int32", "optional": True},
    {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
]
_NOTE = {"field": "note", "type": "string", "optional": True}


def _key(key_id: int) -> bytes:
    return json.dumps({"schema": _KEY_SCHEMA, "payload": {"id": key_id}}).encode()


def _value(key_id: int, seq: int, note: str | None = None) -> bytes:
    fields = _FIELDS + ([_NOTE] if note is not None else [])
    payload = {"id": key_id, "name": f"n{seq}", "qty": seq, "at": 1_700_000_000_000 + seq}
    if note is not None:
        payload["note"] = note
    return json.dumps({"schema": {"type": "struct", "optional": False, "fields": fields}, "payload": payload}).encode()


def _worker(bootstrap_servers: str, work_dir, **overrides):
    return worker_properties(bootstrap_servers, work_dir, key_converter=_JSON, value_converter=_JSON,
                             task_execution_mode="executor", **overrides)


def _connector(name: str, topic: str, postgres, **overrides: str) -> dict[str, str]:
    props = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic,
             "tasks.max": "2", "connection.url": postgres.jdbc_url(), "table.name.format": name,
             "auto.create": "true", "connection.attempts": "30", "connection.backoff.ms": "500",
             "retry.backoff.ms": "500", "max.retries": "60"}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return props


def _stored_offsets(postgres, connector_name: str) -> dict[TopicPartition, int]:
    """What the sink's offsets table holds for a connector."""
    rows = _sql(postgres, "SELECT topic, kafka_partition, next_offset FROM connect_offsets WHERE connector = %s",
                connector_name)
    return {TopicPartition(t, p): o for t, p, o in rows}


def _sql(postgres, query: str, *params):
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        cursor = conn.execute(query, params or None)
        return cursor.fetchall() if cursor.description else []


def test_insert_upsert_update_delete_with_auto_create_and_evolve(spark, bootstrap_servers, postgres, topic_name,
                                                                 work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    # 200 records over 50 keys, every 20th a tombstone; partition = key % 2, so offset order is key order.
    records, last = [], {}
    for seq in range(200):
        key_id = (seq * 7) % 50
        tombstone = seq % 20 == 19
        records.append((key_id % 2, _key(key_id), None if tombstone else _value(key_id, seq), []))
        last[key_id] = None if tombstone else seq
    produce(bootstrap_servers, topic_name, records)
    prefix = topic_name.replace("-", "_")[:40]
    names = {m: f"{prefix}_{m}" for m in ("ins", "upk", "upv", "upd")}
    _sql(postgres, f'CREATE TABLE "{names["upd"]}" (id bigint PRIMARY KEY, name text, qty integer, '
                   "at timestamp, note text)")
    _sql(postgres, f'INSERT INTO "{names["upd"]}" (id, name) SELECT g, \'old\' FROM generate_series(0, 9) g')
    connectors = [
        _connector(names["ins"], topic_name, postgres, auto_evolve="true"),
        _connector(names["upk"], topic_name, postgres, insert_mode="upsert", pk_mode="record_key",
                   delete_enabled="true", auto_evolve="true"),
        _connector(names["upv"], topic_name, postgres, insert_mode="upsert", pk_mode="record_value", pk_fields="id"),
        _connector(names["upd"], topic_name, postgres, insert_mode="update", pk_mode="record_key"),
    ]
    worker = _worker(bootstrap_servers, work_dir)
    assert run_standalone(dict(worker), [dict(c) for c in connectors], available_now=True, spark=spark) == 0

    values = [(k, s) for s, (p, kb, vb, _) in enumerate(records) if vb is not None for k in [json.loads(kb)["payload"]["id"]]]
    assert _sql(postgres, f'SELECT count(*), count(DISTINCT qty) FROM "{names["ins"]}"') == [(190, 190)]
    assert _sql(postgres, f'SELECT min(at) FROM "{names["ins"]}"')[0][0].isoformat() == "2023-11-14T22:13:20"
    expected_upk = {k: f"n{s}" for k, s in last.items() if s is not None}
    assert dict(_sql(postgres, f'SELECT id, name FROM "{names["upk"]}"')) == expected_upk
    last_value = {}
    for k, s in values:
        last_value[k] = s
    assert dict(_sql(postgres, f'SELECT id, qty FROM "{names["upv"]}"')) == last_value
    assert dict(_sql(postgres, f'SELECT id, qty FROM "{names["upd"]}"')) == {k: last_value[k] for k in range(10)}
    columns = _sql(postgres, "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                             "WHERE table_name = %s ORDER BY ordinal_position", names["upk"])
    assert columns == [("id", "bigint", "NO"), ("name", "text", "YES"), ("qty", "integer", "YES"),
                       ("at", "timestamp without time zone", "YES")]
    ends = {TopicPartition(topic_name, p): o for p, o in end_offsets(bootstrap_servers, topic_name).items()}
    for connector in connectors:
        assert committed_offsets(worker, connector["name"]) == ends
        stored = _sql(postgres, "SELECT topic, kafka_partition, next_offset FROM connect_offsets WHERE connector = %s",
                      connector["name"])
        assert {TopicPartition(t, p): o for t, p, o in stored} == ends

    # The schema grows a field: auto.evolve adds a nullable column; delivering again changes nothing else.
    produce(bootstrap_servers, topic_name, [(k % 2, _key(k), _value(k, 1000 + k, note=f"v2-{k}"), []) for k in range(5)])
    assert run_standalone(dict(worker), [dict(c) for c in connectors[:2]], available_now=True, spark=spark) == 0
    assert _sql(postgres, f'SELECT count(*), count(note) FROM "{names["ins"]}"') == [(195, 5)]
    upk = dict(_sql(postgres, f'SELECT id, note FROM "{names["upk"]}" WHERE note IS NOT NULL'))
    assert upk == {k: f"v2-{k}" for k in range(5)}
    assert _sql(postgres, "SELECT is_nullable FROM information_schema.columns WHERE table_name = %s AND "
                          "column_name = 'note'", names["upk"]) == [("YES",)]


def test_rows_violating_a_check_constraint_go_to_the_dead_letter_queue(spark, bootstrap_servers, postgres,
                                                                      topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    table = topic_name.replace("-", "_")[:50] + "_chk"
    _sql(postgres, f'CREATE TABLE "{table}" (id bigint PRIMARY KEY, name text, qty integer CHECK (qty >= 0), '
                   "at timestamp)")
    bad = set(range(7, 2000, 100))  # 1%
    produce(bootstrap_servers, topic_name,
            [(i % 2, _key(i), _value(i, -i if i in bad else i), []) for i in range(2000)])
    dlq = f"{topic_name}-dlq"
    connector = _connector(table, topic_name, postgres, auto_create="false", insert_mode="insert",
                           pk_mode="record_value", pk_fields="id", batch_size="500", errors_tolerance="all",
                           errors_deadletterqueue_topic_name=dlq,
                           errors_deadletterqueue_topic_replication_factor="1",
                           errors_deadletterqueue_context_headers_enable="true")
    worker = _worker(bootstrap_servers, work_dir)
    assert run_standalone(dict(worker), [connector], available_now=True, spark=spark) == 0

    assert {r[0] for r in _sql(postgres, f'SELECT id FROM "{table}"')} == set(range(2000)) - bad
    consumer = KafkaConsumer(dlq, bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    refused = {}
    for message in consumer:
        headers = dict(message.headers)
        refused[json.loads(message.key)["payload"]["id"]] = headers["__connect.errors.exception.message"].decode()
    consumer.close()
    assert set(refused) == bad
    assert all("check constraint" in m and "23514" in m and table in m for m in refused.values()), refused
    ends = {TopicPartition(topic_name, p): o for p, o in end_offsets(bootstrap_servers, topic_name).items()}
    assert committed_offsets(worker, connector["name"]) == ends


KILLS = 3
RESTART_DB_IN_RUN = 2
CHAOS_RECORDS = 30_000


@pytest.mark.timeout(1800)
def test_kill_minus_nine_three_times_and_a_database_restart_lose_nothing_and_write_nothing_twice(
        spark, bootstrap_servers, postgres, topic_name, work_dir):
    work = Path(work_dir)
    create_topic(bootstrap_servers, topic_name, 4)
    table = topic_name.replace("-", "_")[:50] + "_chaos"
    feeding = threading.Thread(target=produce, args=(bootstrap_servers, topic_name,
                                                     ((i % 4, _key(i), _value(i, i), []) for i in range(CHAOS_RECORDS))),
                               kwargs={"linger_ms": 50}, daemon=True)
    feeding.start()
    connector = _connector(table, topic_name, postgres, insert_mode="insert", batch_size="2000")
    worker = _worker(bootstrap_servers, work, max_offsets_per_trigger=3000, trigger="300ms",
                     offset_flush_interval_ms=500, spark_master="local[2]", spark_ui_enabled="false",
                     spark_driver_memory="1g")

    def rows() -> int:
        try:
            return _sql(postgres, f'SELECT count(*) FROM "{table}"')[0][0]
        except psycopg.Error:
            return 0

    rng = random.Random(15)
    started = time.monotonic()
    for run in range(KILLS):
        proc = start_cli(worker, connector, work, log_name=f"cli-{run}.log")
        try:
            for _ in (0, 1) if run == RESTART_DB_IN_RUN else (0,):
                before, deadline = rows(), time.monotonic() + 300
                while rows() <= before and time.monotonic() < deadline:
                    assert proc.poll() is None, (work / f"cli-{run}.log").read_text(errors="replace")[-3000:]
                    time.sleep(0.3)
                assert rows() > before, f"run {run} wrote nothing in 300 s"
                if run == RESTART_DB_IN_RUN and _ == 0:
                    postgres.restart()  # under the running connector: it retries and goes on
            time.sleep(rng.uniform(0.0, 2.0))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        print(f"kill {run} at {time.monotonic() - started:.0f} s: {rows()} rows, committed {sum(committed_offsets(worker, table).values())}")
    feeding.join(600)
    assert not feeding.is_alive()

    kafka_before, database_before = committed_offsets(worker, table), _stored_offsets(postgres, table)
    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
    print(f"drained at {time.monotonic() - started:.0f} s")
    assert _sql(postgres, f'SELECT count(*), count(DISTINCT id), min(id), max(id) FROM "{table}"') == [
        (CHAOS_RECORDS, CHAOS_RECORDS, 0, CHAOS_RECORDS - 1)]
    ends = {TopicPartition(topic_name, p): o for p, o in end_offsets(bootstrap_servers, topic_name).items()}
    assert sum(ends.values()) == CHAOS_RECORDS
    assert _stored_offsets(postgres, table) == ends
    # Kafka's offsets reach the end wherever the drain wrote records (see offsets_after_drain and the test below)
    assert committed_offsets(worker, table) == offsets_after_drain(ends, kafka_before, database_before), (
        kafka_before, database_before)


def test_a_database_ahead_of_kafka_offsets_resumes_from_the_database_and_writes_nothing_twice(
        spark, bootstrap_servers, postgres, topic_name, work_dir):
    """A crash between the database's commit and Kafka's leaves ``connect-offsets`` behind the offsets table.
    The next run resumes from the table; as in Connect, a rewind that ``pre_commit`` returns unchanged is not
    written to Kafka, so Kafka's offsets catch up with the next records the task writes."""
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, [(i % 2, _key(i), _value(i, i), []) for i in range(100)])
    table = topic_name.replace("-", "_")[:50] + "_ahead"
    connector = _connector(table, topic_name, postgres, insert_mode="insert")
    worker = _worker(bootstrap_servers, work_dir)
    tps = [TopicPartition(topic_name, p) for p in (0, 1)]
    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
    assert committed_offsets(worker, table) == _stored_offsets(postgres, table) == {tp: 50 for tp in tps}
    store = build_offset_store(WorkerConfig(worker))  # the crash: Kafka's commit of the last 10 never landed
    store.start()
    try:
        store.write(table, {tp: 40 for tp in tps})
    finally:
        store.stop()

    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
    assert _sql(postgres, f'SELECT count(*), count(DISTINCT id) FROM "{table}"') == [(100, 100)]
    assert committed_offsets(worker, table) == {tp: 40 for tp in tps}

    produce(bootstrap_servers, topic_name, [(i % 2, _key(i), _value(i, i), []) for i in range(100, 104)])
    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
    assert _sql(postgres, f'SELECT count(*), count(DISTINCT id) FROM "{table}"') == [(104, 104)]
    assert committed_offsets(worker, table) == _stored_offsets(postgres, table) == {tp: 52 for tp in tps}


def test_driver_mode_writes_from_frames_built_from_records(spark, bootstrap_servers, postgres, topic_name, work_dir):
    """In driver mode the sink (an ArrowSinkTask) gets frames built from records, with their Connect schemas."""
    create_topic(bootstrap_servers, topic_name, 2)
    records = [(k % 2, _key(k), None if k % 10 == 9 else _value(k, k), []) for k in range(60)]
    produce(bootstrap_servers, topic_name, records)
    table = topic_name.replace("-", "_")[:50] + "_drv"
    connector = _connector(table, topic_name, postgres, insert_mode="upsert", pk_mode="record_key",
                           delete_enabled="true")
    worker = worker_properties(bootstrap_servers, work_dir, key_converter=_JSON, value_converter=_JSON,
                               task_execution_mode="driver")
    assert run_standalone(dict(worker), [connector], available_now=True, spark=spark) == 0
    assert dict(_sql(postgres, f'SELECT id, qty FROM "{table}"')) == {k: k for k in range(60) if k % 10 != 9}
    columns = _sql(postgres, "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                             "WHERE table_name = %s ORDER BY ordinal_position", table)
    assert columns == [("id", "bigint", "NO"), ("name", "text", "YES"), ("qty", "integer", "YES"),
                       ("at", "timestamp without time zone", "YES")]
