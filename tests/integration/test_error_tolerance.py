"""Issue 4 acceptance: a bad-input corpus through the real runtime (real broker, real Spark, driver mode).

Every record carries a ``case`` header saying what it is, so the assertions can tell good from bad by
reading the source topic back (coordinates included) instead of guessing offsets.

* ``errors.tolerance=all`` with a dead letter queue: two connectors in one run (one per JSON converter
  setting). Every bad record is in its DLQ with its original key, value and headers and Kafka
  Connect's ``__connect.errors.*`` headers; every good record reached the recording task; committed
  offsets cover every record; good + DLQ = produced.
* ``errors.tolerance=none`` through the real CLI: the task fails on the first bad record, naming
  ``topic[partition]@offset``, the stage and the class; nothing after it is committed; exit code 1.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from kafka import KafkaConsumer
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.testing.harness import cli_command, committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce
from connect_spark.testing.recording import decode_value, read_recorded_records

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
TRANSFORMS = "org.apache.kafka.connect.transforms."
DATA_EXCEPTION = "connect_spark.api.errors.DataException"
BIG = 1_200_000  # over Kafka's default 1 MB message size
MAX_MESSAGE = str(4 * 1024 * 1024)
CONTEXT_HEADERS = [
    "__connect.errors.topic", "__connect.errors.partition", "__connect.errors.offset",
    "__connect.errors.connector.name", "__connect.errors.task.id", "__connect.errors.stage",
    "__connect.errors.class.name", "__connect.errors.exception.class.name",
    "__connect.errors.exception.message", "__connect.errors.exception.stacktrace",
]

# case → (stage, executing class) for the bad records of the schemaless connector; "good" is delivered
SCHEMALESS_FAILURES = {
    "malformed-json": ("VALUE_CONVERTER", JSON),
    "big-malformed-json": ("VALUE_CONVERTER", JSON),
    "cast-wrong-type": ("TRANSFORMATION", TRANSFORMS + "Cast$Value"),
    "null-into-value-to-key": ("TRANSFORMATION", TRANSFORMS + "ValueToKey"),
    "null-into-mask-field": ("TRANSFORMATION", TRANSFORMS + "MaskField$Value"),
    "invalid-utf8-key": ("KEY_CONVERTER", STRING),
    "binary-garbage-header": ("HEADER_CONVERTER", STRING),
}
ENVELOPE_FAILURES = {
    "no-envelope": ("VALUE_CONVERTER", JSON),
    "envelope-with-extra-field": ("VALUE_CONVERTER", JSON),
}


def _case(name: str, *more: tuple[str, bytes]) -> list[tuple[str, bytes]]:
    return [("case", name.encode()), *more]


def _order(i: int, **extra) -> bytes:
    return json.dumps({"id": i, "amount": str(i * 10), "secret": f"s{i}", **extra}).encode()


def _schemaless_corpus() -> list[tuple]:
    """``(partition, key, value, headers)``: good orders mixed with every kind of bad input."""
    records = []
    for i in range(12):
        records.append((i % 2, f"k{i}".encode(), _order(i), _case("good", ("source", b"web"))))
    bad = [
        (0, b"k-bad1", b'{"id": 100, "amount": ', _case("malformed-json")),
        (1, b"k-bad2", b'{"id": 101, "amount": "abc", "secret": "x"}', _case("cast-wrong-type")),
        (0, b"k-bad3", None, _case("null-into-value-to-key")),
        (1, b"k-bad4", None, _case("null-into-mask-field", ("mask-only", b"1"))),
        (0, b"\xc3\x28", _order(104), _case("invalid-utf8-key")),
        (1, b"k-bad6", _order(105), _case("binary-garbage-header", ("trace", b"\x00\xff\xfe\x80"))),
        (0, b"k-bad7", b'{"blob": "' + b"x" * BIG, _case("big-malformed-json")),
    ]
    big_good = (1, b"k-big", _order(200, blob="y" * BIG), _case("good"))
    # interleave: the bad ones and the big good one between good records
    for n, record in enumerate([*bad, big_good]):
        records.insert(1 + 2 * n, record)
    return records


def _envelope_corpus() -> list[tuple]:
    schema = {"type": "string", "optional": False}
    good = [(0, f"e{i}".encode(), json.dumps({"schema": schema, "payload": f"hello {i}"}).encode(), _case("good"))
            for i in range(4)]
    good.append((0, b"e-tombstone", None, _case("good")))  # a tombstone converts to null, as in Kafka
    bad = [
        (0, b"e-bad1", b'{"id": 1}', _case("no-envelope")),
        (0, b"e-bad2", json.dumps({"schema": schema, "payload": "x", "extra": 1}).encode(),
         _case("envelope-with-extra-field")),
    ]
    return [good[0], bad[0], good[1], good[2], bad[1], good[3], good[4]]


def _read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 60.0) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             fetch_max_bytes=16 * 1024 * 1024, max_partition_fetch_bytes=8 * 1024 * 1024)
    try:
        partitions = [KafkaTopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: list = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def _headers(record) -> list[tuple[str, bytes]]:
    return [(k, bytes(v) if v is not None else b"") for k, v in record.headers]


def _case_of(record) -> str:
    return dict(_headers(record))["case"].decode()


def _connector(name: str, topic: str, dlq: str, work_dir: Path, **extra: str) -> dict[str, str]:
    props = {
        "name": name,
        "connector.class": "RecordingSink",
        "topics": topic,
        "recording.dir": str(work_dir / name),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "header.converter": "org.apache.kafka.connect.storage.StringConverter",
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
        "producer.override.max.request.size": MAX_MESSAGE,
    }
    props.update(extra)
    return props


def _check_dlq(bootstrap: str, topic: str, dlq: str, connector: str, source: list, failures: dict,
               task_of_partition) -> list:
    """Every bad record of ``source`` is in ``dlq``, as consumed, with Kafka Connect's context headers."""
    bad = {(r.partition, r.offset): r for r in source if _case_of(r) != "good"}
    written = _read_topic(bootstrap, dlq, len(bad))
    assert len(written) == len(bad)
    for record in written:
        headers = _headers(record)
        context = dict(headers)
        original = bad[(int(context["__connect.errors.partition"]), int(context["__connect.errors.offset"]))]
        case = _case_of(original)
        stage, executing_class = failures[case]
        assert (record.key, record.value) == (original.key, original.value), case
        assert headers[: len(original.headers)] == _headers(original), case
        assert [k for k, _ in headers[len(original.headers):]] == CONTEXT_HEADERS, case
        assert context["__connect.errors.topic"] == topic.encode()
        assert context["__connect.errors.connector.name"] == connector.encode()
        assert context["__connect.errors.task.id"] == str(task_of_partition(original.partition)).encode()
        assert (context["__connect.errors.stage"].decode(), context["__connect.errors.class.name"].decode()) == \
            (stage, executing_class), case
        assert context["__connect.errors.exception.class.name"] == DATA_EXCEPTION.encode(), case
        message = context["__connect.errors.exception.message"].decode()
        assert message, case
        trace = context["__connect.errors.exception.stacktrace"].decode()
        assert trace.startswith("Traceback (most recent call last):") and \
            trace.rstrip().endswith(f"{DATA_EXCEPTION}: {message}"), case
    assert {(int(dict(_headers(r))["__connect.errors.partition"]), int(dict(_headers(r))["__connect.errors.offset"]))
            for r in written} == set(bad)
    return written


