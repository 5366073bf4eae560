"""Issue 16 acceptance: the Iceberg sink under kill -9, then drained; nothing lost, nothing twice.

One ``connect-spark standalone`` process runs one Iceberg connector (Apache Iceberg's class name and keys)
writing every record to two tables of a Hadoop catalog: ``db.log`` (append) and ``db.latest`` (upsert on
``id``, tombstones delete). The CLI builds its own session, so it must add the Iceberg jars because the
connector asks for them. It is killed with SIGKILL three times, each after it has committed something, and
restarted; then an AvailableNow run drains the topic. The tables are read back with pyiceberg from their
metadata files (not with Spark) and compared with what was produced.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from connect_spark.api.records import TopicPartition
from connect_spark.connectors.iceberg.ledger import PROPERTY_PREFIX, StoredOffsets
from connect_spark.testing.harness import cli_command, committed_offsets, offsets_after_drain, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce

PARTITIONS = 4
VALUES = 30_000
TOMBSTONE_EVERY = 51  # every 51st record is a tombstone
TOTAL = VALUES + VALUES // (TOMBSTONE_EVERY - 1)
KEYS = 3_000
KILLS = 3
_JSON = "org.apache.kafka.connect.json.JsonConverter"


class Produced:
    """The records, generated once: (partition, key id, seq or None for a tombstone) in production order."""

    def __init__(self, seed: int = 16) -> None:
        rng = random.Random(seed)
        self.records: list[tuple[int, int, int | None]] = []
        seq = 0
        for i in range(TOTAL):
            key = rng.randrange(KEYS)
            value = None if i % TOMBSTONE_EVERY == TOMBSTONE_EVERY - 1 else seq
            if value is not None:
                seq += 1
            self.records.append((key % PARTITIONS, key, value))  # one key, one partition
        assert seq == VALUES

    def kafka_records(self):
        for partition, key, seq in self.records:
            value = None if seq is None else json.dumps({"id": key, "seq": seq}).encode()
            yield partition, json.dumps({"id": key}).encode(), value, []

    def last_value_per_key(self) -> dict[int, int]:
        state: dict[int, int | None] = {}
        for _, key, seq in self.records:
            state[key] = seq
        return {k: v for k, v in state.items() if v is not None}


def _metadata_files(table: Path) -> list[Path]:
    folder = table / "metadata"
    return sorted(folder.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0])) \
        if folder.exists() else []


def _commits(*tables: Path) -> int:
    """Data commits of the sink so far: snapshots carrying its offsets, in the tables' newest metadata."""
    count = 0
    for table in tables:
        files = _metadata_files(table)
        if files:
            try:
                snapshots = json.loads(files[-1].read_text()).get("snapshots", [])
            except ValueError:
                continue  # a metadata file being written
            count += sum(1 for s in snapshots if any(k.startswith("connect-spark.offsets.")
                                                     for k in s.get("summary", {})))
    return count


def _resume_offsets(connector_name: str, *tables: Path) -> dict[TopicPartition, int]:
    """Where the sink resumes: per partition, the lowest offset the tables' current snapshots hold for the
    connector (none when a table holds none for it)."""
    held: list[dict[TopicPartition, int]] = []
    for table in tables:
        if not _metadata_files(table):
            return {}
        metadata = StaticTable.from_metadata(str(_metadata_files(table)[-1])).metadata
        by_id = {s.snapshot_id: s for s in metadata.snapshots}
        snapshot = by_id.get(metadata.current_snapshot_id)
        while snapshot is not None and snapshot.summary.get(PROPERTY_PREFIX + connector_name) is None:
            snapshot = by_id.get(snapshot.parent_snapshot_id)
        if snapshot is None:
            return {}
        held.append(StoredOffsets.from_property(snapshot.summary.get(PROPERTY_PREFIX + connector_name),
                                                connector_name).offsets)
    return {tp: min(h[tp] for h in held) for tp in set.intersection(*(set(h) for h in held))}


