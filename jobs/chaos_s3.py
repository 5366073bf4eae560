"""Chaos run: the S3 sink under kill -9 five times while records flow, then drained; checks every record is in
exactly one object, no object is partial, and the committed offsets are where the objects end.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/chaos_s3.py [--records 100000] [--kills 5]

Starts a local broker and moto's S3 server (``connect_spark.testing.s3``), produces JSON records to a
4-partition topic from a thread, and runs ``connect-spark standalone`` with the S3 sink (Confluent's keys,
JSON objects of ``--flush`` records, DefaultPartitioner, executor mode, two tasks). The CLI is killed with
SIGKILL each time it has uploaded something more, and restarted; then an ``--available-now`` CLI run drains
the topic. The bucket is read with boto3 and compared with what was produced. Exits 1 on any mismatch.
It takes several CLI starts, so it is a job, not part of the test suite (whose unit tests cover a crash in
the middle of a group, and whose acceptance tests cover names and contents).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_JSON = "org.apache.kafka.connect.json.JsonConverter"
PARTITIONS = 4


def _objects(s3, bucket: str) -> dict[str, bytes]:
    return s3.objects(bucket)


def _run_cli(command: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=open(log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def held(objects: dict[str, bytes], topic: str, flush: int) -> dict:
    """Per partition, the offset after its last object (one object of ``flush`` records per group here)."""
    from connect_spark.api.records import TopicPartition

    ends: dict = {}
    for key in objects:
        partition, start = (int(x) for x in re.search(r"\+(\d+)\+(\d+)\.json$", key).groups())
        tp = TopicPartition(topic, partition)
        ends[tp] = max(ends.get(tp, 0), start + flush)
    return ends


def check(objects: dict[str, bytes], topic: str, flush: int, committed: dict, expected_committed: dict,
          ends: dict) -> list[str]:
    """What is wrong with the bucket and the offsets after the drain (empty: nothing)."""
    problems = []
    seen: list[int] = []
    for key, body in objects.items():
        partition, start = (int(x) for x in re.search(r"\+(\d+)\+(\d+)\.json$", key).groups())
        if key != f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json":
            problems.append(f"unexpected name {key}")
        seqs = [json.loads(line)["seq"] for line in body.decode().splitlines()]
        if seqs != [(start + i) * PARTITIONS + partition for i in range(flush)]:
            problems.append(f"{key}: not the {flush} records from offset {start} (partial or mixed)")
        seen.extend(seqs)
    if len(seen) != len(set(seen)):
        problems.append(f"{len(seen) - len(set(seen))} records are in two objects")
    if committed != expected_committed:
        problems.append(f"committed {committed}, expected {expected_committed}")
    wanted = {o * PARTITIONS + tp.partition for tp, end in ends.items() for o in range(end // flush * flush)}
    if set(seen) != wanted:
        problems.append(f"{len(wanted - set(seen))} records missing, {len(set(seen) - wanted)} unexpected")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--flush", type=int, default=1_000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.api.records import TopicPartition
    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.testing.harness import cli_command, committed_offsets, offsets_after_drain, worker_properties
    from connect_spark.testing.kafka import create_topic, end_offsets, produce
    from connect_spark.testing.s3 import LocalS3

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="chaos_s3_"))
    with LocalKafkaBroker(work / "kafka", heap="512m") as broker, LocalS3(work / "s3") as s3:
        bootstrap, topic, bucket = broker.bootstrap_servers, "chaos-s3", "chaos-s3"
        s3.create_bucket(bucket)
        create_topic(bootstrap, topic, PARTITIONS)
        records = ((seq % PARTITIONS, None, json.dumps({"seq": seq, "pad": "x" * 40}).encode(), [])
                   for seq in range(args.records))
        feeding = threading.Thread(target=produce, args=(bootstrap, topic, records), kwargs={"linger_ms": 50},
                                   daemon=True)
        feeding.start()
        connector = {"name": "s3-chaos", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                     "topics": topic, "tasks.max": "2", "task.execution.mode": "executor",
                     "flush.size": str(args.flush), "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
                     **s3.connector_keys(bucket)}
        worker = worker_properties(bootstrap, work, value_converter=_JSON, value_converter_schemas_enable="false",
                                   max_offsets_per_trigger=10_000, trigger="500ms", offset_flush_interval_ms=500,
                                   spark_master="local[2]", spark_ui_enabled="false", spark_driver_memory="1g")
        rng = random.Random(33)
        started = time.monotonic()
        for kill in range(args.kills):
            proc = _run_cli(cli_command(worker, connector, work), work / f"cli-{kill}.log")
            before = len(_objects(s3, bucket))
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and len(_objects(s3, bucket)) <= before and proc.poll() is None:
                time.sleep(0.3)
            time.sleep(rng.uniform(0.0, 2.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
            print(f"kill {kill + 1} at {time.monotonic() - started:.0f} s: {len(_objects(s3, bucket))} objects, "
                  f"committed {sum(committed_offsets(worker, connector['name']).values())}", flush=True)
        feeding.join(900)
        committed_before = committed_offsets(worker, connector["name"])
        held_before = held(_objects(s3, bucket), topic, args.flush)
        drain = _run_cli(cli_command(worker, connector, work, available_now=True), work / "cli-drain.log")
        if drain.wait(900) != 0:
            print(f"the draining run failed: see {work / 'cli-drain.log'}")
            return 1
        ends = {TopicPartition(topic, p): off for p, off in end_offsets(bootstrap, topic).items()}
        objects = _objects(s3, bucket)
        # Connect's rule (offsets_after_drain): a partition whose objects were all there before the drain keeps
        # the committed offset it had, the task's rewind counting as committed without being written.
        expected = offsets_after_drain({tp: end // args.flush * args.flush for tp, end in ends.items()},
                                       committed_before, held_before)
        problems = check(objects, topic, args.flush, committed_offsets(worker, connector["name"]), expected, ends)
        print(f"drained after {time.monotonic() - started:.0f} s: {sum(ends.values())} records produced, "
              f"{len(objects)} objects, committed {sum(committed_offsets(worker, connector['name']).values())}")
        for problem in problems:
            print("PROBLEM:", problem)
        print("OK: every record below the committed offsets in exactly one whole object" if not problems else "FAILED")
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
