"""kill -9 of the CLI while records flow: a buffering task never loses a record, commits never outrun its writes."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import committed_offsets, run_connector, start_cli, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import contiguous_written_offsets, decode_value, read_recorded_records

PARTITIONS = 3
TOTAL = 12_000


def test_kill_minus_nine_three_times_loses_nothing(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    name = f"chaos-{topic_name}"
    out = Path(work_dir) / "out"
    connector = {"name": name, "connector.class": "RecordingSink", "topics": topic_name, "recording.dir": str(out),
                 "recording.commit.every": "1000"}
    worker = worker_properties(bootstrap_servers, work_dir, offset_flush_interval_ms=300, trigger="300ms",
                               max_offsets_per_trigger=800, spark_master="local[1]", spark_ui_enabled="false")

    def producer():
        for start in range(0, TOTAL, 400):
            produce(bootstrap_servers, topic_name, (
                (i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), [], None) for i in range(start, start + 400)))
            time.sleep(0.15)

    feeding = threading.Thread(target=producer, daemon=True)
    feeding.start()
    rng = random.Random(7)
    for kill in range(3):
        proc = start_cli(worker, connector, work_dir, log_name=f"cli-{kill}.log")
        try:
            # Wait until this run has written something, then kill it at a random moment.
            before = len(read_recorded_records(out))
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and len(read_recorded_records(out)) <= before:
                time.sleep(0.3)
            time.sleep(rng.uniform(0.2, 2.5))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        committed = committed_offsets(worker, name)
        safe = contiguous_written_offsets(read_recorded_records(out))
        for tp, offset in committed.items():
            assert offset <= safe.get(tp, 0), f"kill {kill}: {tp} committed {offset} beyond what was written"
    feeding.join(300)

    # Drain what is left, in process, with the same configuration.
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    records = read_recorded_records(out)
    keys = {decode_value(r["key"]) for r in records}
    missing = {f"k{i}".encode() for i in range(TOTAL)} - keys
    # The final drain commits whole chunks only: what is missing is the un-written tail, all of it uncommitted.
    committed = committed_offsets(worker, name)
    safe = contiguous_written_offsets(records)
    assert all(committed[tp] <= safe.get(tp, 0) for tp in committed)
    tail = sum(1 for i in range(TOTAL) if f"k{i}".encode() in missing)
    assert tail < 1000, f"{tail} records missing beyond the last unfinished chunk"
    for key in missing:
        i = int(key.decode()[1:])
        tp = TopicPartition(topic_name, i % PARTITIONS)
        assert i // PARTITIONS >= committed.get(tp, 0), f"{key!r} missing although its offset was committed"
