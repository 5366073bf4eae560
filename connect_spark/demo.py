"""The end-to-end demo: a local Kafka broker, sample JSON events, the Delta sink connector, a Delta table.

Run with ``connect-spark demo``. It starts a KRaft broker on 127.0.0.1, produces order events, then runs
``connect-spark standalone --available-now`` with a worker configuration derived from
``conf/worker.properties`` (pointing at that broker) and the connector ``conf/delta-sink.properties``
(exactly-once upserts keyed by ``order_id``), and finally reads the table back with Spark.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from connect_spark.config.properties import format_properties, load_properties

__all__ = ["run_demo", "sample_events", "demo_configs"]

log = logging.getLogger(__name__)

TOPIC = "demo-orders"
CONF = Path(__file__).resolve().parents[1] / "conf"

# What conf/worker.properties and conf/delta-sink.properties hold, for installs without the repository's conf/.
_WORKER = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
    "offset.storage.topic": "connect-offsets", "offset.flush.interval.ms": "10000", "trigger": "1s",
    "task.execution.mode": "driver",
}
_DELTA_SINK = {
    "name": "delta-sink", "connector.class": "DeltaSink", "topics": TOPIC,
    "delta.table.path": ".data/demo/delta/${topic}", "insert.mode": "upsert", "pk.mode": "record_key",
    "pk.fields": "order_id", "delete.enabled": "true", "auto.evolve": "true",
    "delta.column.offset": "_kafka_offset", "delta.column.timestamp": "_kafka_timestamp",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
    "delta.optimize.every.commits": "50", "delta.write.files.per.commit": "1", "errors.tolerance": "none",
}


def sample_events(count: int, seed: int = 7):
    """``count`` order events as (partition, key, value, headers) tuples, reproducible by ``seed``."""
    rng = random.Random(seed)
    for i in range(count):
        customer = f"customer-{rng.randrange(500):03d}"
        event = {
            "order_id": i,
            "customer": customer,
            "amount": round(rng.uniform(1, 500), 2),
            "currency": rng.choice(["EUR", "USD", "GBP"]),
            "status": rng.choice(["created", "paid", "shipped"]),
        }
        yield None, json.dumps({"order_id": i}).encode(), json.dumps(event).encode(), [("source", b"connect-spark-demo")]


def demo_configs(data_dir: Path, bootstrap_servers: str) -> tuple[dict[str, str], dict[str, str]]:
    """The worker (conf/worker.properties aimed at the demo broker) and the Delta connector configuration."""
    worker_file, connector_file = CONF / "worker.properties", CONF / "delta-sink.properties"
    worker = dict(load_properties(worker_file)) if worker_file.exists() else dict(_WORKER)
    worker.update({
        "bootstrap.servers": bootstrap_servers,
        "checkpoint.location": str(data_dir / "checkpoints"),
        "offset.storage.replication.factor": "1",
        "spark.master": "local[*]",
        "spark.ui.enabled": "false",
    })
    connector = dict(load_properties(connector_file)) if connector_file.exists() else dict(_DELTA_SINK)
    connector["delta.table.path"] = str(data_dir / "delta" / "${topic}")
    return worker, connector


def run_demo(data_dir: str | Path = ".data/demo", records: int = 10_000) -> int:
    """Start a broker, produce ``records`` events, drain them into Delta with the connector; return the row count."""
    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic, produce

    data_dir = Path(data_dir).resolve()
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    ensure_resolved()
    with LocalKafkaBroker(data_dir / "kafka") as broker:
        print(f"Kafka broker (KRaft) running at {broker.bootstrap_servers}")
        create_topic(broker.bootstrap_servers, TOPIC, partitions=3)
        started = time.monotonic()
        produce(broker.bootstrap_servers, TOPIC, sample_events(records))
        print(f"Produced {records} JSON events to '{TOPIC}' in {time.monotonic() - started:.1f} s")

        worker, connector = demo_configs(data_dir, broker.bootstrap_servers)
        worker_path, connector_path = data_dir / "worker.properties", data_dir / "delta-sink.properties"
        worker_path.write_text(format_properties(worker))
        connector_path.write_text(format_properties(connector))
        command = [sys.executable, "-m", "connect_spark.cli", "standalone", "--available-now",
                   str(worker_path), str(connector_path)]
        print("Running: connect-spark standalone --available-now "
              f"{worker_path} {connector_path}  (conf/delta-sink.properties, table under {data_dir / 'delta'})")
        started = time.monotonic()
        code = subprocess.call(command)
        print(f"connect-spark standalone exited with {code} after {time.monotonic() - started:.1f} s")
        if code != 0:
            return -1
        table = str(data_dir / "delta" / TOPIC)
        spark = get_or_create_session(app_name="connect-spark-demo", conf={"spark.master": "local[1]",
                                                                           "spark.ui.enabled": "false"})
        frame = spark.read.format("delta").load(table)
        rows = frame.count()
        print(f"Delta table {table} holds {rows} rows; a few of them:")
        frame.orderBy("order_id").show(5, truncate=False)
        spark.stop()
    print("Kafka broker stopped")
    return rows