def test_tolerance_all_sends_every_bad_record_to_the_dlq_and_delivers_every_good_one(spark, bootstrap_servers,
                                                                                    topic_name, work_dir):
    plain, envelope = f"{topic_name}-plain", f"{topic_name}-env"
    plain_dlq, envelope_dlq = f"{plain}-dlq", f"{envelope}-dlq"
    create_topic(bootstrap_servers, plain, 2, config={"max.message.bytes": MAX_MESSAGE})
    create_topic(bootstrap_servers, plain_dlq, 1, config={"max.message.bytes": MAX_MESSAGE})
    create_topic(bootstrap_servers, envelope, 1)
    produced_plain = produce(bootstrap_servers, plain, _schemaless_corpus())
    produced_envelope = produce(bootstrap_servers, envelope, _envelope_corpus())
    plain_source = _read_topic(bootstrap_servers, plain, produced_plain)
    envelope_source = _read_topic(bootstrap_servers, envelope, produced_envelope)
    assert (len(plain_source), len(envelope_source)) == (produced_plain, produced_envelope)

    schemaless = _connector(
        f"plain-{topic_name}", plain, plain_dlq, work_dir,
        **{
            "tasks.max": "2",
            "value.converter.schemas.enable": "false",
            "transforms": "cast,toKey,mask",
            "transforms.cast.type": TRANSFORMS + "Cast$Value",
            "transforms.cast.spec": "amount:int32",
            "transforms.toKey.type": TRANSFORMS + "ValueToKey",
            "transforms.toKey.fields": "id",
            "transforms.toKey.predicate": "maskOnly",
            "transforms.toKey.negate": "true",
            "transforms.mask.type": TRANSFORMS + "MaskField$Value",
            "transforms.mask.fields": "secret",
            "predicates": "maskOnly",
            "predicates.maskOnly.type": TRANSFORMS + "predicates.HasHeaderKey",
            "predicates.maskOnly.name": "mask-only",
        },
    )
    enveloped = _connector(f"env-{topic_name}", envelope, envelope_dlq, work_dir,
                           **{"value.converter.schemas.enable": "true"})
    worker = worker_properties(bootstrap_servers, work_dir)
    assert run_standalone(worker, [schemaless, enveloped], available_now=True, spark=spark) == 0

    # schemaless: the DLQ, then what the task received
    plain_dlq_records = _check_dlq(bootstrap_servers, plain, plain_dlq, schemaless["name"], plain_source,
                                   SCHEMALESS_FAILURES, task_of_partition=lambda p: p)
    assert {_case_of(r) for r in plain_dlq_records} == set(SCHEMALESS_FAILURES)
    delivered = read_recorded_records(work_dir / schemaless["name"])
    good = {(r.partition, r.offset): r for r in plain_source if _case_of(r) == "good"}
    assert sorted(tuple(r["original"][1:]) for r in delivered) == sorted(good)
    assert len(delivered) + len(plain_dlq_records) == produced_plain
    for record in delivered:
        value = decode_value(record["value"])
        original = json.loads(good[tuple(record["original"][1:])].value)
        assert decode_value(record["key"]) == {"id": original["id"]}  # ValueToKey
        assert value["amount"] == int(original["amount"])  # Cast
        assert value["secret"] == ""  # MaskField
        assert len(value.get("blob", "")) in (0, BIG)
    assert sum(1 for r in delivered if "blob" in decode_value(r["value"])) == 1  # the 1.2 MB record arrived
    assert committed_offsets(worker, schemaless["name"]) == {
        TopicPartition(plain, p): end for p, end in end_offsets(bootstrap_servers, plain).items()}

    # schemas.enable=true: records without the envelope go to the DLQ
    envelope_dlq_records = _check_dlq(bootstrap_servers, envelope, envelope_dlq, enveloped["name"], envelope_source,
                                      ENVELOPE_FAILURES, task_of_partition=lambda p: 0)
    delivered = read_recorded_records(work_dir / enveloped["name"])
    assert [decode_value(r["value"]) for r in delivered] == ["hello 0", "hello 1", "hello 2", "hello 3", None]
    assert len(delivered) + len(envelope_dlq_records) == produced_envelope
    assert committed_offsets(worker, enveloped["name"]) == {TopicPartition(envelope, 0): produced_envelope}


