"""A connector on a real Spark standalone cluster stops as cleanly as it does locally.

Every test submits ``jobs/connect_standalone.py`` with the installed pyspark's ``spark-submit`` to the
session's standalone cluster (a master and two workers, see ``standalone_cluster`` in conftest) and
signals the processes a cluster manager signals: the ``spark-submit`` JVM (client mode), the driver JVM a
worker launched (cluster mode), a worker (decommissioning).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from connect_spark.config.properties import format_properties
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_calls, read_recorded_records
from connect_spark.testing.spark_cluster import spark_core_jar, spark_home, spark_submit

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cluster

PARTITIONS = 2
STOP_TIMEOUT_S = 120  # the graceful stop (5 s for the batch in flight) plus Spark's own shutdown, on a busy machine


def _jars() -> str:
    from connect_spark.jvm import delta_set, jar_paths, spark_kafka_set

    return ",".join(str(p) for s in (spark_kafka_set(), delta_set()) for p in jar_paths(s))


def _submit_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1"}


def _submit_command(cluster, properties: list[Path], *, cluster_mode: bool = False,
                    conf: dict[str, str] | None = None) -> list[str]:
    """``spark-submit`` of the connectors in ``properties`` (the worker's file first) to ``cluster``; cluster
    mode supervised."""
    settings = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": "512m", "spark.pyspark.python": sys.executable,
                "spark.pyspark.driver.python": sys.executable, **(conf or {})}
    command = [str(spark_submit()), "--master", cluster.master_url, "--jars", _jars()]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    app = [str(REPO / "jobs" / "connect_standalone.py")]
    if cluster_mode:
        # Spark refuses a .py primary resource in standalone cluster mode; its own PythonRunner, named as
        # the main class of the spark-core jar every worker has, runs the same program.
        command += ["--deploy-mode", "cluster", "--supervise", "--driver-memory", "1g",
                    "--class", "org.apache.spark.deploy.PythonRunner", str(spark_core_jar())]
        app.append("")  # PythonRunner's second argument: no --py-files
    else:
        command += ["--deploy-mode", "client"]
    return command + app + [str(p) for p in properties]


def _write(work: Path, name: str, props: dict[str, str]) -> Path:
    path = work / f"{name}.properties"
    path.write_text(format_properties(props))
    return path


def _wait(condition, timeout: float, what: str, process: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(1.0)
    tail = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
    raise AssertionError(f"{what} (waited {timeout:.0f} s)\n{tail}")


def _delta_offsets(spark, table: Path) -> list[tuple[int, int]]:
    if not list((table / "_delta_log").glob("*.json")):
        return []
    rows = spark.read.format("delta").load(str(table)).select("_partition", "_offset").collect()
    return [(r["_partition"], r["_offset"]) for r in rows]


def _delta_rows(table: Path) -> int:
    """The table's row count from its log's file statistics: cheap enough to poll while the driver under
    test needs both cores (reading the table with Spark would compete with it)."""
    live: dict[str, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = json.loads(action["add"].get("stats") or "{}").get("numRecords", 0)
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return sum(live.values())


def _all_offsets(total: int) -> list[tuple[int, int]]:
    return sorted((i % PARTITIONS, i // PARTITIONS) for i in range(total))


class Feed:
    """Records produced while the connectors run (``stop`` ends it), as a live topic gets them: record ``i``
    goes to partition ``i % PARTITIONS``, so it lands at offset ``i // PARTITIONS`` there."""

    def __init__(self, bootstrap_servers: str, topic: str, per_second: int = 1_000) -> None:
        self.produced = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=produce, args=(bootstrap_servers, topic, self._records(per_second)),
                                        daemon=True)

    def _records(self, per_second: int):
        while not self._stopped.is_set():
            for _ in range(per_second // 10):
                i = self.produced
                yield i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), []
                self.produced += 1
            time.sleep(0.1)

    def start(self) -> "Feed":
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop producing; returns how many records were produced (all acknowledged)."""
        self._stopped.set()
        self._thread.join(60)
        assert not self._thread.is_alive()
        return self.produced


def _recorded(out: Path) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in read_recorded_records(out)]


def test_sigterm_then_sigint_to_spark_submit_stop_gracefully_and_a_restart_redelivers_nothing(
        spark, standalone_cluster, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    feed = Feed(bootstrap_servers, topic_name, per_second=300).start()
    work, out, table = Path(work_dir), Path(work_dir) / "out", Path(work_dir) / "delta"
    # Commits only at the stop: a stop without its final commit would show as redelivered records.
    worker = worker_properties(bootstrap_servers, work, offset_flush_interval_ms=600_000,
                               task_shutdown_graceful_timeout_ms=30_000,
                               trigger="200ms", spark_ui_enabled="false")
    records = {"name": f"records-{topic_name}", "connector.class": "RecordingSink", "topics": topic_name,
               "recording.dir": str(out)}
    delta = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
             "delta.table.path": str(table), "delta.column.partition": "_partition",
             "delta.column.offset": "_offset"}
    files = [_write(work, "worker", worker), _write(work, "records", records), _write(work, "delta", delta)]

    for run, stop_signal in enumerate((signal.SIGTERM, signal.SIGINT)):
        log_path = work / f"submit-{run}.log"
        before = len(_recorded(out))
        with open(log_path, "ab") as log:
            submitted = subprocess.Popen(_submit_command(standalone_cluster, files), env=_submit_env(), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _wait(lambda: len(_recorded(out)) > before + 600 and _delta_rows(table), 240,
                  f"run {run} delivered nothing", submitted, log_path)
            os.kill(submitted.pid, stop_signal)  # the spark-submit JVM, as a cluster manager or `timeout` does
            code = submitted.wait(STOP_TIMEOUT_S)
        finally:
            if submitted.poll() is None:
                submitted.kill()
                submitted.wait()
        text = log_path.read_text(errors="replace")
        assert code == 0, text[-4000:]
        name = stop_signal.name[3:]
        assert f"Spark's driver JVM received SIG{name}: stopping gracefully" in text
        assert "Stop requested: finishing the batch in flight, committing and stopping" in text
        final = text[text.index("Stop requested"):]
        assert f"records-{topic_name}: committed offsets" in final
        # Each record up to the committed offsets exactly once, none past them: nothing is lost, and the
        # next start (the next run) delivers none of them again.
        for connector, delivered in ((records, _recorded(out)), (delta, _delta_offsets(spark, table))):
            committed = committed_offsets(worker, connector["name"])
            assert sorted(delivered) == sorted((tp.partition, o) for tp, end in committed.items()
                                               for o in range(end)), (run, connector["name"])
        assert sum(committed.values()) > 0
        calls = [c["call"] for c in read_recorded_calls(out)]
        assert calls[-3:] == ["pre_commit", "close", "stop"]
    feed.stop()


def _driver_id(log_text: str) -> str:
    marker = "Driver successfully submitted as "
    assert marker in log_text, log_text[-4000:]
    return log_text.split(marker, 1)[1].split()[0]


def _kill_leftovers(marker: str) -> None:
    """SIGKILL whatever still runs with ``marker`` (a properties path of the test) on its command line: the
    Python program of a driver JVM that was killed -9 outlives it."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
                if marker in cmdline:
                    os.kill(int(entry), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


def test_a_supervised_cluster_mode_driver_killed_minus_nine_is_restarted_and_writes_every_record_once(
        spark, standalone_cluster, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    feed = Feed(bootstrap_servers, topic_name, per_second=300).start()
    work, table = Path(work_dir), Path(work_dir) / "delta"
    worker = worker_properties(bootstrap_servers, work, trigger="200ms", spark_ui_enabled="false")
    delta = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
             "delta.table.path": str(table), "delta.column.partition": "_partition",
             "delta.column.offset": "_offset"}
    files = [_write(work, "worker", worker), _write(work, "delta", delta)]
    log_path = work / "submit.log"
    try:
        with open(log_path, "ab") as log:
            submitted = subprocess.run(_submit_command(standalone_cluster, files, cluster_mode=True),
                                       env=_submit_env(), stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, timeout=120)
        assert submitted.returncode == 0, log_path.read_text(errors="replace")[-4000:]
        driver_id = _driver_id(log_path.read_text(errors="replace"))
        _wait(lambda: _delta_rows(table) > 0, 240, "the driver wrote nothing")
        first = standalone_cluster.driver_jvms()
        assert len(first) == 1
        os.kill(first[0], signal.SIGKILL)
        killed_at = _delta_rows(table)
        _wait(lambda: standalone_cluster.driver_jvms() not in ([], first), 120, "the master did not restart the driver")
        _wait(lambda: _delta_rows(table) > killed_at + 600, 240, "the restarted driver wrote nothing")
        total = feed.stop()
        _wait(lambda: _delta_rows(table) >= total, 240, "the restarted driver did not catch up")
        # `spark-submit --kill`: the worker sends the driver JVM SIGTERM and SIGKILL 10 s later.
        killed = subprocess.run([str(spark_submit()), "--master", standalone_cluster.rest_url, "--kill", driver_id],
                                env=_submit_env(), capture_output=True, text=True, timeout=120)
        assert killed.returncode == 0, killed.stdout[-2000:] + killed.stderr[-2000:]
        _wait(lambda: not standalone_cluster.driver_jvms(), STOP_TIMEOUT_S, "the driver did not stop")
        time.sleep(3)
        assert standalone_cluster.driver_jvms() == [], "a driver that stopped cleanly was restarted"
        # Exit 0: the driver stopped gracefully (SIGTERM's default would be 143, the worker's SIGKILL 137). The
        # worker stops copying the driver's output as it kills it, so its log says this, not the driver's.
        worker_logs = "".join(standalone_cluster.log_text(f"{standalone_cluster.worker_name(n)}.log") for n in (1, 2))
        assert f"Driver {driver_id} exited successfully" in worker_logs
    finally:
        feed.stop()
        for pid in standalone_cluster.driver_jvms():
            os.kill(pid, signal.SIGKILL)
        _kill_leftovers(str(files[1]))
    offsets = _delta_offsets(spark, table)
    assert sorted(offsets) == _all_offsets(total), "a record is missing from the table or in it twice"


def _failed_tasks(event_log_dir: Path) -> list[dict]:
    """The task ends of the application's event log whose reason is not success."""
    failed = []
    for path in (p for p in event_log_dir.rglob("events_*") if p.is_file()):  # Spark 4's rolling event log
        for line in path.read_text(errors="replace").splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd" and event["Task End Reason"]["Reason"] != "Success":
                failed.append(event["Task End Reason"])
    return failed


def test_a_worker_decommissioned_mid_stream_fails_no_task_and_loses_nothing(
        spark, standalone_cluster, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    work, out, events = Path(work_dir), Path(work_dir) / "out", Path(work_dir) / "events"
    events.mkdir()
    leaving = standalone_cluster.add_worker()
    feed = Feed(bootstrap_servers, topic_name, per_second=300).start()
    worker = worker_properties(bootstrap_servers, work, task_execution_mode="executor",
                               trigger="200ms", task_shutdown_graceful_timeout_ms=30_000, spark_ui_enabled="false")
    records = {"name": f"records-{topic_name}", "connector.class": "RecordingSink", "topics": topic_name,
               "recording.dir": str(out), "tasks.max": "2"}
    files = [_write(work, "worker", worker), _write(work, "records", records)]
    conf = {"spark.decommission.enabled": "true", "spark.executor.cores": "2",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events), "spark.eventLog.compress": "false"}
    log_path = work / "submit.log"
    try:
        with open(log_path, "ab") as log:
            submitted = subprocess.Popen(_submit_command(standalone_cluster, files, conf=conf), env=_submit_env(),
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _wait(lambda: len(_recorded(out)) > 600, 240, "nothing delivered", submitted, log_path)
            standalone_cluster.decommission_worker(leaving)
            at_decommission = len(_recorded(out))
            _wait(lambda: len(_recorded(out)) > at_decommission + 1200, 240, "nothing delivered after the decommission",
                  submitted, log_path)
            total = feed.stop()
            _wait(lambda: len(_recorded(out)) >= total, 240, "the stream did not catch up", submitted, log_path)
            submitted.send_signal(signal.SIGTERM)
            assert submitted.wait(STOP_TIMEOUT_S) == 0, log_path.read_text(errors="replace")[-4000:]
        finally:
            if submitted.poll() is None:
                submitted.kill()
                submitted.wait()
    finally:
        feed.stop()
        standalone_cluster.stop_worker(leaving)
    worker_log = standalone_cluster.log_text(f"{standalone_cluster.worker_name(leaving)}.log")
    assert "decommission" in worker_log.lower(), worker_log[-3000:]
    assert sorted(_recorded(out)) == _all_offsets(total)
    assert _failed_tasks(events) == []
