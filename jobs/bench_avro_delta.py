"""Benchmark: the Delta sink on Avro records (Confluent's wire format, a real registry) vs the same records
as schemaless JSON, side by side. Not a test: it prints records/s and the ratio.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_avro_delta.py [--records 1000000]

Starts a local broker and a local schema registry (Apicurio), registers the writer schema with
confluent-kafka's AvroSerializer (the first record), encodes the rest with fastavro under the same 5-byte
header (byte-identical to what the serializer writes), produces both topics, then runs the Delta sink
(``connect-spark standalone --available-now`` in this process, one shared SparkSession) on each topic
and times each run from start to drained, table row count checked.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import tempfile
import time
from pathlib import Path

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "currency", "type": "string"}, {"name": "status", "type": "string"},
    {"name": "country", "type": "string"}, {"name": "device", "type": "string"}, {"name": "ts", "type": "long"},
    {"name": "campaign", "type": "string"}, {"name": "score", "type": "double"}, {"name": "note", "type": "string"}]}


def _order(i: int) -> dict:
    return {"id": i, "user": f"user-{i % 1000:04d}", "amount": round(i * 0.37, 2) + 0.01, "currency": "EUR",
            "status": "paid", "country": "DE", "device": "mobile", "ts": 1_700_000_000_000 + i,
            "campaign": "autumn-sale-2026", "score": (i % 97) / 97 + 0.001, "note": "x" * 24}


def _produce(bootstrap: str, topic: str, payloads) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=512 * 1024, acks=1,
                             compression_type=None)
    for i, payload in enumerate(payloads):
        producer.send(topic, value=payload, partition=i % 4)
    producer.flush()
    producer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--avro-first", action="store_true", help="run the Avro arm first (the first run also "
                                                                  "pays the session's warm-up)")
    parser.add_argument("--reps", type=int, default=2, help="runs per arm, alternating; the first pays the warm-up")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    n = args.records

    import fastavro
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.localregistry import LocalSchemaRegistry
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.harness import worker_properties
    from connect_spark.testing.kafka import create_topic

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="connect-spark-bench-avro-"))
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker, LocalSchemaRegistry(work / "registry") as registry:
        bootstrap = broker.bootstrap_servers
        for topic in ("orders-avro", "orders-json"):
            create_topic(bootstrap, topic, partitions=4)
        started = time.monotonic()
        serialize = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(SCHEMA))
        first = serialize(_order(0), SerializationContext("orders-avro", MessageField.VALUE))
        header, parsed = first[:5], fastavro.parse_schema(SCHEMA)

        def avro_payloads():
            yield first
            for i in range(1, n):
                buf = io.BytesIO()
                buf.write(header)
                fastavro.schemaless_writer(buf, parsed, _order(i))
                yield buf.getvalue()

        _produce(bootstrap, "orders-avro", avro_payloads())
        _produce(bootstrap, "orders-json", (json.dumps(_order(i), separators=(",", ":")).encode() for i in range(n)))
        print(f"produced {n:,} Avro and {n:,} JSON records in {time.monotonic() - started:.1f} s")

        spark = get_or_create_session(master="local[2]", app_name="bench-avro-delta", ui=False,
                                      conf={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g"})
        results = {}
        arms = [("schemaless JSON", "orders-json", {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                                    "value.converter.schemas.enable": "false"}),
                ("Avro (registry)", "orders-avro", {"value.converter": "io.confluent.connect.avro.AvroConverter",
                                                    "value.converter.schema.registry.url": registry.url})]
        order = list(reversed(arms)) if args.avro_first else arms
        for rep, (label, topic, converter) in ((r, arm) for r in range(args.reps) for arm in order):
            run_dir = work / f"{topic}-{rep}"
            worker = worker_properties(bootstrap, run_dir, task_execution_mode="driver")
            connector = {"name": f"bench-{topic}-{rep}", "connector.class": "DeltaSink", "topics": topic,
                         "delta.table.path": str(run_dir / "table"), "insert.mode": "append", **converter}
            started = time.monotonic()
            code = run_standalone(worker, [connector], available_now=True, spark=spark)
            seconds = time.monotonic() - started
            rows = spark.read.format("delta").load(str(run_dir / "table")).count()
            results[label] = n / seconds  # the last run of each arm counts
            print(f"run {rep + 1} {label:<18} exit {code}  rows {rows:,}  {seconds:6.1f} s  {n / seconds:>10,.0f} records/s")
        json_rate, avro_rate = results["schemaless JSON"], results["Avro (registry)"]
        print(f"Avro / JSON records/s (last runs): {avro_rate / json_rate:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
