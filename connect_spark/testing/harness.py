"""Run a connector against a real topic in a few lines, in-process or as the real CLI.

    result = run_connector(
        {"name": "my-sink", "connector.class": "my_pkg.MySinkConnector", "topics": "orders"},
        bootstrap_servers=broker.bootstrap_servers, work_dir=tmp_path, spark=spark,
    )
    assert result.exit_code == 0
    assert result.committed == {TopicPartition("orders", 0): 100}
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import format_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RunResult", "worker_properties", "run_connector", "committed_offsets", "offsets_after_drain",
           "cli_command"]


@dataclass
class RunResult:
    exit_code: int
    committed: dict[TopicPartition, int]


def worker_properties(bootstrap_servers: str, work_dir: str | os.PathLike[str], **overrides: Any) -> dict[str, str]:
    """A worker configuration for tests: the given broker, checkpoints under ``work_dir``, a short commit tick."""
    props = {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "checkpoint.location": str(Path(work_dir) / "checkpoints"),
        "offset.flush.interval.ms": "1000",
        "offset.storage.replication.factor": "1",
        "trigger": "500ms",
        "task.execution.mode": "driver",
    }
    props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return props


def committed_offsets(worker: Mapping[str, str], connector_name: str) -> dict[TopicPartition, int]:
    """What the worker's offset store holds for a connector."""
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.owner import build_offset_store

    store = build_offset_store(WorkerConfig(worker))
    store.start()
    try:
        return store.read(connector_name)
    finally:
        store.stop()


def offsets_after_drain(
    expected: Mapping[TopicPartition, int],
    committed_before: Mapping[TopicPartition, int],
    sink_held_before: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """What the offset store holds after a run that drains a topic, for a sink that keeps its own offsets.

    Every partition reaches ``expected``, except one whose sink already held ``expected`` before the run
    (a crash fell between the sink's commit and the offset store's). The task's rewind to it counts as
    committed without being written, as in Connect, so the store keeps ``committed_before`` until the task
    writes more records of that partition.

    Args:
        expected: per partition, where the sink's ``pre_commit`` ends after the run.
        committed_before: what the offset store held before the run (:func:`committed_offsets`).
        sink_held_before: what the sink's own storage held before the run (the offsets it rewinds to).
    """
    after: dict[TopicPartition, int] = {}
    for tp, offset in expected.items():
        if sink_held_before.get(tp) != offset:
            after[tp] = offset
        elif tp in committed_before:
            after[tp] = committed_before[tp]
    return after


def run_connector(
    connector: Mapping[str, str],
    bootstrap_servers: str,
    work_dir: str | os.PathLike[str],
    spark: "SparkSession | None" = None,
    available_now: bool = True,
    worker: Mapping[str, str] | None = None,
) -> RunResult:
    """Run one connector in this process until it drains (AvailableNow) and return the outcome."""
    from connect_spark.runtime.worker.launcher import run_standalone

    worker_props = dict(worker or worker_properties(bootstrap_servers, work_dir))
    code = run_standalone(worker_props, [dict(connector)], available_now=available_now, spark=spark)
    return RunResult(code, committed_offsets(worker_props, connector["name"]))


def cli_command(worker: Mapping[str, str], connector: Mapping[str, str], work_dir: str | os.PathLike[str],
                available_now: bool = False) -> list[str]:
    """The ``connect-spark standalone`` command line for these configurations (files written to ``work_dir``)."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    worker_file, connector_file = work / "worker.properties", work / f"{connector['name']}.properties"
    worker_file.write_text(format_properties(worker))
    connector_file.write_text(format_properties(connector))
    command = [sys.executable, "-m", "connect_spark.cli", "standalone"]
    if available_now:
        command.append("--available-now")
    return command + [str(worker_file), str(connector_file)]


def start_cli(worker: Mapping[str, str], connector: Mapping[str, str], work_dir: str | os.PathLike[str],
              available_now: bool = False, log_name: str = "cli.log") -> subprocess.Popen:
    """Start the real CLI as a child process (its output goes to ``work_dir/log_name``)."""
    log = open(Path(work_dir) / log_name, "ab")
    return subprocess.Popen(cli_command(worker, connector, work_dir, available_now), stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
