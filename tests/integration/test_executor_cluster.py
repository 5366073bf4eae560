"""Executor mode on real executor JVMs: ``local-cluster`` through the CLI, executor loss, ``spark-submit``.

Each test runs the connector in its own driver process (the real CLI or ``spark-submit``), never in the
test session's ``local[2]`` session: executors here are separate JVMs with their own Python workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from connect_spark.testing.harness import cli_command, committed_offsets, start_cli, worker_properties
from connect_spark.testing.kafka import fill_topic, topic_end_offsets
from connect_spark.testing.recording import read_recorded_calls, read_recorded_records
from connect_spark.testing.spark_cluster import (
    descendants, executor_jvms, parent_pid, spark_home, spark_submit,
)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cluster  # every test here starts executor JVMs (local-cluster, a standalone worker)

LOCAL_CLUSTER = "local-cluster[2,1,1024]"
RUN_TIMEOUT_S = 240


def _connector(name, topic, out, **extra):
    props = {"name": name, "connector.class": "RecordingSink", "topics": topic, "recording.dir": str(out)}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def _cluster_worker(bootstrap, work_dir, **spark):
    """Executor mode in a local-cluster session of the CLI's own, executors on the venv's Python."""
    props = worker_properties(bootstrap, work_dir, task_execution_mode="executor")
    props.update({
        "spark.master": LOCAL_CLUSTER,
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.pyspark.python": sys.executable,
        "spark.sql.shuffle.partitions": "2",
    })
    props.update(spark)
    return props


def _child_env():
    """The CLI and every JVM/Python worker below it import connect_spark from this checkout."""
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO), path) if p), "PYSPARK_PYTHON": sys.executable}


def _offsets_by_partition(records):
    seen = defaultdict(list)
    for r in records:
        seen[r["partition"]].append(r["offset"])
    return seen


def _log_tail(work_dir, name="cli.log"):
    path = Path(work_dir) / name
    return path.read_text(errors="replace")[-4000:] if path.exists() else "(no log)"


def _start(worker, connector, work_dir):
    os.environ.update(_child_env())  # start_cli passes this process's environment on
    return start_cli(worker, connector, work_dir, available_now=True)


def _stop(process):
    if process.poll() is None:
        process.kill()
        process.wait()


def test_local_cluster_tasks_run_on_two_executor_jvms_and_see_only_their_partitions(
        bootstrap_servers, topic_name, work_dir):
    total, partitions, tasks = 4_000, 8, 4
    fill_topic(bootstrap_servers, topic_name, total, partitions, headers=False)
    out = Path(work_dir) / "out"
    name = f"cluster-{topic_name}"
    worker = _cluster_worker(bootstrap_servers, work_dir)
    process = _start(worker, _connector(name, topic_name, out, tasks_max=tasks), work_dir)
    jvm_of_daemon: dict[int, int] = {}  # PySpark daemon pid -> the executor JVM it runs under
    jvms_seen: set[int] = set()
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline:
            for jvm in executor_jvms(process.pid):
                jvms_seen.add(jvm)
                for pid in descendants(jvm):
                    jvm_of_daemon.setdefault(pid, jvm)
            time.sleep(0.5)
        assert process.poll() == 0, _log_tail(work_dir)
    finally:
        _stop(process)

    records = read_recorded_records(out)
    assert len(records) == total, "without failures every record is delivered exactly once"
    for partition, offsets in _offsets_by_partition(records).items():
        assert offsets == list(range(total // partitions)), f"partition {partition} not once and in order"

    for task_id in range(tasks):
        calls = read_recorded_calls(out, task_id)
        opened = {tuple(p) for c in calls if c["call"] == "open" for p in c["partitions"]}
        owned = {(topic_name, 2 * task_id), (topic_name, 2 * task_id + 1)}  # Connect's range assignment
        assert opened == owned, f"task {task_id} opened {sorted(opened)}"
        with open(out / f"task-{task_id}" / "records.jsonl") as f:
            written_partitions = {json.loads(line)["partition"] for line in f}
        assert written_partitions == {p for _, p in owned}

    put_pids = {r["pid"] for r in records}
    assert process.pid not in put_pids, "put ran in the driver process"
    daemons = {r["ppid"] for r in records}
    jvms_of_puts = {jvm_of_daemon.get(d) for d in daemons}
    assert None not in jvms_of_puts, f"a put ran outside the executor JVMs {sorted(jvms_seen)}"
    assert len(jvms_of_puts) >= 2, f"puts ran under only {jvms_of_puts} of executor JVMs {sorted(jvms_seen)}"

    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def _wait_for_put_written(out, task_ids, process, timeout_s):
    """The first ``put`` call (with its records on disk) of any of ``task_ids``, while the CLI runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before any put was seen"
        for task_id in task_ids:
            puts = [c for c in read_recorded_calls(out, task_id) if c["call"] == "put" and c["count"]]
            if puts and (out / f"task-{task_id}" / "records.jsonl").exists():
                return puts[0]
        time.sleep(0.2)
    raise AssertionError("no put started in time")


