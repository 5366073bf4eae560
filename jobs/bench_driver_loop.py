"""Benchmark: records/s of a no-op sink task through the driver-resident loop.

    .venv/bin/python jobs/bench_driver_loop.py [--records 1000000]

Starts a local broker, fills a 4-partition topic with ~215-byte JSON records, then drains it with
``--available-now`` through a task whose ``put`` does nothing, and prints the figures. Not a test.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

def _record(i: int) -> bytes:
    return json.dumps({
        "id": i, "user": f"user-{i % 1000:04d}", "amount": round(i * 0.37, 2), "currency": "EUR",
        "status": "paid", "country": "DE", "device": "mobile", "ts": 1_700_000_000_000 + i,
        "campaign": "autumn-sale-2026", "score": (i % 97) / 97, "note": "x" * 24,
    }).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.runtime.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties
    from connect_spark.testing.kafka import create_topic, produce

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench-driver-"))
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker:
        create_topic(broker.bootstrap_servers, "bench", 4)
        started = time.monotonic()
        produce(broker.bootstrap_servers, "bench", ((None, None, _record(i), []) for i in range(args.records)))
        print(f"produced {args.records} records in {time.monotonic() - started:.1f} s")
        worker = worker_properties(broker.bootstrap_servers, work, spark_ui_enabled="false",
                                   max_offsets_per_trigger=100_000, offset_flush_interval_ms=10_000)
        connector = {"name": "bench-noop", "connector.class": "connect_spark.testing.noop.NoopSinkConnector", "topics": "bench"}
        started = time.monotonic()
        code = run_standalone(worker, [connector], available_now=True)
        elapsed = time.monotonic() - started
        print(f"driver loop, no-op task: {args.records} records in {elapsed:.1f} s "
              f"= {args.records / elapsed:,.0f} records/s (exit {code}; includes Spark start-up)")


if __name__ == "__main__":
    main()
