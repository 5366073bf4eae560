"""`connect-spark distributed` as a real process: a connector created over REST runs on Spark, and comes back
from connect-configs after the worker restarts."""

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from connect_spark.config.properties import format_properties
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_records
from connect_spark.testing.waiting import wait_for_worker as wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, (json.loads(raw) if raw else None)


def start_worker(worker_file, log_file):
    log = open(log_file, "ab")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-m", "connect_spark.cli", "distributed", str(worker_file)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


def stop_worker(proc, timeout=180, stop_signal=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(stop_signal)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
            raise
    return proc.returncode


def test_distributed_worker_runs_and_restores_connectors(bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=1)
    produce(bootstrap_servers, topic_name, [(0, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(5)])
    port = free_port()
    suffix = topic_name[-6:]
    worker = worker_properties(bootstrap_servers, work_dir, **{
        "listeners": f"http://127.0.0.1:{port}",
        "config.storage.topic": f"dist-configs-{suffix}", "config.storage.replication.factor": "1",
        "status.storage.topic": f"dist-status-{suffix}", "status.storage.replication.factor": "1",
        "offset.storage.topic": f"dist-offsets-{suffix}",
        "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
        "spark.driver.memory": "1g",
    })
    worker_file = work_dir / "worker.properties"
    worker_file.write_text(format_properties(worker))
    url = f"http://127.0.0.1:{port}"
    recording = work_dir / "recorded"
    log_file = work_dir / "distributed.log"
    connector = {"connector.class": "RecordingSink", "topics": topic_name, "tasks.max": "1",
                 "recording.dir": str(recording)}

    proc = start_worker(worker_file, log_file)
    try:
        wait_for(lambda: call(url + "/")[0] == 200, 120, "the REST API", proc)
        assert call(url + "/connectors") == (200, [])
        code, body = call(url + "/connectors", "POST", {"name": "dist", "config": connector})
        assert code == 201, body
        wait_for(lambda: len(read_recorded_records(recording)) >= 5, 300, "the first 5 records", proc)
        status = wait_for(lambda: (lambda r: r[1] if r[1]["connector"]["state"] == "RUNNING" else None)(
            call(url + "/connectors/dist/status")), 60, "RUNNING", proc)
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
        assert stop_worker(proc) == 0
        try:  # the worker is gone: its port is closed
            call(url + "/")
            raise AssertionError("the REST API still answers after the worker stopped")
        except urllib.error.URLError:
            pass

        # A new process: the connector comes back from connect-configs and continues from committed offsets.
        proc = start_worker(worker_file, log_file)
        wait_for(lambda: call(url + "/connectors")[1] == ["dist"], 120, "the restored connector", proc)
        produce(bootstrap_servers, topic_name, [(0, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(5, 8)])
        wait_for(lambda: len(read_recorded_records(recording)) >= 8, 300, "the next 3 records", proc)
        offsets = [r["offset"] for r in read_recorded_records(recording)]
        assert sorted(offsets) == list(range(8)), offsets  # nothing lost, nothing delivered twice
        wait_for(lambda: call(url + "/connectors/dist/status")[1]["connector"]["state"] == "RUNNING", 60,
                 "RUNNING again", proc)

        assert call(url + "/connectors/dist/stop", "PUT")[0] == 204
        wait_for(lambda: call(url + "/connectors/dist/status")[1]["connector"]["state"] == "STOPPED", 120,
                 "STOPPED", proc)
        code, body = call(url + "/connectors/dist/offsets")
        assert code == 200 and body["offsets"] == [
            {"partition": {"kafka_topic": topic_name, "kafka_partition": 0}, "offset": {"kafka_offset": 8}}]
    finally:
        code = stop_worker(proc, stop_signal=signal.SIGINT)  # Ctrl-C: as graceful as SIGTERM above
    assert code == 0, log_file.read_text()[-3000:]
    assert "Received SIGINT: stopping every connector gracefully" in log_file.read_text()
