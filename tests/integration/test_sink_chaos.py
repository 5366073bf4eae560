"""Issue 6 acceptance: the Delta and Parquet files sinks under kill -9, then drained; nothing lost, nothing twice.

One ``connect-spark standalone`` process runs three connectors on the same topic (one Spark query each):
Delta append, Delta upsert+delete, and the Parquet files sink in executor mode. It is killed with SIGKILL at
three random moments (each after the run has written something) and restarted; then an AvailableNow run
drains the topic. What the tables and files must hold is computed independently from what was produced.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import format_properties
from connect_spark.connectors.delta.ledger import read_stored_offsets
from connect_spark.connectors.delta.target import TableTarget
from connect_spark.testing.harness import cli_command, committed_offsets, offsets_after_drain, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce

PARTITIONS = 4
VALUES = 100_000
TOMBSTONE_EVERY = 101  # every 101st record is a tombstone: 1,000 of them beside the 100,000 values
TOTAL = VALUES + VALUES // (TOMBSTONE_EVERY - 1)
KEYS = 10_000
KILLS = 3
ROTATE = 1_000
_JSON = "org.apache.kafka.connect.json.JsonConverter"


class Produced:
    """The records, generated once: per partition (partition, key id, seq or None for a tombstone) in offset order."""

    def __init__(self, seed: int = 6) -> None:
        rng = random.Random(seed)
        self.records: list[tuple[int, int, int | None]] = []
        self.by_partition: dict[int, list[tuple[int, int | None]]] = {p: [] for p in range(PARTITIONS)}
        seq = 0
        for i in range(TOTAL):
            key = rng.randrange(KEYS)
            partition = key % PARTITIONS  # one key, one partition: the offset order is the write order
            value = None if i % TOMBSTONE_EVERY == TOMBSTONE_EVERY - 1 else seq
            if value is not None:
                seq += 1
            self.records.append((partition, key, value))
            self.by_partition[partition].append((key, value))
        assert seq == VALUES

    def kafka_records(self):
        for partition, key, seq in self.records:
            value = None if seq is None else json.dumps({"id": key, "seq": seq}).encode()
            yield partition, json.dumps({"id": key}).encode(), value, []

    def appended(self) -> set[tuple[int, int, int]]:
        """(partition, offset, seq) of every value record: what append mode must hold."""
        return {(p, offset, seq) for p, rows in self.by_partition.items()
                for offset, (_, seq) in enumerate(rows) if seq is not None}

    def last_value_per_key(self) -> dict[int, int]:
        """Key id → seq of its last record, keys whose last record is a tombstone left out."""
        state: dict[int, int | None] = {}
        for _, key, seq in self.records:
            state[key] = seq
        return {k: v for k, v in state.items() if v is not None}


def _start_cli(worker, connectors, work_dir: Path, log_name: str, available_now: bool = False) -> subprocess.Popen:
    """``connect-spark standalone WORKER C1 C2 C3`` as a child process, output to ``work_dir/log_name``."""
    command = cli_command(worker, connectors[0], work_dir, available_now=available_now)
    for connector in connectors[1:]:
        path = work_dir / f"{connector['name']}.properties"
        path.write_text(format_properties(connector))
        command.append(str(path))
    log = open(work_dir / log_name, "ab")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _published_files(out: Path, topic: str) -> list[tuple[int, int, int, Path]]:
    """(partition, first offset, last offset, path) of every published Parquet file."""
    files = []
    for path in (out / topic).glob("*.parquet") if (out / topic).exists() else []:
        if path.name.startswith("."):
            continue  # a temporary file (a kill -9 can leave one behind)
        name_topic, partition, first, last = path.stem.rsplit("+", 3)
        assert name_topic == topic
        files.append((int(partition), int(first), int(last), path))
    return sorted(files)


def _published_ends(files, topic: str) -> dict[TopicPartition, int]:
    """Per partition, the offset after its last published file: where the files sink resumes."""
    ends: dict[TopicPartition, int] = {}
    for partition, _, last, _ in files:
        tp = TopicPartition(topic, partition)
        ends[tp] = max(ends.get(tp, 0), last + 1)
    return ends


def _delta_offsets(spark, table: Path, connector_name: str) -> dict[TopicPartition, int]:
    """The offsets the Delta sink stored in its latest commit to ``table``: where it resumes."""
    if not (table / "_delta_log").exists():
        return {}
    return read_stored_offsets(spark, TableTarget(path=str(table)), connector_name).offsets


def _after_drain(connector, expected, committed_before, held_before) -> dict[TopicPartition, int]:
    """What the drain must leave in the offset store for ``connector`` (see ``offsets_after_drain``)."""
    name = connector["name"]
    return offsets_after_drain(expected, committed_before[name], held_before[name])


def _delta_commits(*tables: Path) -> int:
    return sum(len(list((t / "_delta_log").glob("*.json"))) if (t / "_delta_log").exists() else 0 for t in tables)


def _progress(kill: int, append_table: Path, upsert_table: Path, files_out: Path, topic: str) -> int:
    """What the run has written so far: Delta commits on even kills, published files on odd ones, so the
    kills land in the middle of both sinks' work."""
    if kill % 2 == 0:
        return _delta_commits(append_table, upsert_table)
    return len(_published_files(files_out, topic))