def _failure(log: Path) -> str:
    """The error lines of a CLI log (Spark's plans make its tail useless), each cut short."""
    lines = log.read_text(errors="replace").splitlines()
    errors = [line[:400] for line in lines if ("Error" in line or "Exception" in line) and " WARN " not in line]
    return "\n".join(errors[:25]) or "\n".join(lines[-30:])


def _read(table: Path) -> list[dict]:
    """The table's rows read by pyiceberg from its newest metadata file (no Spark involved)."""
    return StaticTable.from_metadata(str(_metadata_files(table)[-1])).scan().to_arrow().to_pylist()


@pytest.mark.timeout(1800)  # a few minutes on an idle 2-core machine; far more when it is shared
def test_iceberg_sink_survives_three_kill_minus_nine(spark, bootstrap_servers, topic_name, work_dir):
    work = Path(work_dir)
    produced = Produced()
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    feeding = threading.Thread(target=produce, args=(bootstrap_servers, topic_name, produced.kafka_records()),
                               kwargs={"linger_ms": 50}, daemon=True)
    feeding.start()

    warehouse = work / "warehouse"
    log_table, latest_table = warehouse / "db" / "log", warehouse / "db" / "latest"
    connector = {"name": f"ice-{topic_name}", "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
                 "topics": topic_name, "iceberg.catalog": "chaos", "iceberg.catalog.type": "hadoop",
                 "iceberg.catalog.warehouse": str(warehouse), "iceberg.tables": "db.log,db.latest",
                 "iceberg.table.db.latest.id-columns": "id", "iceberg.tables.auto-create-enabled": "true",
                 "iceberg.control.topic": "unused-control-topic"}
    worker = worker_properties(bootstrap_servers, work, key_converter=_JSON, key_converter_schemas_enable="false",
                               value_converter=_JSON, value_converter_schemas_enable="false",
                               max_offsets_per_trigger=4_000, trigger="500ms", offset_flush_interval_ms=500,
                               spark_master="local[2]", spark_ui_enabled="false", spark_driver_memory="1g")

    rng = random.Random(17)
    started = time.monotonic()
    for kill in range(KILLS):
        log = open(work / f"cli-{kill}.log", "ab")
        proc = subprocess.Popen(cli_command(worker, connector, work), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            before = _commits(log_table, latest_table)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and _commits(log_table, latest_table) <= before:
                assert proc.poll() is None, _failure(work / f"cli-{kill}.log")
                time.sleep(0.3)
            assert _commits(log_table, latest_table) > before, f"run {kill} committed nothing in 300 s"
            time.sleep(rng.uniform(0.0, 3.0))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        print(f"kill {kill} at {time.monotonic() - started:.0f} s: {_commits(log_table, latest_table)} data "
              f"commits, committed {sum(committed_offsets(worker, connector['name']).values())}")
    feeding.join(600)
    assert not feeding.is_alive()

    # Drain in this process (the test's SparkSession), AvailableNow, the same connector.
    from connect_spark.runtime.worker.launcher import run_standalone

    committed_before = committed_offsets(worker, connector["name"])
    held_before = _resume_offsets(connector["name"], log_table, latest_table)
    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
    ends = {TopicPartition(topic_name, p): off for p, off in end_offsets(bootstrap_servers, topic_name).items()}
    assert sum(ends.values()) == TOTAL
    assert committed_offsets(worker, connector["name"]) == offsets_after_drain(ends, committed_before, held_before)

    # Append table: exactly the produced value records, none twice (every seq is unique).
    log_rows = _read(log_table)
    seqs = [r["seq"] for r in log_rows]
    assert len(seqs) == VALUES, f"{len(seqs) - len(set(seqs))} duplicate rows, {VALUES - len(set(seqs))} missing"
    assert set(seqs) == set(range(VALUES))
    assert all(r["id"] is not None for r in log_rows)
    # Upsert table: the last value per key, keys whose last record is a tombstone absent.
    assert {r["id"]: r["seq"] for r in _read(latest_table)} == produced.last_value_per_key()
    assert len(_read(latest_table)) == len(produced.last_value_per_key())
    print(f"drained after {time.monotonic() - started:.0f} s")
