"""FileStreamSink prints what Apache Kafka Connect itself prints (its standalone worker from the kafka-connect
jars, on the same topic): schemaless maps rebuilt by Flatten, ReplaceField and InsertField in the same entry
order, and the values JsonConverter reads from messages a strict JSON parser refuses (leading zeros, text after
the first value) with the same records refused."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Callable

from connect_spark.config.properties import format_properties
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, produce

TRANSFORMS = {
    "flatten": {"transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Flatten$Value"},
    "replace": {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
                "transforms.r.exclude": "k3x,gone", "transforms.r.renames": "k1x:renamed,nest:nested"},
    "insert": {"transforms": "i", "transforms.i.type": "org.apache.kafka.connect.transforms.InsertField$Value",
               "transforms.i.static.field": "inserted", "transforms.i.static.value": "v",
               "transforms.i.offset.field": "off"},
}


def _values() -> list[dict]:
    """Maps of sizes around the resize points (12/13, 24/25), nested maps, keys with colliding buckets."""
    values = []
    for size in (1, 2, 3, 5, 11, 12, 13, 20, 24, 25, 40):
        value: dict = {f"k{(j * 7919) % 97}x": j for j in range(size)}
        if size % 2:
            value["nest"] = {f"n{j}": j for j in range(size % 7 + 2)}
        values.append(value)
    values.append({str(k): k for k in range(0, 129, 16)})  # nine keys in one bucket of 16
    values.append({"z": {"e": 2, "b": 1}, "a": 0, "é": "x", "\U0001F600": 1})
    return values


def _kafka_connect_lines(bootstrap_servers: str, work_dir, connectors: dict[str, dict[str, str]],
                         complete: Callable[[str, list[str]], bool]) -> dict[str, list[str]]:
    """What Kafka Connect's FileStreamSink writes for each of ``connectors`` (its settings besides the class and
    the file, by name), read once ``complete(name, lines)`` holds for every file."""
    from connect_spark.jvm import KAFKA_CONNECT
    from connect_spark.jvm.java import find_java
    from connect_spark.localkafka import free_port

    work = work_dir / "kafka-connect"
    work.mkdir()
    worker = {"bootstrap.servers": bootstrap_servers,
              "key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false",
              "offset.storage.file.filename": str(work / "offsets"), "offset.flush.interval.ms": "1000",
              "listeners": f"http://127.0.0.1:{free_port()}"}
    files = {}
    command_files = []
    for name, settings in connectors.items():
        files[name] = work / f"{name}.txt"
        props = {"name": f"kc-{name}", "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                 "tasks.max": "1", "file": str(files[name]), **settings}
        path = work / f"{name}.properties"
        path.write_text(format_properties(props))
        command_files.append(str(path))
    (work / "worker.properties").write_text(format_properties(worker))
    log4j = work / "log4j2.properties"
    log4j.write_text("status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
                     "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = %p %m (%c)%n\n"
                     "rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = STDOUT\n")
    command = [find_java(17, "Kafka Connect"), "-Xmx384m", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j2.configurationFile={log4j}", "-cp", str(KAFKA_CONNECT.folder() / "*"),
               "org.apache.kafka.connect.cli.ConnectStandalone", str(work / "worker.properties"), *command_files]
    with open(work / "connect.log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and process.poll() is None:
                if all(f.exists() and complete(n, f.read_text().splitlines()) for n, f in files.items()):
                    break
                time.sleep(0.5)
        finally:
            process.terminate()
            process.wait(30)
    assert all(f.exists() for f in files.values()), (work / "connect.log").read_text()[-3000:]
    return {name: f.read_text().splitlines() for name, f in files.items()}


#: Messages Kafka's JsonConverter reads although they are not one strict JSON document, and some it refuses
#: (each refused record is skipped by ``errors.tolerance=all`` on both sides), then a last one both read.
LENIENT_JSON = [
    b'{"a":1} x', b'{"a":1}}', b'[1] , [2', b"007", b'{"a":01,"b":-00.50}', b"1 2", b'{"a":1}\n{"b":2}',
    b"[00, 01, -007, 01e2, 1e+007]", b"   ", b"1e5 x", b"\xef\xbb\xbf{\"bom\":1}", b'{"nul":1}\x00', b"{}\xff",
    b"true false", b"true]", b'"text" after', b"null x", b"1\t", b'{"01":"02"}', b"",
    b"1x", b"1]", b"truex", b"true1", b"0x1", b"-", b'{"a":1', b"[1,2,]", b"NaN", b'{"a":"x\xffy"}', b"1\xc2\xa0",
    b'{"last":true}',
]
_ENVELOPE = b'{"schema":{"type":"int32","optional":false},"payload":'
LENIENT_ENVELOPES = [_ENVELOPE + b"5} x", _ENVELOPE + b"05}", _ENVELOPE + b"7}{", b"   ", b"", b'{"a":1} x',
                     _ENVELOPE + b"8}"]
#: The last line of each lenient connector's file (the last message above, read by every reader).
LAST_LINES = {"plain": "{last=true}", "envelopes": "8"}


def test_file_stream_sink_prints_what_kafka_connect_prints(spark, bootstrap_servers, topic_name, work_dir):
    """Transformed maps in Kafka Connect's entry order; JSON a strict parser refuses, read as Kafka reads it."""
    from connect_spark.runtime.worker.launcher import run_standalone

    maps, plain, envelopes = f"{topic_name}-maps", f"{topic_name}-plain", f"{topic_name}-envelopes"
    values = _values()
    for topic, messages in ((maps, [json.dumps(v).encode() for v in values]), (plain, LENIENT_JSON),
                            (envelopes, LENIENT_ENVELOPES)):
        create_topic(bootstrap_servers, topic, partitions=1)
        produce(bootstrap_servers, topic, [(0, None, m, []) for m in messages])
    tolerant = {"errors.tolerance": "all", "errors.log.enable": "true"}
    connectors = {
        **{name: {"topics": maps, **transform} for name, transform in TRANSFORMS.items()},
        "plain": {**tolerant, "topics": plain},
        "envelopes": {**tolerant, "topics": envelopes, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter.schemas.enable": "true"},  # (the schemas setting alone would be ignored)
    }
    expected = _kafka_connect_lines(bootstrap_servers, work_dir, connectors, lambda name, lines: (
        len(lines) >= len(values) if name in TRANSFORMS else bool(lines) and lines[-1] == LAST_LINES[name]))
    assert all(len(expected[name]) == len(values) for name in TRANSFORMS)
    assert "{a=1}" in expected["plain"] and "5" in expected["envelopes"]  # Kafka reads past the first value

    worker = worker_properties(bootstrap_servers, work_dir, **{
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    ours = [{"name": f"cs-{name}-{topic_name}", "connector.class": "FileStreamSink", "tasks.max": "1",
             "file": str(work_dir / f"cs-{name}.txt"), **settings} for name, settings in connectors.items()]
    assert run_standalone(worker, ours, available_now=True, spark=spark) == 0
    for name in connectors:
        assert (work_dir / f"cs-{name}.txt").read_text().splitlines() == expected[name], name
