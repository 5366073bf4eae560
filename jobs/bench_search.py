"""Benchmark: the search sink into a local OpenSearch, documents/s end to end, ``tasks.max`` 1 and 4.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_search.py [--records 1000000] [--tasks 1,4]

Starts a local broker and a single-node OpenSearch (``connect_spark.localsearch``, heap ``--heap``) on this
machine, fills a 4-partition topic with keyed JSON records (string keys over half as many keys as records;
values ~150 bytes, 6 fields, schemaless as most Elasticsearch sink users send them), starts one SparkSession
(local[2]), and drains the topic with ``available-now`` through
``io.confluent.connect.elasticsearch.ElasticsearchSinkConnector`` in executor mode, once per ``--tasks``
value, each into a fresh index: keyed documents with external versions (half of the records update a
document), ``batch.size`` 2000, ``max.in.flight.requests`` 2. Documents/s counts every produced record and
includes the query start. Not a test: figures only; on a shared 2-core machine the server, Spark and the
broker compete for the same cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path


def _record(i: int, keys: int) -> tuple:
    key = str(i % keys).encode()
    value = json.dumps({"id": i % keys, "user": f"user-{i % 1000:04d}", "qty": i % 100, "amount": round(i * 0.37, 2),
                        "paid": i % 3 == 0, "note": "x" * 24}, separators=(",", ":")).encode()
    return (None, key, value, [])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--tasks", default="1,4", help="tasks.max values, one drain each")
    parser.add_argument("--max-offsets", type=int, default=200_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--heap", default="1g", help="OpenSearch's JVM heap")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from opensearchpy import OpenSearch

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.localsearch import LocalOpenSearch
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.harness import worker_properties
    from connect_spark.testing.kafka import create_topic, produce

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    server_dir = tempfile.mkdtemp(prefix="bench-search-opensearch-")
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker, LocalOpenSearch(server_dir, heap=args.heap) as server:
        bootstrap = broker.bootstrap_servers
        started = time.monotonic()
        create_topic(bootstrap, "bench", 4)
        produce(bootstrap, "bench", (_record(i, args.records // 2) for i in range(args.records)))
        print(f"produced {args.records:,} records in {time.monotonic() - started:.1f} s")
        spark = get_or_create_session(app_name="bench-search", ui=False,
                                      conf={"spark.master": "local[2]", "spark.driver.memory": "2g"})
        client = OpenSearch([server.url], timeout=120)
        results = {}
        for tasks in (int(t) for t in args.tasks.split(",")):
            client.indices.delete(index="bench", ignore=[404])
            name = f"bench-search-{tasks}"
            worker = worker_properties(bootstrap, work / name, task_execution_mode="executor",
                                       key_converter="org.apache.kafka.connect.storage.StringConverter",
                                       value_converter="org.apache.kafka.connect.json.JsonConverter",
                                       value_converter_schemas_enable="false",
                                       max_offsets_per_trigger=args.max_offsets, offset_flush_interval_ms=10_000)
            connector = {"name": name, "connector.class": "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
                         "topics": "bench", "tasks.max": str(tasks), "connection.url": server.url,
                         "key.ignore": "false", "schema.ignore": "true", "batch.size": "2000",
                         "max.in.flight.requests": "2", "read.timeout.ms": "60000", "max.retries": "10",
                         "retry.backoff.ms": "500"}
            started = time.monotonic()
            code = run_standalone(worker, [connector], available_now=True, spark=spark)
            elapsed = time.monotonic() - started
            client.indices.refresh(index="bench")
            documents = client.count(index="bench")["count"]
            rate = args.records / elapsed
            results[f"tasks.max={tasks}"] = rate
            print(f"tasks.max={tasks}: {args.records:,} records in {elapsed:.1f} s = {rate:,.0f} documents/s "
                  f"(exit {code}, {documents:,} documents for {args.records // 2:,} keys); load average "
                  f"{os.getloadavg()[0]:.1f}")
        spark.stop()
    print(json.dumps({k: round(v) for k, v in results.items()}))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: figures are noisy)")


if __name__ == "__main__":
    main()