def test_killing_an_executor_jvm_mid_batch_retries_the_batch_and_loses_nothing(
        bootstrap_servers, topic_name, work_dir):
    total, partitions, tasks = 2_000, 2, 2  # one partition per task: Spark tasks are the Connect tasks, no shuffle
    fill_topic(bootstrap_servers, topic_name, total, partitions, headers=False)
    out = Path(work_dir) / "out"
    name = f"kill-{topic_name}"
    worker = _cluster_worker(bootstrap_servers, work_dir, **{"spark.task.maxFailures": "4"})
    connector = _connector(name, topic_name, out, tasks_max=tasks, recording_put_delay_ms=4000)
    process = _start(worker, connector, work_dir)
    try:
        put = _wait_for_put_written(out, range(tasks), process, RUN_TIMEOUT_S)
        victim = parent_pid(put["ppid"])  # python worker -> PySpark daemon -> executor JVM
        assert victim in executor_jvms(process.pid), f"{victim} is not an executor JVM of the driver"
        os.kill(victim, signal.SIGKILL)
        process.wait(RUN_TIMEOUT_S)
        assert process.returncode == 0, _log_tail(work_dir)
    finally:
        _stop(process)

    records = read_recorded_records(out)
    delivered = Counter((r["partition"], r["offset"]) for r in records)
    expected = {(p, o) for p in range(partitions) for o in range(total // partitions)}
    assert set(delivered) == expected, "records lost (or unknown ones delivered)"
    assert any(n > 1 for n in delivered.values()), "the killed task's batch was not delivered again"
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)


def test_spark_submit_to_a_standalone_master_and_worker(standalone_cluster, bootstrap_servers, topic_name, work_dir):
    from connect_spark.jvm import delta_set, jar_paths, spark_kafka_set

    total, partitions = 3_000, 2
    fill_topic(bootstrap_servers, topic_name, total, partitions, headers=False)
    out = Path(work_dir) / "out"
    name = f"submit-{topic_name}"
    worker = worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor")
    worker["spark.ui.enabled"] = "false"
    connector = _connector(name, topic_name, out, tasks_max=2)
    properties = cli_command(worker, connector, work_dir, available_now=True)[-3:]  # --available-now w c
    jars = ",".join(str(p) for s in (spark_kafka_set(), delta_set()) for p in jar_paths(s))
    env = {**os.environ, **_child_env(), "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    cluster = standalone_cluster  # shared by the cluster tests: count this application's executors only
    executors_before = set(cluster.work_dir.glob("worker*/app-*/*/stderr"))
    command = [str(spark_submit()), "--master", cluster.master_url, "--deploy-mode", "client",
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.executor.memory=512m", "--conf", f"spark.pyspark.python={sys.executable}",
               "--jars", jars, str(REPO / "jobs" / "connect_standalone.py"), *properties]
    with open(Path(work_dir) / "submit.log", "ab") as log:
        submitted = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
    assert submitted.returncode == 0, _log_tail(work_dir, "submit.log")
    assert set(cluster.work_dir.glob("worker*/app-*/*/stderr")) - executors_before, \
        "the standalone workers launched no executor for the application"

    records = read_recorded_records(out)
    assert sorted((r["partition"], r["offset"]) for r in records) == \
        [(p, o) for p in range(partitions) for o in range(total // partitions)]
    assert committed_offsets(worker, name) == topic_end_offsets(bootstrap_servers, topic_name)
