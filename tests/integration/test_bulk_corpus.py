"""The corpus test: seeded ill-shaped topics through every built-in bulk sink and a record task.

One topic of :func:`connect_spark.testing.corpus.ill_shaped_records` (a few seeds, two partitions)
goes through the Delta sink (append, and upsert keyed by the record key), the files sink (Parquet and
JSON lines, in executor generations) and the recording record task, each with ``errors.tolerance=all``
and a dead letter queue. For each: every record is in exactly one place — the sink or the DLQ — except
records whose value is null, which sinks skip on purpose; nothing is written twice; and the committed
offsets reach the end of the topic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.testing.corpus import ill_shaped_records
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce, read_topic
from connect_spark.testing.recording import read_recorded_records

JSON = "org.apache.kafka.connect.json.JsonConverter"
SEEDS = (11, 12, 13)
PER_SEED = 60
PARTITIONS = 2


def _produce_corpus(bootstrap: str, topic: str) -> dict[tuple[int, int], tuple[bytes | None, bytes | None]]:
    """Produce the corpus; returns (partition, offset) → (key, value) as written."""
    create_topic(bootstrap, topic, PARTITIONS)
    pairs = [pair for seed in SEEDS for pair in ill_shaped_records(seed, PER_SEED)]
    produce(bootstrap, topic, ((i % PARTITIONS, key, value, []) for i, (key, value) in enumerate(pairs)))
    written, next_offset = {}, [0] * PARTITIONS
    for i, pair in enumerate(pairs):
        partition = i % PARTITIONS
        written[(partition, next_offset[partition])] = pair
        next_offset[partition] += 1
    return written


def _null_value(value: bytes | None) -> bool:
    return value is None or value.strip() in (b"", b"null")


def _dead_letters(bootstrap: str, dlq: str) -> list[tuple[int, int]]:
    found = []
    for record in read_topic(bootstrap, dlq):
        headers = {k: bytes(v) for k, v in record.headers}
        found.append((int(headers["__connect.errors.partition"]), int(headers["__connect.errors.offset"])))
    return found


def _file_offsets(folder: Path, extension: str) -> list[tuple[int, int]]:
    """(partition, offset) of every record in the published files (one record per file here)."""
    found = []
    for path in sorted(folder.rglob(f"*.{extension}")):
        _, partition, start, end = path.stem.split("+")
        rows = pq.read_table(path).num_rows if extension == "parquet" else len(path.read_text().splitlines())
        assert rows == int(end) - int(start) + 1 == 1
        found.append((int(partition), int(start)))
    return found


SINKS = {
    "delta-append": {"connector.class": "DeltaSink", "delta.column.partition": "_partition",
                     "delta.column.offset": "_offset"},
    "delta-upsert": {"connector.class": "DeltaSink", "delta.column.partition": "_partition",
                     "delta.column.offset": "_offset", "insert.mode": "upsert", "pk.mode": "record_key"},
    "files-parquet": {"connector.class": "FilesSink", "files.format": "parquet", "files.rotate.records": "1"},
    "files-json": {"connector.class": "FilesSink", "files.format": "json", "files.rotate.records": "1"},
    "record-task": {"connector.class": "RecordingSink"},
}


@pytest.mark.parametrize("sink", list(SINKS))
def test_every_corpus_record_is_in_the_sink_or_the_dlq(sink, spark, bootstrap_servers, topic_name, work_dir):
    written = _produce_corpus(bootstrap_servers, topic_name)
    out = Path(work_dir) / "out"
    dlq = f"dlq-{topic_name}"
    connector = {"name": f"{sink}-{topic_name}", "topics": topic_name, **SINKS[sink],
                 "delta.table.path": str(out), "files.dir": str(out), "recording.dir": str(out),
                 "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                 "errors.deadletterqueue.topic.replication.factor": "1",
                 "errors.deadletterqueue.context.headers.enable": "true"}
    connector = {k: v for k, v in connector.items()
                 if not (k.startswith("delta.table") and not sink.startswith("delta"))
                 and not (k == "files.dir" and not sink.startswith("files"))
                 and not (k == "recording.dir" and sink != "record-task")}
    mode = "driver" if sink.startswith("delta") else "executor"
    worker = worker_properties(bootstrap_servers, work_dir, key_converter=JSON, key_converter_schemas_enable="false",
                               value_converter=JSON, value_converter_schemas_enable="false", task_execution_mode=mode)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0

    if sink.startswith("delta"):
        rows = spark.read.format("delta").load(str(out)).select("_partition", "_offset").collect()
        in_sink = [(r["_partition"], r["_offset"]) for r in rows]
    elif sink.startswith("files"):
        in_sink = _file_offsets(out, "parquet" if sink.endswith("parquet") else "jsonl")
    else:
        in_sink = [(r["original"][1], r["original"][2]) for r in read_recorded_records(out)]
    dead = _dead_letters(bootstrap_servers, dlq)
    assert len(in_sink) == len(set(in_sink)), "a record written twice"
    assert len(dead) == len(set(dead)), "a record sent to the DLQ twice"
    assert not set(in_sink) & set(dead), "a record both written and in the DLQ"
    # records that certainly cannot be converted are dead letters
    assert {c for c, (_, v) in written.items() if v in (b"{oops", b"\xff\xfe{\"id\": 1}")} <= set(dead)
    elsewhere = set(written) - set(in_sink) - set(dead)
    if sink == "delta-upsert":
        # superseded records of a key are not rows: each row is the last usable record of its key
        usable = {c for c in written if c not in set(dead) and not _null_value(written[c][1])}
        newest: dict = {}
        for c in usable:
            key = json.loads(written[c][0])
            assert isinstance(key, dict) and key.get("id") is not None, f"{c} has no usable key but was not rejected"
            newest[key["id"]] = max(newest.get(key["id"], -1), c[1])
        table = spark.read.format("delta").load(str(out)).select("id", "_partition", "_offset").collect()
        assert sorted(r["id"] for r in table) == sorted(newest), (sorted(newest), [r.asDict() for r in table])
        for r in table:
            assert r["_offset"] == newest[r["id"]] and (r["_partition"], r["_offset"]) in usable
        elsewhere -= usable
    if sink != "record-task":  # a record task receives tombstones too
        assert all(_null_value(written[c][1]) for c in elsewhere), sorted(c for c in elsewhere if not _null_value(written[c][1]))
    else:
        assert not elsewhere
    ends = end_offsets(bootstrap_servers, topic_name)
    assert result.committed == {TopicPartition(topic_name, p): off for p, off in ends.items()}
