"""Connectors started from a Spark Connect session (serverless and shared-access notebooks).

One real Spark Connect server per test session (Spark's own, from the pip-installed pyspark, with the
Kafka source and Delta jars on it, see :mod:`connect_spark.testing.connect_server`); each connector runs
from a notebook-like client process (:mod:`connect_spark.testing.connect_client`), whose ``foreachBatch``
function Spark pickles and runs in the server's Python process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, produce, topic_end_offsets
from connect_spark.testing.spark_cluster import descendants
from connect_spark.testing.waiting import wait_for


@pytest.fixture(scope="session")
def connect_server(jars, tmp_path_factory):
    """A Spark Connect server on 127.0.0.1 for the whole test session."""
    from connect_spark.testing.connect_server import ConnectServer

    server = ConnectServer(tmp_path_factory.mktemp("connect-server") / "server.log").start()
    yield server
    server.stop()


def run_client(server, spec: dict, work_dir: Path, timeout: float = 300) -> dict:
    """Run the notebook client to its end; its JSON outcome line (the process log is kept in ``work_dir``)."""
    log = work_dir / "client.log"
    with open(log, "ab") as out:
        done = subprocess.run([sys.executable, "-m", "connect_spark.testing.connect_client", server.url,
                               json.dumps(spec)], stdout=subprocess.PIPE, stderr=out, timeout=timeout)
    lines = done.stdout.decode().strip().splitlines()
    assert lines, f"the client printed nothing (exit {done.returncode}): {log.read_text()[-3000:]}"
    return json.loads(lines[-1])


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_record_task_with_a_dlq_drains_available_now_and_commits(connect_server, bootstrap_servers, topic_name,
                                                                 work_dir, mode):
    from connect_spark.testing.kafka import read_topic

    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, ((i % 2, str(i).encode(), b"{bad" if i % 10 == 3 else
                                             json.dumps(f"v{i}").encode(), []) for i in range(40)))
    worker = worker_properties(bootstrap_servers, work_dir, task_execution_mode=mode,
                               **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                  "value.converter.schemas.enable": "false"})
    sink = Path(work_dir) / "sink.txt"
    name = f"sc-{mode}-{topic_name}"
    dlq = f"{topic_name}-dlq"
    connector = {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(sink),
                 "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                 "errors.deadletterqueue.topic.replication.factor": "1"}
    outcome = run_client(connect_server, {"worker": worker, "connector": connector, "available_now": True},
                         Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    assert sorted(sink.read_text().splitlines()) == sorted(f"v{i}" for i in range(40) if i % 10 != 3)
    assert sorted(int(r.key) for r in read_topic(bootstrap_servers, dlq)) == [3, 13, 23, 33]
    assert committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 20, TopicPartition(topic_name, 1): 20}


def _orders(bootstrap: str, topic: str, start: int, count: int, bad_every: int = 0) -> None:
    """Orders as JSON on two partitions; with ``bad_every``, every such record is not JSON (for the DLQ)."""
    produce(bootstrap, topic, (
        (i % 2, json.dumps({"order_id": i}).encode(),
         b"{not json" if bad_every and i % bad_every == 0 else
         json.dumps({"order_id": i, "amount": i, "note": f"n{i}"}).encode(), [])
        for i in range(start, start + count)))


def _json_worker(bootstrap: str, work_dir, **extra) -> dict[str, str]:
    return worker_properties(bootstrap, work_dir, key_converter="org.apache.kafka.connect.json.JsonConverter",
                             key_converter_schemas_enable="false",
                             value_converter="org.apache.kafka.connect.json.JsonConverter",
                             value_converter_schemas_enable="false", **extra)


def _delta_drain_started(server, spark, bootstrap_servers: str, topic_name: str, work_dir, prefix: str, stdout):
    """A notebook client draining 100 orders into a Delta table 25 a batch, once the first batch is in the table.

    Returns the client process, the worker and client spec, the table path and the connector's name.
    """
    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 100)
    table = str(Path(work_dir) / "delta" / "orders")
    name = f"{prefix}-{topic_name}"
    connector = {"name": name, "connector.class": "DeltaSink", "topics": topic_name, "delta.table.path": table}
    worker = _json_worker(bootstrap_servers, work_dir, max_offsets_per_trigger=25)
    spec = {"worker": worker, "connector": connector, "available_now": True}
    with open(Path(work_dir) / f"{prefix}-client.log", "ab") as log:
        client = subprocess.Popen([sys.executable, "-m", "connect_spark.testing.connect_client", server.url,
                                   json.dumps(spec)], stdout=stdout or log, stderr=log)
    try:
        wait_for(lambda: spark.read.format("delta").load(table).count() > 0, timeout=240,
                 what="the first batch in the table", proc=client, ignore=(AnalysisException,))
    except BaseException:
        client.kill()
        raise
    return client, worker, spec, table, name


def test_delta_sink_with_a_dlq_writes_every_record_once(connect_server, spark, bootstrap_servers, topic_name,
                                                       work_dir):
    from connect_spark.testing.kafka import read_topic

    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 120, bad_every=10)
    dlq = f"{topic_name}-dlq"
    table = str(Path(work_dir) / "delta" / "orders")
    name = f"sc-delta-{topic_name}"
    connector = {"name": name, "connector.class": "DeltaSink", "topics": topic_name, "delta.table.path": table,
                 "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                 "errors.deadletterqueue.topic.replication.factor": "1"}
    worker = _json_worker(bootstrap_servers, work_dir, max_offsets_per_trigger=50)
    outcome = run_client(connect_server, {"worker": worker, "connector": connector, "available_now": True},
                         Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    ids = sorted(r["order_id"] for r in spark.read.format("delta").load(table).select("order_id").collect())
    assert ids == [i for i in range(120) if i % 10]
    assert sorted(json.loads(r.key)["order_id"] for r in read_topic(bootstrap_servers, dlq)) == list(range(0, 120, 10))
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)
    # The same connector on a classic session: the same rows and offsets.
    from connect_spark.testing.harness import run_connector

    classic_table = str(Path(work_dir) / "delta" / "classic")
    classic = run_connector({**connector, "name": f"{name}-classic", "delta.table.path": classic_table,
                             "errors.deadletterqueue.topic.name": f"{dlq}-classic"},
                            bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert classic.exit_code == 0 and classic.committed == committed_offsets(worker, name)
    columns = ["order_id", "amount", "note"]
    assert (sorted(spark.read.format("delta").load(classic_table).select(*columns).collect())
            == sorted(spark.read.format("delta").load(table).select(*columns).collect()))


def test_delta_sink_exactly_once_when_the_client_is_killed_mid_stream(connect_server, spark, bootstrap_servers,
                                                                      topic_name, work_dir):
    """The notebook dies (kill -9) while its drain runs; the next start re-delivers from connect-offsets and
    the table holds every record once."""
    client, worker, spec, table, name = _delta_drain_started(connect_server, spark, bootstrap_servers, topic_name,
                                                             work_dir, "sc-kill", None)
    client.kill()
    client.wait(30)
    # The server's query outlives its client and drains on; the next start must not write anything twice.
    first_end = topic_end_offsets(bootstrap_servers, topic_name)
    wait_for(lambda: committed_offsets(worker, name) == first_end, timeout=240, interval=1.0,
             what="the orphaned drain's last commit")
    _orders(bootstrap_servers, topic_name, 100, 50)
    outcome = run_client(connect_server, spec, Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    ids = sorted(r["order_id"] for r in spark.read.format("delta").load(table).select("order_id").collect())
    assert ids == list(range(150))
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def test_stop_of_a_continuous_connector_ends_with_its_commit(connect_server, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, ((0, None, f"v{i}".encode(), []) for i in range(30)))
    worker = worker_properties(bootstrap_servers, work_dir, trigger="500ms",
                               **{"value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    sink = Path(work_dir) / "sink.txt"
    name = f"sc-stop-{topic_name}"
    connector = {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(sink)}
    outcome = run_client(connect_server, {"worker": worker, "connector": connector, "stop_after_records": 30,
                                          "records_file": str(sink)}, Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None and outcome["progress"]
    assert sink.read_text().splitlines() == [f"v{i}" for i in range(30)]
    assert committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 30}


def test_files_sink_in_executor_mode_publishes_each_offset_once(connect_server, bootstrap_servers, topic_name,
                                                                work_dir):
    """An ArrowSinkTask through ``mapInArrow`` on Spark Connect."""
    import pyarrow.parquet as pq

    create_topic(bootstrap_servers, topic_name, 2)
    _orders(bootstrap_servers, topic_name, 0, 100)
    out = Path(work_dir) / "files"
    name = f"sc-files-{topic_name}"
    connector = {"name": name, "connector.class": "FilesSink", "topics": topic_name, "tasks.max": "2",
                 "files.dir": str(out), "files.format": "parquet", "files.rotate.records": "10"}
    worker = _json_worker(bootstrap_servers, work_dir, task_execution_mode="executor")
    outcome = run_client(connect_server, {"worker": worker, "connector": connector, "available_now": True},
                         Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    files = sorted((out / topic_name).glob("*.parquet"))
    ids = sorted(i for f in files for i in pq.read_table(f).column("order_id").to_pylist())
    assert ids == list(range(100))
    assert committed_offsets(worker, name) == {TopicPartition(topic_name, 0): 50, TopicPartition(topic_name, 1): 50}


def test_jdbc_sink_inserts_every_record_once(connect_server, bootstrap_servers, postgres, topic_name, work_dir):
    import psycopg


    schema = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int64", "optional": False},
                                                              {"field": "name", "type": "string", "optional": True}]}
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, ((i % 2, None, json.dumps({"schema": schema, "payload": {
        "id": i, "name": f"n{i}"}}).encode(), []) for i in range(40)))
    table = f"sc_{topic_name.replace('-', '_')}"[:60]
    name = f"sc-jdbc-{topic_name}"
    connector = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic_name,
                 "connection.url": postgres.jdbc_url(), "table.name.format": table, "auto.create": "true"}
    worker = worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor",
                               value_converter="org.apache.kafka.connect.json.JsonConverter")
    outcome = run_client(connect_server, {"worker": worker, "connector": connector, "available_now": True},
                         Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        rows = conn.execute(f'SELECT id, name FROM "{table}" ORDER BY id').fetchall()
    assert rows == [(i, f"n{i}") for i in range(40)]
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def test_delta_sink_exactly_once_when_the_servers_python_process_dies(connect_server, spark, bootstrap_servers,
                                                                      topic_name, work_dir):
    """kill -9 of the server's foreachBatch process after a batch: the query fails with a message in the
    notebook; the next start re-delivers from connect-offsets and the table holds every record once."""

    def batch_process() -> int | None:
        for pid in descendants(connect_server.process.pid):
            try:
                if b"foreach_batch_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        return None

    client, worker, spec, table, name = _delta_drain_started(connect_server, spark, bootstrap_servers, topic_name,
                                                             work_dir, "sc-crash", subprocess.PIPE)
    try:
        os.kill(wait_for(batch_process, timeout=30, what="the server's foreachBatch process"), signal.SIGKILL)
        out, _ = client.communicate(timeout=240)
    finally:
        client.kill()
    first = json.loads(out.decode().strip().splitlines()[-1])
    assert first["exit_code"] == 1 and "Python worker" in first["error"], first
    assert sum(committed_offsets(worker, name).values()) < 100  # the rest is delivered by the next start
    outcome = run_client(connect_server, spec, Path(work_dir))
    assert outcome["exit_code"] == 0 and outcome["error"] is None
    ids = sorted(r["order_id"] for r in spark.read.format("delta").load(table).select("order_id").collect())
    assert ids == list(range(100))
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def test_a_connector_whose_data_source_the_server_lacks_is_refused_at_start(connect_server, bootstrap_servers,
                                                                            topic_name, work_dir):
    """The test server has the Kafka source and Delta, not Iceberg: the Iceberg sink is refused before any
    task starts, with a message naming what the server lacks and how a server gets it."""
    create_topic(bootstrap_servers, topic_name, 1)
    connector = {"name": f"sc-ice-{topic_name}", "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
                 "topics": topic_name, "iceberg.catalog": "probe", "iceberg.catalog.type": "hadoop",
                 "iceberg.catalog.warehouse": str(Path(work_dir) / "warehouse"), "iceberg.tables": "db.orders"}
    outcome = run_client(connect_server, {"worker": _json_worker(bootstrap_servers, work_dir), "connector": connector,
                                          "available_now": True}, Path(work_dir))
    assert outcome["exit_code"] is None, outcome  # refused by start_connector itself
    error = outcome["error"] or ""
    assert error.startswith("ConnectException") and "the server lacks Apache Iceberg" in error and 'data source "iceberg" not found' in error, error
    assert "Spark's Kafka source" not in error and "Delta" not in error, error
