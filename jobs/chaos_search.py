"""The search sink's crash run at full size: 100,000 keyed records, the CLI killed with SIGKILL five times.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/chaos_search.py [--records 100000] [--kills 5]

Starts a local broker and OpenSearch, feeds ``--records`` records over ``--keys`` keys into a 4-partition topic
while the CLI (executor mode, ``tasks.max=2``) is killed ``--kills`` times (``connect_spark.testing.search_chaos``),
drains once cleanly, and checks that the index holds exactly each key's newest record at the version of that
record's offset, and that the committed offsets reach the end. Prints what it found; exits 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from opensearchpy import OpenSearch

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.localsearch import LocalOpenSearch
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import committed_offsets, worker_properties
    from connect_spark.testing.kafka import create_topic, end_offsets
    from connect_spark.testing.search_chaos import (expected_documents, indexed_documents, keyed_records, kill_runs,
                                                    start_feeding)

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="chaos-search-"))
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker, \
            LocalOpenSearch(tempfile.mkdtemp(prefix="chaos-search-opensearch-"), heap="1g") as server:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "chaos", 4)
        records = keyed_records(args.records, args.keys, 4)
        started = time.monotonic()
        feeding = start_feeding(bootstrap, "chaos", records)
        worker = worker_properties(bootstrap, work, task_execution_mode="executor",
                                   key_converter="org.apache.kafka.connect.storage.StringConverter",
                                   value_converter="org.apache.kafka.connect.json.JsonConverter",
                                   value_converter_schemas_enable="false", max_offsets_per_trigger=10_000,
                                   trigger="300ms", offset_flush_interval_ms=500, spark_master="local[2]",
                                   spark_ui_enabled="false", spark_driver_memory="1g")
        connector = {"name": "chaos", "connector.class": "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
                     "topics": "chaos", "tasks.max": "2", "connection.url": server.url, "key.ignore": "false",
                     "schema.ignore": "true", "behavior.on.null.values": "delete", "max.retries": "10",
                     "retry.backoff.ms": "500", "read.timeout.ms": "30000"}
        client = OpenSearch([server.url], timeout=120)
        for line in kill_runs(worker, connector, work, client, "chaos", args.kills, args.records - 1):
            print(f"{time.monotonic() - started:.0f} s {line}")
        feeding.join(600)
        code = run_standalone(dict(worker), [dict(connector)], available_now=True)
        print(f"{time.monotonic() - started:.0f} s drained (exit {code})")
        found, expected = indexed_documents(client, "chaos"), expected_documents(records, 4)
        wrong = sum(1 for k, v in expected.items() if found.get(k) != v) + len(set(found) - set(expected))
        ends = end_offsets(bootstrap, "chaos")
        committed = {tp.partition: off for tp, off in committed_offsets(worker, "chaos").items()}
        print(f"{len(found):,} documents for {len(expected):,} keys, {wrong} not the newest record at its offset's "
              f"version; committed offsets {'reach' if committed == ends else 'DO NOT reach'} the end "
              f"({sum(committed.values()):,} of {sum(ends.values()):,})")
    return 0 if wrong == 0 and committed == ends and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