def _check_files_commits(files, committed: dict[TopicPartition, int], produced: Produced, topic: str, when: str):
    """Every value record below a committed offset of the files sink is in a published file."""
    covered: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
    for partition, first, last, _ in files:
        covered[partition].append((first, last))
    for p in range(PARTITIONS):
        upto = committed.get(TopicPartition(topic, p), 0)
        ranges = sorted(covered[p])
        i = 0
        for offset, (_, seq) in enumerate(produced.by_partition[p][:upto]):
            if seq is None:
                continue
            while i < len(ranges) and ranges[i][1] < offset:
                i += 1
            assert i < len(ranges) and ranges[i][0] <= offset, (
                f"{when}: files sink committed {topic}-{p}@{upto} but offset {offset} is in no published file")


@pytest.mark.timeout(1800)  # ~4 min on an idle 2-core machine; far more when it is shared
def test_delta_and_parquet_sinks_survive_three_kill_minus_nine(spark, bootstrap_servers, topic_name, work_dir):
    work = Path(work_dir)
    produced = Produced()
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    feeding = threading.Thread(target=produce, args=(bootstrap_servers, topic_name, produced.kafka_records()),
                               kwargs={"linger_ms": 50}, daemon=True)
    feeding.start()

    append_table, upsert_table, files_out = work / "append", work / "upsert", work / "files"
    append = {"name": f"append-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
              "delta.table.path": str(append_table), "delta.column.partition": "_partition",
              "delta.column.offset": "_offset"}
    upsert = {"name": f"upsert-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
              "delta.table.path": str(upsert_table), "insert.mode": "upsert", "pk.mode": "record_key",
              "delete.enabled": "true"}
    files = {"name": f"files-{topic_name}", "connector.class": "FilesSink", "topics": topic_name, "tasks.max": "2",
             "task.execution.mode": "executor", "files.dir": str(files_out), "files.format": "parquet",
             "files.rotate.records": str(ROTATE)}
    connectors = [append, upsert, files]
    worker = worker_properties(bootstrap_servers, work, key_converter=_JSON, key_converter_schemas_enable="false",
                               value_converter=_JSON, value_converter_schemas_enable="false",
                               max_offsets_per_trigger=20_000, trigger="500ms", offset_flush_interval_ms=500,
                               spark_master="local[2]", spark_ui_enabled="false", spark_driver_memory="1g")

    rng = random.Random(11)
    started = time.monotonic()
    for kill in range(KILLS):
        proc = _start_cli(worker, connectors, work, f"cli-{kill}.log")
        try:
            progress = (kill, append_table, upsert_table, files_out, topic_name)
            before = _progress(*progress)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and _progress(*progress) <= before:
                assert proc.poll() is None, (work / f"cli-{kill}.log").read_text(errors="replace")[-3000:]
                time.sleep(0.3)
            assert _progress(*progress) > before, f"run {kill} wrote nothing in 300 s"
            time.sleep(rng.uniform(0.0, 4.0))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        _check_files_commits(_published_files(files_out, topic_name), committed_offsets(worker, files["name"]),
                             produced, topic_name, f"after kill {kill}")
        print(f"kill {kill} at {time.monotonic() - started:.0f} s: {_delta_commits(append_table, upsert_table)} "
              f"Delta commits, {len(_published_files(files_out, topic_name))} files, committed "
              + ", ".join(f"{c['name'].split('-')[0]}={sum(committed_offsets(worker, c['name']).values())}"
                          for c in connectors))
    feeding.join(600)
    assert not feeding.is_alive()
    killed_at = time.monotonic() - started

    # Drain in this process (the test's SparkSession), AvailableNow, the same three connectors.
    from connect_spark.runtime.worker.launcher import run_standalone

    committed_before = {c["name"]: committed_offsets(worker, c["name"]) for c in connectors}
    held_before = {append["name"]: _delta_offsets(spark, append_table, append["name"]),
                   upsert["name"]: _delta_offsets(spark, upsert_table, upsert["name"]),
                   files["name"]: _published_ends(_published_files(files_out, topic_name), topic_name)}
    assert run_standalone(dict(worker), [dict(c) for c in connectors], available_now=True, spark=spark) == 0
    drained_at = time.monotonic() - started
    ends = {TopicPartition(topic_name, p): off for p, off in end_offsets(bootstrap_servers, topic_name).items()}
    assert ends == {TopicPartition(topic_name, p): len(rows) for p, rows in produced.by_partition.items()}

    # Delta append: exactly the 100,000 value records, each (partition, offset) once, each with its own value.
    rows = spark.read.format("delta").load(str(append_table)).select("_partition", "_offset", "seq").collect()
    assert len(rows) == VALUES
    assert {(r["_partition"], r["_offset"], r["seq"]) for r in rows} == produced.appended()
    assert committed_offsets(worker, append["name"]) == _after_drain(append, ends, committed_before, held_before)

    # Delta upsert+delete: the last value per key, deleted keys absent.
    table = {r["id"]: r["seq"] for r in spark.read.format("delta").load(str(upsert_table)).collect()}
    assert table == produced.last_value_per_key()
    assert committed_offsets(worker, upsert["name"]) == _after_drain(upsert, ends, committed_before, held_before)

    # Parquet files: every value record up to each partition's last published file, once, in its own file.
    published = _published_files(files_out, topic_name)
    committed = committed_offsets(worker, files["name"])
    _check_files_commits(published, committed, produced, topic_name, "after the drain")
    seen: set[int] = set()
    files_expected: dict[TopicPartition, int] = {}
    for p in range(PARTITIONS):
        mine = [(first, last, path) for partition, first, last, path in published if partition == p]
        published_end = 0
        for first, last, path in mine:
            assert first >= published_end, f"{path.name} overlaps the previous file of partition {p}"
            gap = produced.by_partition[p][published_end:first]
            assert all(seq is None for _, seq in gap), f"value records between files before {path.name}"
            expected = [seq for _, seq in produced.by_partition[p][first:last + 1] if seq is not None]
            assert len(expected) == ROTATE
            assert pq.read_table(path).column("seq").to_pylist() == expected, path.name
            seen.update(expected)
            published_end = last + 1
        # What the drain leaves unpublished is the tail shorter than one file; committed = published end
        # (plus any tombstones right after it, which need no file).
        tail = [seq for _, seq in produced.by_partition[p][published_end:] if seq is not None]
        assert len(tail) < ROTATE, f"partition {p}: {len(tail)} value records left unpublished"
        tp = TopicPartition(topic_name, p)
        first_unpublished = published_end
        while (first_unpublished < ends[tp] and produced.by_partition[p][first_unpublished][1] is None):
            first_unpublished += 1
        files_expected[tp] = first_unpublished
        print(f"partition {p}: {len(mine)} files up to offset {published_end}, {len(tail)} value records "
              f"unpublished, committed {committed.get(tp)} of {ends[tp]}")
    assert len(seen) == len(published) * ROTATE, "a value record is in two published files"
    assert committed == _after_drain(files, files_expected, committed_before, held_before)
    print(f"kills done after {killed_at:.0f} s, drained after {drained_at:.0f} s")
