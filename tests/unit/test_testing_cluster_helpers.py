"""Pure-Python test helpers behind the executor-cluster tests: process-tree lookups and the slow recording task."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

from connect_spark.api import SinkRecord
from connect_spark.testing.recording import RecordingSinkTask, read_recorded_calls, read_recorded_records
from connect_spark.testing.spark_cluster import descendants, executor_jvms, free_port, parent_pid, spark_home


def test_descendants_include_grandchildren_and_parent_pid_walks_back():
    child = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, sys; subprocess.run(['sleep', '30'])"])
    try:
        deadline = time.monotonic() + 10
        below = []
        while time.monotonic() < deadline and not any(parent_pid(pid) == child.pid for pid in below):
            below = descendants(os.getpid())  # other children of this process may be listed too
            time.sleep(0.05)
        assert child.pid in below
        grandchildren = [pid for pid in below if parent_pid(pid) == child.pid]
        assert len(grandchildren) == 1
        assert parent_pid(child.pid) == os.getpid()
        assert executor_jvms(os.getpid()) == []  # no CoarseGrainedExecutorBackend below a test process
    finally:
        for pid in descendants(child.pid):
            os.kill(pid, 9)
        child.kill()
        child.wait()
    assert parent_pid(child.pid) is None


def test_spark_home_is_the_pip_package_with_its_launch_scripts():
    assert (spark_home() / "bin" / "spark-class").exists()
    assert (spark_home() / "bin" / "spark-submit").exists()
    assert 1024 <= free_port() <= 65535


def test_put_delay_makes_puts_slow_and_records_note_the_parent_process(tmp_path, monkeypatch):
    from connect_spark.testing import recording

    sleeps: list[float] = []
    # the recording module's own clock only: patching time.sleep itself would catch every thread's sleeps
    monkeypatch.setattr(recording, "time", SimpleNamespace(sleep=sleeps.append))
    task = RecordingSinkTask()
    task.start({"recording.dir": str(tmp_path), "task.id": "3", "recording.put.delay.ms": "300"})
    records = [SinkRecord("t", 1, None, b"k", None, b"v", 7)]
    task.put(records)
    assert sleeps == [0.3]
    task.put([])
    assert sleeps == [0.3], "an empty put does not sleep"
    written = read_recorded_records(tmp_path)
    assert [(r["partition"], r["offset"], r["pid"], r["ppid"]) for r in written] == [(1, 7, os.getpid(), os.getppid())]
    assert {c["ppid"] for c in read_recorded_calls(tmp_path, 3)} == {os.getppid()}
