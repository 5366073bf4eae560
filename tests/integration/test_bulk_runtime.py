"""Bulk tasks through the real runtime: the Delta sink (DataFrameSinkTask) and the files sink (ArrowSinkTask)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce, topic_end_offsets


def _orders(bootstrap, topic, start, count, partitions=2):
    produce(bootstrap, topic, (
        (i % partitions, json.dumps({"order_id": i % 50}).encode(),
         json.dumps({"order_id": i % 50, "amount": i, "note": f"n{i}"}).encode(), [])
        for i in range(start, start + count)
    ))


def _json_worker(bootstrap, work_dir, **extra):
    return worker_properties(bootstrap, work_dir, key_converter="org.apache.kafka.connect.json.JsonConverter",
                             key_converter_schemas_enable="false",
                             value_converter="org.apache.kafka.connect.json.JsonConverter",
                             value_converter_schemas_enable="false", **extra)


def test_delta_sink_appends_every_record_once_through_the_runtime(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 1_000)
    table = str(Path(work_dir) / "delta" / "orders")
    connector = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
                 "delta.table.path": table, "delta.column.offset": "_offset", "delta.column.partition": "_partition"}
    worker = _json_worker(bootstrap_servers, work_dir, max_offsets_per_trigger=400)
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    _orders(bootstrap_servers, topic_name, 1_000, 500)
    # The checkpoint folder is gone; the table's stored offsets and connect-offsets agree: nothing twice.
    import shutil
    shutil.rmtree(Path(work_dir) / "checkpoints")
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    rows = spark.read.format("delta").load(table)
    assert rows.count() == 1_500
    assert rows.select("_partition", "_offset").distinct().count() == 1_500
    assert sorted(r["amount"] for r in rows.select("amount").collect()) == list(range(1_500))
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


def test_delta_sink_upserts_and_deletes_through_the_runtime(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 300)
    # Tombstones for order ids 0..9 (key partitioned like their updates).
    produce(bootstrap_servers, topic_name, ((i % 2, json.dumps({"order_id": i}).encode(), None, []) for i in range(10)))
    table = str(Path(work_dir) / "delta" / "upserts")
    connector = {"name": f"upsert-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
                 "delta.table.path": table, "insert.mode": "upsert", "pk.mode": "record_key",
                 "delete.enabled": "true"}
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 0
    rows = {r["order_id"]: r["amount"] for r in spark.read.format("delta").load(table).collect()}
    # Order id k was last written by amount 250 + k (i % 50 == k, highest i below 300); ids 0..9 were deleted.
    assert rows == {k: 250 + k for k in range(10, 50)}
    assert result.committed == topic_end_offsets(bootstrap_servers, topic_name)


@pytest.mark.parametrize("mode", ["executor", "driver"])
def test_files_sink_publishes_each_offset_once(spark, bootstrap_servers, topic_name, work_dir, mode):
    """The ArrowSinkTask in both execution modes (driver: one long-lived instance per task on the driver)."""
    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 1_000)
    out = Path(work_dir) / "files"
    connector = {"name": f"files-{topic_name}", "connector.class": "FilesSink", "topics": topic_name,
                 "tasks.max": "2", "files.dir": str(out), "files.format": "parquet", "files.rotate.records": "150"}
    worker = _json_worker(bootstrap_servers, work_dir, task_execution_mode=mode, max_offsets_per_trigger=400)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    files = sorted((out / topic_name).glob("*.parquet"))
    amounts = [a for f in files for a in pq.read_table(f).column("amount").to_pylist()]
    # Only whole files are published (150 records each); every published record appears once.
    assert len(amounts) == len(set(amounts)) == len(files) * 150
    committed = result.committed
    for f in files:
        topic, partition, first, last = f.stem.split("+")
        assert int(last) < committed[TopicPartition(topic, int(partition))]
    assert sum(committed.values()) == len(files) * 150
