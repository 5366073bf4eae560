"""The ground floor: a real broker, Spark's Kafka source, Delta, executors in their own processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from connect_spark.localkafka import BrokerError, LocalKafkaBroker, free_port
from connect_spark.testing.kafka import create_topic, end_offsets, produce

RECORDS = 10_000
PARTITIONS = 3


def _event(i: int) -> dict:
    return {"id": i, "user": f"user-{i % 97}", "amount": i * 0.5, "tags": ["a", "b"][: i % 3]}


def test_kafka_to_delta_round_trip(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    base_ts = 1_700_000_000_000
    sent = produce(
        bootstrap_servers,
        topic_name,
        (
            (i % PARTITIONS, f"key-{i}".encode(), json.dumps(_event(i)).encode(),
             [("source", b"test"), ("seq", str(i).encode())], base_ts + i)
            for i in range(RECORDS)
        ),
    )
    assert sent == RECORDS
    assert end_offsets(bootstrap_servers, topic_name) == {p: RECORDS // PARTITIONS + (1 if p < RECORDS % PARTITIONS else 0)
                                                          for p in range(PARTITIONS)}

    table = str(work_dir / "events")
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic_name)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    query = (
        stream.writeStream.format("delta")
        .option("checkpointLocation", str(work_dir / "checkpoint"))
        .trigger(availableNow=True)
        .start(table)
    )
    query.awaitTermination(300)
    assert query.exception() is None

    from delta.tables import DeltaTable

    df = DeltaTable.forPath(spark, table).toDF()
    rows = df.select("key", "value", "partition", "offset", "timestamp", "headers").collect()
    assert len(rows) == RECORDS

    by_partition: dict[int, list[int]] = {}
    for row in rows:
        by_partition.setdefault(row["partition"], []).append(row["offset"])
    for partition, offsets in by_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"partition {partition} offsets not contiguous from 0"
    assert sum(len(v) for v in by_partition.values()) == RECORDS

    for row in rows:
        key = bytes(row["key"]).decode()
        i = int(key.split("-")[1])
        assert i % PARTITIONS == row["partition"]
        assert json.loads(bytes(row["value"])) == _event(i)
        assert int(row["timestamp"].timestamp() * 1000) == base_ts + i
        assert [(h["key"], bytes(h["value"])) for h in row["headers"]] == [("source", b"test"), ("seq", str(i).encode())]


@pytest.mark.cluster
def test_local_cluster_runs_python_in_executor_processes(jars, tmp_path):
    """A job on local-cluster[2,1,1024] runs its Python work in executor processes, not the driver."""
    script = textwrap.dedent(
        """
        import json, os
        from connect_spark.spark_session import get_or_create_session
        spark = get_or_create_session(master="local-cluster[2,1,1024]", ui=False,
                                      conf={"spark.executor.memory": "768m"})
        def pids(batches):
            import os, pyarrow as pa
            for b in batches:
                yield pa.RecordBatch.from_pydict({"pid": [os.getpid()] * b.num_rows,
                                                  "ppid": [os.getppid()] * b.num_rows})
        df = spark.range(0, 1000, numPartitions=4).mapInArrow(pids, "pid long, ppid long")
        executors = sorted({(r.pid, r.ppid) for r in df.collect()})
        print("RESULT " + json.dumps({"driver": os.getpid(), "executors": executors}))
        spark.stop()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    python_pids = {pid for pid, _ in result["executors"]}
    jvm_parents = {ppid for _, ppid in result["executors"]}
    assert result["driver"] not in python_pids
    # Python workers are forked by the executor JVMs, so their parents are not the driver either,
    # and two executors give two distinct parent daemons.
    assert result["driver"] not in jvm_parents
    assert len(jvm_parents) == 2, result


def test_broker_starts_and_stops_twice(jars, tmp_path):
    for attempt in range(2):
        broker = LocalKafkaBroker(tmp_path / f"b{attempt}")
        with broker:
            create_topic(broker.bootstrap_servers, "twice", 1)
            assert produce(broker.bootstrap_servers, "twice", [(0, None, b"x", [])]) == 1
            assert end_offsets(broker.bootstrap_servers, "twice") == {0: 1}
            pid = broker.pid
        assert broker.pid is None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_broker_reports_a_taken_port(jars, tmp_path):
    import socket

    port = free_port()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen(1)
        with pytest.raises(BrokerError, match=f"port 127.0.0.1:{port} is already in use"):
            LocalKafkaBroker(tmp_path / "taken", port=port).start()


def test_broker_reports_missing_jars(tmp_path, monkeypatch):
    monkeypatch.setenv("CONNECT_SPARK_JARS", str(tmp_path / "no-jars-here"))
    with pytest.raises(BrokerError, match="not resolved.*connect-spark jars"):
        LocalKafkaBroker(tmp_path / "nojars").start()
