"""Issue 6 acceptance: Delta ``auto.evolve`` on a field added mid-stream, and FileStreamSink parity with Kafka Connect.

The parity test runs Apache Kafka Connect's own ``ConnectStandalone`` (the ``kafka-connect`` jars) with
Kafka's ``connect-file-sink.properties`` content, then connect_spark with the same file on the same topic,
and compares the two output files byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import format_properties
from connect_spark.testing.harness import cli_command, committed_offsets, run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce

_JSON = "org.apache.kafka.connect.json.JsonConverter"
_STRING = "org.apache.kafka.connect.storage.StringConverter"

OLD_RECORDS = 300
NEW_RECORDS = 100
BATCH = 100


def _evolve_worker(bootstrap, work_dir):
    return worker_properties(bootstrap, work_dir, key_converter=_STRING, value_converter=_JSON,
                             value_converter_schemas_enable="false", max_offsets_per_trigger=BATCH,
                             trigger="200ms", offset_flush_interval_ms=200, spark_master="local[2]",
                             spark_ui_enabled="false")


def _produce_old_then_new(bootstrap, topic):
    """``OLD_RECORDS`` records with fields id, amount, then ``NEW_RECORDS`` that also carry ``coupon``."""
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ((0, None, json.dumps({"id": i, "amount": i * 10}).encode(), [])
                               for i in range(OLD_RECORDS)))
    produce(bootstrap, topic, ((0, None, json.dumps({"id": i, "amount": i * 10, "coupon": f"c{i}"}).encode(), [])
                               for i in range(OLD_RECORDS, OLD_RECORDS + NEW_RECORDS)))


def _delta_connector(name, topic, table, auto_evolve):
    return {"name": name, "connector.class": "DeltaSink", "topics": topic, "delta.table.path": table,
            "delta.column.offset": "_offset", "auto.evolve": auto_evolve}


def test_a_field_added_mid_stream_becomes_a_column_with_auto_evolve(spark, bootstrap_servers, topic_name, work_dir):
    _produce_old_then_new(bootstrap_servers, topic_name)
    table = str(Path(work_dir) / "evolving")
    connector = _delta_connector(f"evolve-{topic_name}", topic_name, table, "true")
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_evolve_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 0
    frame = spark.read.format("delta").load(table)
    assert "coupon" in frame.columns
    rows = {r["id"]: (r["amount"], r["coupon"], r["_offset"]) for r in frame.collect()}
    assert len(rows) == frame.count() == OLD_RECORDS + NEW_RECORDS
    assert all(rows[i] == (i * 10, None, i) for i in range(OLD_RECORDS)), "older rows must have a null coupon"
    assert all(rows[i] == (i * 10, f"c{i}", i) for i in range(OLD_RECORDS, OLD_RECORDS + NEW_RECORDS))
    # The field arrived in a later batch than the first rows: the column was added by evolving the table.
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()
    assert len(history) >= 2
    assert result.committed == {TopicPartition(topic_name, 0): OLD_RECORDS + NEW_RECORDS}


def test_a_field_added_mid_stream_fails_the_cli_without_auto_evolve(spark, bootstrap_servers, topic_name, work_dir):
    _produce_old_then_new(bootstrap_servers, topic_name)
    table = str(Path(work_dir) / "strict")
    name = f"strict-{topic_name}"
    worker = _evolve_worker(bootstrap_servers, work_dir)
    log_file = Path(work_dir) / "cli.log"
    with open(log_file, "wb") as log:
        completed = subprocess.run(cli_command(worker, _delta_connector(name, topic_name, table, "false"), work_dir,
                                               available_now=True),
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=400)
    output = log_file.read_text(errors="replace")
    assert completed.returncode not in (0, None), output[-3000:]
    assert "coupon" in output and "auto.evolve" in output, output[-3000:]
    # Every good batch (the old records, in batches of BATCH) is in the table; nothing of the new field.
    frame = spark.read.format("delta").load(table)
    assert "coupon" not in frame.columns
    assert sorted(r["_offset"] for r in frame.select("_offset").collect()) == list(range(OLD_RECORDS))
    committed = committed_offsets(worker, name).get(TopicPartition(topic_name, 0), 0)
    assert committed <= OLD_RECORDS, f"committed {committed}, past the last good batch ({OLD_RECORDS})"


# --- FileStreamSink parity with Apache Kafka Connect -----------------------------------------------

# Values as JSON documents: JsonConverter (schemas.enable=false) turns them into Java objects, which
# FileStreamSinkTask prints with String.valueOf. Null values are tombstones.
PARITY_VALUES = [
    '"hello"', '""', '"naïve ünïcode ✓ 𝄞"', '"with, comma = and {braces}"',
    "42", "-7", "0", "123456789012", "3.5", "0.1", "-0.0", "1e20", "1.0E-5", "2.5e-3", "100.0",
    "true", "false",
    '{"a": 1, "b": "x"}', '{"order_id": 17, "amount": 12.5, "note": "n17", "tags": ["x", "y"], "ok": true}',
    '{"z": 1, "y": 2, "x": 3, "w": 4, "v": 5, "u": 6, "t": 7, "s": 8, "r": 9, "q": 10, "p": 11, "o": 12, "n": 13}',
    '{"nested": {"inner": {"deep": [1, 2.0, null, "s"]}}, "empty": {}, "list": []}',
    '{"k": null}', '{}', "[]", '[1, "two", 3.0, {"four": 4}, [5]]',
    None, "null",
]


def _parity_records(topic):
    for round_ in range(3):
        for i, value in enumerate(PARITY_VALUES):
            key = f"k{round_}-{i}".encode()
            yield (0, key, None if value is None else value.encode(), [])


def _start_kafka_connect(bootstrap, topic, work: Path, sink_file: Path) -> subprocess.Popen:
    """Apache Kafka Connect's standalone worker with Kafka's connect-file-sink.properties content."""
    from connect_spark.jvm import KAFKA_CONNECT
    from connect_spark.jvm.java import find_java
    from connect_spark.localkafka import free_port

    work.mkdir(parents=True, exist_ok=True)
    worker = {"bootstrap.servers": bootstrap, "key.converter": _STRING, "value.converter": _JSON,
              "value.converter.schemas.enable": "false", "offset.storage.file.filename": str(work / "connect.offsets"),
              "offset.flush.interval.ms": "500", "listeners": f"http://127.0.0.1:{free_port()}"}
    connector = {"name": "local-file-sink", "connector.class": "FileStreamSink", "tasks.max": "1",
                 "file": str(sink_file), "topics": topic}
    (work / "worker.properties").write_text(format_properties(worker))
    (work / "connect-file-sink.properties").write_text(format_properties(connector))
    (work / "log4j2.properties").write_text(
        "status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
        "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = STDOUT\n")
    command = [find_java(17, "Kafka Connect"), "-Xmx256m", "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
               "-cp", str(KAFKA_CONNECT.folder() / "*"), "org.apache.kafka.connect.cli.ConnectStandalone",
               str(work / "worker.properties"), str(work / "connect-file-sink.properties")]
    log = open(work / "connect.log", "wb")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_file_stream_sink_writes_the_file_kafka_connect_writes(spark, bootstrap_servers, topic_name, work_dir):
    # One partition: the line order is the offset order on both sides, so the files compare byte for byte.
    create_topic(bootstrap_servers, topic_name, 1)
    expected_lines = produce(bootstrap_servers, topic_name, _parity_records(topic_name))
    work = Path(work_dir)
    connect_file = work / "kafka-connect" / "test.sink.txt"
    connect = _start_kafka_connect(bootstrap_servers, topic_name, work / "kafka-connect", connect_file)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and _line_count(connect_file) < expected_lines and connect.poll() is None:
            time.sleep(0.5)
        log_tail = (work / "kafka-connect" / "connect.log").read_text(errors="replace")[-3000:]
        assert _line_count(connect_file) == expected_lines, log_tail
    finally:
        connect.terminate()
        try:
            connect.wait(30)
        except subprocess.TimeoutExpired:
            connect.kill()
            connect.wait(30)

    ours_file = work / "connect-spark" / "test.sink.txt"
    ours_file.parent.mkdir(parents=True, exist_ok=True)
    worker = worker_properties(bootstrap_servers, work / "connect-spark", key_converter=_STRING, value_converter=_JSON,
                               value_converter_schemas_enable="false")
    connector = {"name": "local-file-sink", "connector.class": "FileStreamSink", "tasks.max": "1",
                 "file": str(ours_file), "topics": topic_name}
    assert run_connector(connector, bootstrap_servers, work / "connect-spark", spark=spark,
                         worker=worker).exit_code == 0
    theirs, ours = connect_file.read_bytes(), ours_file.read_bytes()
    assert theirs.count(b"\n") == expected_lines
    assert ours == theirs, _first_difference(ours, theirs)


def _first_difference(ours: bytes, theirs: bytes) -> str:
    for number, (a, b) in enumerate(zip(ours.splitlines(), theirs.splitlines()), 1):
        if a != b:
            return f"line {number}: connect_spark wrote {a!r}, Kafka Connect wrote {b!r}"
    return f"connect_spark wrote {len(ours.splitlines())} lines, Kafka Connect {len(theirs.splitlines())}"


def test_negative_zero_prints_as_kafka_connect_prints_it():
    """Found by the parity run above: Kafka Connect reads JSON numbers as BigDecimal (no negative zero) and
    writes ``0.0`` for ``-0.0`` (fixed on main in the JsonConverter; kept here without a JVM)."""
    from connect_spark.connectors.file import java_string
    from connect_spark.converters.json import JsonConverter

    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    value = converter.to_connect_data("t", b"-0.0").value
    assert java_string(value) == "0.0"
