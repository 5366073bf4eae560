"""Benchmark: the S3 sink into a local S3-compatible server (Parquet), beside the files sink to local disk.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_s3.py [--records 1000000]

Starts a local broker and moto's S3 server (``connect_spark.testing.s3``), pre-fills a 4-partition topic with
the benchmark's records (``jobs/bench/records.py``: ~215 bytes of JSON, 11 fields), starts one SparkSession
(local[2]) and drains the topic with ``available-now`` twice, each on a fresh checkpoint, executor mode,
``tasks.max=2``, JsonConverter without schemas, batches of ``--batch`` records, in ``--rounds`` rounds (the
first one warms the session up):

  s3      ``io.confluent.connect.s3.S3SinkConnector``: ParquetFormat (snappy), DefaultPartitioner,
          ``flush.size=--flush``;
  files   ``FilesSink`` to a local folder: Parquet, ``files.rotate.records=--flush``.

Records/s counts every produced record and includes the query start. Not a test: figures only. moto keeps
objects in memory in one Python process, so the S3 figure is a floor for a real store's.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

_JSON = "org.apache.kafka.connect.json.JsonConverter"
PARTITIONS = 4


def _drain(spark, bootstrap: str, work: Path, topic: str, connector: dict[str, str], batch: int) -> float:
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties

    worker = worker_properties(bootstrap, work / connector["name"], value_converter=_JSON,
                               value_converter_schemas_enable="false", task_execution_mode="executor",
                               max_offsets_per_trigger=batch, offset_flush_interval_ms=10_000)
    started = time.monotonic()
    if run_standalone(worker, [{"topics": topic, "tasks.max": "2", **connector}], available_now=True,
                      spark=spark) != 0:
        raise SystemExit(f"{connector['name']} failed")
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--flush", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=400_000)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both arms (the first warms the JVM up)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

    from jobs.bench.producing import prefill

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic
    from connect_spark.testing.s3 import LocalS3

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench_s3_"))
    try:
        with LocalKafkaBroker(work / "kafka", heap="1g") as broker, LocalS3(work / "s3") as s3:
            bootstrap, topic = broker.bootstrap_servers, "bench-s3"
            create_topic(bootstrap, topic, PARTITIONS)
            filled = prefill(bootstrap, topic, PARTITIONS, args.records)
            print(f"pre-filled {filled.records} records ({filled.payload_bytes / 1e6:.0f} MB) in {filled.seconds:.0f} s")
            spark = get_or_create_session(master="local[2]", app_name="bench-s3", ui=False,
                                          conf={"spark.driver.memory": "2g"})
            for run in range(args.rounds):
                s3.create_bucket(f"bench-{run}")
                arms = {
                    "s3": {"name": f"bench-s3-sink-{run}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                           "flush.size": str(args.flush),
                           "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
                           **s3.connector_keys(f"bench-{run}")},
                    "files": {"name": f"bench-files-sink-{run}", "connector.class": "FilesSink",
                              "files.dir": str(work / f"files-{run}"), "files.format": "parquet",
                              "files.rotate.records": str(args.flush)},
                }
                for arm, connector in arms.items():
                    seconds = _drain(spark, bootstrap, work, topic, connector, args.batch)
                    print(f"round {run + 1} {arm:6s} {args.records / seconds:10,.0f} records/s ({seconds:.1f} s)",
                          flush=True)
                objects = s3.objects(f"bench-{run}")
                print(f"round {run + 1} s3 objects: {len(objects)}, "
                      f"{sum(len(b) for b in objects.values()) / 1e6:.1f} MB")
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