def test_tolerance_none_fails_the_cli_on_the_first_bad_record_and_commits_nothing_after_it(bootstrap_servers,
                                                                                         topic_name, work_dir):
    dlq = f"{topic_name}-dlq"
    create_topic(bootstrap_servers, topic_name, 1)
    records = [(0, f"k{i}".encode(), _order(i), _case("good")) for i in range(10)]
    records[5] = (0, b"k5", b"{not json", _case("malformed-json"))
    records[7] = (0, b"k7", b"[also not json", _case("malformed-json"))
    produce(bootstrap_servers, topic_name, records)
    name = f"none-{topic_name}"
    worker = worker_properties(bootstrap_servers, work_dir, max_offsets_per_trigger=3, spark_master="local[1]",
                               spark_ui_enabled="false")
    connector = _connector(name, topic_name, dlq, work_dir,
                           **{"errors.tolerance": "none", "value.converter.schemas.enable": "false"})
    proc = subprocess.run(cli_command(worker, connector, work_dir, available_now=True), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    failure = next((line for line in proc.stderr.splitlines() if "Tolerance exceeded" in line), "")
    assert f"{topic_name}[0]@5" in failure, proc.stderr[-3000:]
    assert "VALUE_CONVERTER" in failure and JSON in failure
    # batches of 3: [0, 3) was delivered and committed; the batch holding offset 5 never was
    assert committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 3}
    assert [r["offset"] for r in read_recorded_records(work_dir / name)] == [0, 1, 2]
    # the poison record was reported before the task failed, and flushed when it shut down
    [poison] = _read_topic(bootstrap_servers, dlq, 1, timeout=10)
    assert (poison.value, dict(_headers(poison))["__connect.errors.offset"]) == (b"{not json", b"5")
