"""The end-to-end demo: a local Kafka broker, sample JSON events, Spark's Kafka source, a Delta table.

Run with ``connect-spark demo``. Everything is local: the broker binds to 127.0.0.1, Spark runs in
``local[*]``, and the table is written under ``.data/demo``.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from pathlib import Path

__all__ = ["run_demo", "sample_events"]

log = logging.getLogger(__name__)

TOPIC = "demo-orders"


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
        yield None, customer.encode(), json.dumps(event).encode(), [("source", b"connect-spark-demo")]


def run_demo(data_dir: str | Path = ".data/demo", records: int = 10_000) -> int:
    """Start a broker, produce ``records`` events, drain them into Delta with AvailableNow; return the row count."""
    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic, produce

    data_dir = Path(data_dir).resolve()
    if data_dir.exists():
        shutil.rmtree(data_dir)
    ensure_resolved()
    with LocalKafkaBroker(data_dir / "kafka") as broker:
        print(f"Kafka broker (KRaft) running at {broker.bootstrap_servers}")
        create_topic(broker.bootstrap_servers, TOPIC, partitions=3)
        started = time.monotonic()
        produce(broker.bootstrap_servers, TOPIC, sample_events(records))
        print(f"Produced {records} JSON events to '{TOPIC}' in {time.monotonic() - started:.1f} s")

        spark = get_or_create_session(app_name="connect-spark-demo", conf={"spark.master": "local[*]"})
        from pyspark.sql import functions as F

        schema = "order_id long, customer string, amount double, currency string, status string"
        table = data_dir / "delta" / "orders"
        stream = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .load()
            .select(
                F.from_json(F.col("value").cast("string"), schema).alias("order"),
                "topic", "partition", "offset", "timestamp",
            )
            .select("order.*", "topic", "partition", "offset", "timestamp")
        )
        query = (
            stream.writeStream.format("delta")
            .option("checkpointLocation", str(data_dir / "checkpoints" / "orders"))
            .trigger(availableNow=True)
            .start(str(table))
        )
        query.awaitTermination()
        rows = spark.read.format("delta").load(str(table)).count()
        print(f"Delta table {table} holds {rows} rows")
        spark.stop()
    print("Kafka broker stopped")
    return rows
