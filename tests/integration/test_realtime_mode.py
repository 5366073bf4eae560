"""task.execution.mode=realtime end to end on Spark 4.2: a real broker, Spark's real-time query, tasks committing
from the executors.

Collected only when the installed pyspark is 4.2 or newer (``tests/conftest.py``; the 4.2 lane runs it,
``.ci/lane-tests.txt``). Records produced after the start arrive; ``connect-offsets`` and the group
``connect-<name>`` hold what ``pre_commit`` returned; a bad record goes to the dead letter queue; and a kill -9
of the worker loses nothing and never leaves a commit ahead of what the sink wrote.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.config.validation import validate_configs
from connect_spark.runtime.worker.standalone import StandaloneWorker
from connect_spark.testing.arrow_recording import read_recorded_frames
from connect_spark.testing.harness import committed_offsets, start_cli, worker_properties
from connect_spark.testing.kafka import create_topic, produce, read_topic, topic_end_offsets
from connect_spark.testing.recording import contiguous_written_offsets, decode_value, read_recorded_records
from connect_spark.testing.waiting import wait_for

STRINGS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.storage.StringConverter"}


def _realtime_worker(bootstrap_servers, work_dir, **extra):
    props = worker_properties(bootstrap_servers, work_dir, trigger="1s", task_execution_mode="realtime", **extra)
    del props["offset.flush.interval.ms"]  # the real-time default (200 ms)
    return props


def _run_in_process(spark, worker_props, connector_props):
    worker, connectors = validate_configs(worker_props, [connector_props])
    standalone = StandaloneWorker(worker, connectors, spark=spark)
    thread = threading.Thread(target=standalone.run, daemon=True)
    thread.start()
    return standalone, thread


def _stop(standalone, thread):
    standalone.request_stop()
    thread.join(120)
    assert not thread.is_alive()
    assert standalone.failures == [], standalone.failures


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _group_offsets(bootstrap_servers, group):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        found = admin.list_group_offsets({group: None}).get(group, {})
    finally:
        admin.close()
    return {TopicPartition(tp.topic, tp.partition): meta.offset for tp, meta in found.items()}


def test_file_sink_in_realtime_mode_delivers_records_produced_after_start_and_commits_them(
        spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, [(i % 2, None, f"before-{i}".encode(), [], None) for i in range(6)])
    out = Path(work_dir) / "out.txt"
    name = f"rt-{topic_name}"
    worker = _realtime_worker(bootstrap_servers, work_dir)
    connector = {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out),
                 "tasks.max": "2", **STRINGS}
    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: len(_lines(out)) >= 6, timeout=240, what="the records produced before the start")
        produce(bootstrap_servers, topic_name, [(i % 2, None, f"after-{i}".encode(), [], None) for i in range(40)])
        wait_for(lambda: len(_lines(out)) >= 46, timeout=120, what="the records produced after the start")
        end = topic_end_offsets(bootstrap_servers, topic_name)
        wait_for(lambda: committed_offsets(worker, name) == end, timeout=60, what="the commits of every record")
        assert _group_offsets(bootstrap_servers, f"connect-{name}") == end
    finally:
        _stop(standalone, thread)
    lines = _lines(out)
    assert sorted(lines) == sorted([f"before-{i}" for i in range(6)] + [f"after-{i}" for i in range(40)])
    for partition in (0, 1):  # each partition's records in offset order
        mine = [line for line in lines if int(line.split("-")[1]) % 2 == partition]
        assert [int(x.split("-")[1]) for x in mine if x.startswith("after")] == list(range(partition, 40, 2))


def test_a_bad_record_goes_to_the_dead_letter_queue_and_its_offset_is_committed(
        spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    dlq = f"{topic_name}-dlq"
    out = Path(work_dir) / "out.txt"
    name = f"rt-dlq-{topic_name}"
    worker = _realtime_worker(bootstrap_servers, work_dir)
    connector = {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out),
                 "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                 "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1",
                 "errors.deadletterqueue.context.headers.enable": "true"}
    produce(bootstrap_servers, topic_name, [(0, None, b'{"n": 0}', [], None)])
    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: len(_lines(out)) >= 1, timeout=240, what="the first record")
        produce(bootstrap_servers, topic_name, [(0, None, value, [], None)
                                                for value in (b'{"n": 1}', b"{not json", b'{"n": 3}')])
        wait_for(lambda: committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 4}, timeout=120,
                 what="the commit past the bad record")
    finally:
        _stop(standalone, thread)
    assert _lines(out) == ["{n=0}", "{n=1}", "{n=3}"]
    [letter] = read_topic(bootstrap_servers, dlq)
    assert letter.value == b"{not json"
    headers = dict(letter.headers)
    assert headers["__connect.errors.topic"] == topic_name.encode()
    assert headers["__connect.errors.offset"] == b"2"


def test_an_arrow_task_in_realtime_mode_gets_frames_of_the_records_as_they_arrive(
        spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    out = Path(work_dir) / "frames"
    name = f"rt-arrow-{topic_name}"
    worker = _realtime_worker(bootstrap_servers, work_dir)
    connector = {"name": name, "connector.class": "connect_spark.testing.arrow_recording.RecordingArrowSinkConnector",
                 "topics": topic_name, "recording.dir": str(out), **STRINGS}

    def values():
        return [row["value"] for frame in read_recorded_frames(out) for row in frame.to_pylist()] if out.exists() else []

    produce(bootstrap_servers, topic_name, [(0, b"k", b"first", [], None)])
    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: values() == ["first"], timeout=240, what="the first frame")
        produce(bootstrap_servers, topic_name, [(0, b"k", f"v{i}".encode(), [], None) for i in range(9)])
        wait_for(lambda: len(values()) >= 10, timeout=120, what="the frames of the records produced after the start")
        wait_for(lambda: committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 10}, timeout=60,
                 what="the commit of every record")
    finally:
        _stop(standalone, thread)
    assert values() == ["first"] + [f"v{i}" for i in range(9)]


def test_the_jdbc_sink_in_realtime_mode_writes_every_row_once_and_commits_them(
        spark, bootstrap_servers, topic_name, work_dir, postgres):
    import json

    import psycopg

    create_topic(bootstrap_servers, topic_name, 2)
    name = f"rt_jdbc_{topic_name.replace('-', '_')}"[:60]
    schema = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int64", "optional": False},
                                                             {"field": "name", "type": "string", "optional": True}]}

    def records(ids):
        return [(i % 2, None, json.dumps({"schema": schema, "payload": {"id": i, "name": f"n{i}"}}).encode(), [], None)
                for i in ids]

    def rows():
        with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (f'"{name}"',)).fetchone()[0]
            return conn.execute(f'SELECT id, name FROM "{name}" ORDER BY id').fetchall() if exists else []

    worker = _realtime_worker(bootstrap_servers, work_dir, key_converter="org.apache.kafka.connect.json.JsonConverter",
                              value_converter="org.apache.kafka.connect.json.JsonConverter")
    connector = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic_name,
                 "tasks.max": "2", "connection.url": postgres.jdbc_url(), "table.name.format": name,
                 "auto.create": "true"}
    produce(bootstrap_servers, topic_name, records(range(10)))
    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: len(rows()) >= 10, timeout=240, what="the rows produced before the start")
        produce(bootstrap_servers, topic_name, records(range(10, 40)))
        wait_for(lambda: len(rows()) >= 40, timeout=120, what="the rows produced after the start")
        end = topic_end_offsets(bootstrap_servers, topic_name)
        wait_for(lambda: committed_offsets(worker, name) == end, timeout=60, what="the commits of every row")
    finally:
        _stop(standalone, thread)
    assert rows() == [(i, f"n{i}") for i in range(40)]


def test_a_clean_stop_commits_what_was_put_and_the_next_start_delivers_nothing_again(
        spark, bootstrap_servers, topic_name, work_dir):
    """Batches of 6 s and a commit tick longer than the test: only batch ends (and the stop) commit. Records of
    ~1 KB reach the task while the first batch runs (Spark hands rows over per ``spark.buffer.size``), the
    recording sink writes each ``put`` at once, and the stop comes as soon as the first one is written."""
    create_topic(bootstrap_servers, topic_name, 2)
    out = Path(work_dir) / "out"
    name = f"rt-stop-{topic_name}"
    worker = {**_realtime_worker(bootstrap_servers, work_dir), "trigger": "6s", "offset.flush.interval.ms": "600000"}
    connector = {"name": name, "connector.class": "RecordingSink", "topics": topic_name, "recording.dir": str(out),
                 "tasks.max": "2"}
    pad = "x" * 1000

    def values(label, count):
        return [f"{label}-{i}-{pad}" for i in range(count)]

    def written():
        return sorted(decode_value(r["value"]).decode() for r in read_recorded_records(out))

    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: standalone.runners and all(r.query is not None for r in standalone.runners),
                 timeout=240, what="the query")
        produce(bootstrap_servers, topic_name, [(i % 2, None, v.encode(), [], None)
                                                for i, v in enumerate(values("first", 40))])
        wait_for(lambda: len(written()) >= 1, timeout=120, what="the first record written")
    finally:
        _stop(standalone, thread)
    end = topic_end_offsets(bootstrap_servers, topic_name)
    assert written() == sorted(values("first", 40))
    assert _group_offsets(bootstrap_servers, f"connect-{name}") == end
    assert committed_offsets(worker, name) == end

    produce(bootstrap_servers, topic_name, [(i % 2, None, v.encode(), [], None)
                                            for i, v in enumerate(values("second", 6))])
    standalone, thread = _run_in_process(spark, worker, connector)
    try:
        wait_for(lambda: len(written()) >= 46, timeout=240, what="the records produced between the runs")
    finally:
        _stop(standalone, thread)
    assert written() == sorted(values("first", 40) + values("second", 6))  # none delivered twice
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


PARTITIONS = 2
TOTAL = 6_000
CHUNK = 150


def test_kill_minus_nine_of_a_realtime_worker_loses_nothing_and_never_commits_ahead_of_writes(
        bootstrap_servers, topic_name, work_dir):
    """A buffering task (writes in chunks, ``pre_commit`` returns what was written, ``close`` drops its buffer):
    every batch end leaves records put but not committed, which the next attempt re-reads; kill -9 twice."""
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    name = f"rt-chaos-{topic_name}"
    out = Path(work_dir) / "out"
    connector = {"name": name, "connector.class": "RecordingSink", "topics": topic_name, "recording.dir": str(out),
                 "recording.commit.every": str(CHUNK), "tasks.max": str(PARTITIONS)}
    worker = _realtime_worker(bootstrap_servers, work_dir, spark_master="local[2]", spark_ui_enabled="false")

    def producer():  # ~500 records/s for ~12 s: the kills fall while records flow
        for start in range(0, TOTAL, 100):
            produce(bootstrap_servers, topic_name, (
                (i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), [], None) for i in range(start, start + 100)))
            time.sleep(0.2)

    feeding = threading.Thread(target=producer, daemon=True)
    feeding.start()
    rng = random.Random(11)
    for kill in range(2):
        proc = start_cli(worker, connector, work_dir, log_name=f"cli-{kill}.log")
        try:
            before = len(read_recorded_records(out))
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and len(read_recorded_records(out)) <= before:
                assert proc.poll() is None, f"the worker exited with {proc.returncode}"
                if not feeding.is_alive() and time.monotonic() > deadline - 200:
                    break  # nothing more comes: this kill falls on an idle worker
                time.sleep(0.3)
            time.sleep(rng.uniform(0.3, 2.5))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        committed = committed_offsets(worker, name)
        safe = contiguous_written_offsets(read_recorded_records(out))
        for tp, offset in committed.items():
            assert offset <= safe.get(tp, 0), f"kill {kill}: {tp} committed {offset} beyond what was written"
    feeding.join(300)

    # A last run takes everything left: every full chunk is written and committed.
    end = topic_end_offsets(bootstrap_servers, topic_name)
    proc = start_cli(worker, connector, work_dir, log_name="cli-last.log")
    try:
        wait_for(lambda: all(end[tp] - committed_offsets(worker, name).get(tp, 0) < CHUNK for tp in end),
                 timeout=300, what="the commits of every full chunk")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    records = read_recorded_records(out)
    committed = committed_offsets(worker, name)
    safe = contiguous_written_offsets(records)
    assert all(committed[tp] <= safe.get(tp, 0) for tp in committed), (committed, safe)
    keys = {decode_value(r["key"]) for r in records}
    for i in range(TOTAL):
        tp = TopicPartition(topic_name, i % PARTITIONS)
        if i // PARTITIONS < committed.get(tp, 0):
            assert f"k{i}".encode() in keys, f"k{i} missing although its offset was committed"
    assert sum(committed.values()) > TOTAL - PARTITIONS * CHUNK
