"""Bulk sinks on ill-shaped records: a value that does not fit its column is a record error, never a
connector failure (issue 17), on the real broker and Spark with ``errors.tolerance=all`` and a DLQ.

Each sink path takes the same topic: schemaless JSON objects ``{"id", "amount", "note"}`` where a few
records carry ``amount`` as a string, a boolean or an object, and a few values are a bare number or an
array. Paths: the Delta sink through the vectorized plan, the Delta sink through the per-record path
(a HeaderFrom transform has no vectorized form), and the Parquet files sink (an Arrow task in executor
generations). Every good record is in the sink, every bad one in the DLQ with its consumed bytes and a
message naming ``topic[partition]@offset``, the field, the value's type and the column's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce, read_topic

JSON = "org.apache.kafka.connect.json.JsonConverter"
COUNT = 120
#: offset → (bad value, words its error message must hold)
BAD = {
    10: ({"id": 10, "amount": "12.5", "note": "n10"}, ["'amount'", "string", "double"]),
    30: (7, ["value", "long", "struct"]),
    50: ({"id": 50, "amount": True, "note": "n50"}, ["'amount'", "boolean", "double"]),
    70: ([1, 2], ["value", "array", "struct"]),
    90: ({"id": 90, "amount": {"x": 1}, "note": "n90"}, ["'amount'", "object", "double"]),
}


def _value(i: int):
    return BAD[i][0] if i in BAD else {"id": i, "amount": i + 0.5, "note": f"n{i}"}


def _produce_mixed(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ((0, json.dumps({"id": i}).encode(), json.dumps(_value(i)).encode(), [])
                               for i in range(COUNT)))


def json_worker(bootstrap: str, work_dir, schemas: bool = False, **extra) -> dict[str, str]:
    enabled = "true" if schemas else "false"
    return worker_properties(bootstrap, work_dir, key_converter=JSON, key_converter_schemas_enable="false",
                             value_converter=JSON, value_converter_schemas_enable=enabled, **extra)


def with_dlq(connector: dict[str, str], dlq: str, tolerance: str = "all") -> dict[str, str]:
    return {**connector, "errors.tolerance": tolerance, "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true"}


def dead_letters(bootstrap: str, dlq: str) -> dict[int, tuple[bytes, dict[str, bytes]]]:
    """DLQ records by original offset: (value bytes, headers)."""
    letters = {}
    for record in read_topic(bootstrap, dlq):
        headers = {k: bytes(v) for k, v in record.headers}
        letters[int(headers["__connect.errors.offset"])] = (record.value, headers)
    return letters


def _delta_ids(spark, table: str) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(table).select("id").collect())


def _parquet_ids(folder: Path) -> list[int]:
    ids = []
    for path in sorted(folder.rglob("*.parquet")):
        ids += pq.read_table(path).column("id").to_pylist()
    return sorted(ids)


SINKS = {
    "delta-plan": lambda topic, out: {"connector.class": "DeltaSink", "delta.table.path": str(out)},
    "delta-per-record": lambda topic, out: {
        "connector.class": "DeltaSink", "delta.table.path": str(out), "transforms": "copy",
        "transforms.copy.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
        "transforms.copy.fields": "id", "transforms.copy.headers": "id", "transforms.copy.operation": "copy"},
    "parquet-executor": lambda topic, out: {"connector.class": "FilesSink", "files.dir": str(out),
                                            "files.format": "parquet", "files.rotate.records": "5"},
}


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_ill_shaped_values_go_to_the_dlq_and_the_rest_is_written(sink, spark, bootstrap_servers, topic_name,
                                                                 work_dir):
    _produce_mixed(bootstrap_servers, topic_name)
    out = Path(work_dir) / "out"
    dlq = f"dlq-{topic_name}"
    connector = with_dlq({"name": f"{sink}-{topic_name}", "topics": topic_name, **SINKS[sink](topic_name, out)}, dlq)
    mode = "executor" if sink.endswith("executor") else "driver"
    worker = json_worker(bootstrap_servers, work_dir, task_execution_mode=mode)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    good = sorted(set(range(COUNT)) - set(BAD))
    if sink.startswith("delta"):
        assert _delta_ids(spark, str(out)) == good
        # a table created from schemaless JSON takes the records' field order
        assert spark.read.format("delta").load(str(out)).columns == ["id", "amount", "note"]
    else:
        assert _parquet_ids(out) == good
    letters = dead_letters(bootstrap_servers, dlq)
    if sink == "delta-per-record":
        # HeaderFrom itself refuses values that are not objects (a TRANSFORMATION error)
        assert set(letters) == set(BAD)
        checked = {o: BAD[o] for o in BAD if isinstance(BAD[o][0], dict)}
    else:
        assert set(letters) == set(BAD)
        checked = BAD
    for offset, (value, words) in checked.items():
        raw, headers = letters[offset]
        assert raw == json.dumps(value).encode()
        message = headers["__connect.errors.exception.message"].decode()
        assert f"{topic_name}[0]@{offset}" in message
        for word in words:
            assert word in message, (word, message)
    assert result.committed == {TopicPartition(topic_name, 0): COUNT}


def test_under_tolerance_none_an_ill_shaped_value_fails_the_task_after_reaching_the_dlq(
        spark, bootstrap_servers, topic_name, work_dir):
    _produce_mixed(bootstrap_servers, topic_name)
    dlq = f"dlq-{topic_name}"
    connector = with_dlq({"name": f"none-{topic_name}", "topics": topic_name, "connector.class": "DeltaSink",
                          "delta.table.path": str(Path(work_dir) / "t")}, dlq, tolerance="none")
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 1
    assert result.committed.get(TopicPartition(topic_name, 0), 0) <= 10
    letters = dead_letters(bootstrap_servers, dlq)
    assert 10 in letters
    message = letters[10][1]["__connect.errors.exception.message"].decode()
    assert f"{topic_name}[0]@10" in message and "'amount'" in message


def _envelope(schema_fields, payload) -> bytes:
    schema = {"type": "struct", "name": "R", "optional": False, "fields": schema_fields}
    return json.dumps({"schema": schema, "payload": payload}).encode()


V1 = [{"field": "id", "type": "int64", "optional": False}, {"field": "name", "type": "string", "optional": False}]
V2 = V1 + [{"field": "email", "type": "string", "optional": True}]
V3 = [{"field": "id", "type": "string", "optional": False}, {"field": "name", "type": "string", "optional": False}]


def test_schema_upgrade_inside_a_batch_evolves_the_table(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, ((0, None, _envelope(V1, {"id": i, "name": f"a{i}"}), [])
                                            for i in range(20)))
    table = str(Path(work_dir) / "evolving")
    dlq = f"dlq-{topic_name}"
    connector = with_dlq({"name": f"evolve-{topic_name}", "topics": topic_name, "connector.class": "DeltaSink",
                          "delta.table.path": table, "auto.evolve": "true"}, dlq)
    worker = json_worker(bootstrap_servers, work_dir, schemas=True)
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    # one batch mixing v1, v2 (an optional field added) and one v3 record whose id became a string
    mixed = []
    for i in range(20, 60):
        if i == 45:
            mixed.append(_envelope(V3, {"id": "x45", "name": "c45"}))
        elif i % 3 == 0:
            mixed.append(_envelope(V2, {"id": i, "name": f"b{i}", "email": f"e{i}@x"}))
        else:
            mixed.append(_envelope(V1, {"id": i, "name": f"a{i}"}))
    produce(bootstrap_servers, topic_name, ((0, None, v, []) for v in mixed))
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    rows = {r["id"]: r for r in spark.read.format("delta").load(table).collect()}
    assert sorted(rows) == sorted(set(range(60)) - {45})
    assert spark.read.format("delta").load(table).columns == ["id", "name", "email"]
    assert all(rows[i]["email"] == (f"e{i}@x" if i >= 20 and i % 3 == 0 else None) for i in rows)
    letters = dead_letters(bootstrap_servers, dlq)
    assert set(letters) == {45}
    message = letters[45][1]["__connect.errors.exception.message"].decode()
    assert f"{topic_name}[0]@45" in message and "'id'" in message and "STRING" in message and "INT64" in message
    assert result.committed == {TopicPartition(topic_name, 0): 60}


def test_upsert_and_delete_without_a_usable_key_are_record_errors(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    records = []
    for i in range(40):
        key, value = json.dumps({"order_id": i % 10}).encode(), json.dumps({"order_id": i % 10, "amount": i}).encode()
        if i == 5:
            key = None  # no key at all
        elif i == 7:
            key = json.dumps({"order_id": None}).encode()  # the key field is null
        elif i == 9:
            key, value = b"null", None  # a tombstone without a key (JSON null) deletes nothing
        records.append((0, key, value, []))
    produce(bootstrap_servers, topic_name, records)
    table = str(Path(work_dir) / "upserts")
    dlq = f"dlq-{topic_name}"
    connector = with_dlq({"name": f"keys-{topic_name}", "topics": topic_name, "connector.class": "DeltaSink",
                          "delta.table.path": table, "insert.mode": "upsert", "pk.mode": "record_key",
                          "delete.enabled": "true"}, dlq)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 0
    rows = {r["order_id"]: r["amount"] for r in spark.read.format("delta").load(table).collect()}
    # never a row keyed by null; the last record per key wins (order id k: 30 + k)
    assert rows == {k: 30 + k for k in range(10)}
    letters = dead_letters(bootstrap_servers, dlq)
    assert set(letters) == {5, 7, 9}
    assert "no key" in letters[5][1]["__connect.errors.exception.message"].decode()
    assert "'order_id'" in letters[7][1]["__connect.errors.exception.message"].decode()
    assert f"{topic_name}[0]@9" in letters[9][1]["__connect.errors.exception.message"].decode()
    assert letters[7][0] == json.dumps({"order_id": 7, "amount": 7}).encode()
    assert result.committed == {TopicPartition(topic_name, 0): 40}


def test_iceberg_upsert_records_without_an_id_are_record_errors(spark, bootstrap_servers, topic_name, work_dir):
    """A null id matches no row: the record goes to the DLQ instead of being inserted as an orphan (or, with
    others of its batch, dropped by the last-per-id step)."""
    create_topic(bootstrap_servers, topic_name, 1)
    records = []
    for i in range(30):
        key, value = json.dumps({"order_id": i % 10}).encode(), {"order_id": i % 10, "amount": i}
        if i in (4, 6):
            value = {"order_id": None, "amount": i}  # two null ids in one batch
        records.append((0, key, json.dumps(value).encode(), []))
    records.append((0, b"null", None, []))  # offset 30: a tombstone whose key gives no id
    produce(bootstrap_servers, topic_name, records)
    dlq = f"dlq-{topic_name}"
    catalog = f"ice_{topic_name.replace('-', '_')}"[:40]
    connector = with_dlq({"name": f"ids-{topic_name}", "topics": topic_name,
                          "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
                          "iceberg.catalog": catalog, "iceberg.catalog.type": "hadoop",
                          "iceberg.catalog.warehouse": str(Path(work_dir) / "warehouse"),
                          "iceberg.tables": "db.orders", "iceberg.tables.auto-create-enabled": "true",
                          "iceberg.tables.default-id-columns": "order_id"}, dlq)
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 0
    rows = {r["order_id"]: r["amount"] for r in spark.table(f"{catalog}.db.orders").collect()}
    assert rows == {k: 20 + k for k in range(10)}  # never a row with a null id; the last record per id wins
    letters = dead_letters(bootstrap_servers, dlq)
    assert set(letters) == {4, 6, 30}
    assert "the id column 'order_id' is null" in letters[4][1]["__connect.errors.exception.message"].decode()
    assert letters[6][0] == json.dumps({"order_id": None, "amount": 6}).encode()
    assert "tombstone" in letters[30][1]["__connect.errors.exception.message"].decode()
    assert result.committed == {TopicPartition(topic_name, 0): 31}


def test_a_later_batch_must_fit_the_existing_tables_column_types(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, ((0, None, json.dumps({"id": i, "amount": i + 0.5}).encode(), [])
                                            for i in range(10)))
    table = str(Path(work_dir) / "typed")
    dlq = f"dlq-{topic_name}"
    connector = with_dlq({"name": f"typed-{topic_name}", "topics": topic_name, "connector.class": "DeltaSink",
                          "delta.table.path": table}, dlq)
    worker = json_worker(bootstrap_servers, work_dir)
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    # a later batch where every amount is an integer (widens into the double column) but for two strings,
    # and one id is a fraction (a double does not go into the long column)
    later = [{"id": i, "amount": i} for i in range(10, 20)]
    later[3]["amount"], later[6]["amount"], later[8]["id"] = "x", "y", 18.5
    produce(bootstrap_servers, topic_name, ((0, None, json.dumps(v).encode(), []) for v in later))
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0
    rows = spark.read.format("delta").load(table)
    assert dict(rows.dtypes) == {"id": "bigint", "amount": "double"}
    assert sorted((r["id"], r["amount"]) for r in rows.where("id >= 10").collect()) == [
        (i, float(i)) for i in range(10, 20) if i not in (13, 16, 18)]
    letters = dead_letters(bootstrap_servers, dlq)
    assert set(letters) == {13, 16, 18}
    assert "'amount'" in letters[13][1]["__connect.errors.exception.message"].decode()
    message = letters[18][1]["__connect.errors.exception.message"].decode()
    assert f"{topic_name}[0]@18" in message and "'id'" in message and "fraction" in message and "bigint" in message
    assert result.committed == {TopicPartition(topic_name, 0): 20}
