"""On a Spark older than 4.2 the CLI refuses task.execution.mode=realtime at validation, before Spark starts.

Collected only when the installed pyspark is older than 4.2 (``tests/conftest.py``); on 4.2 the mode runs
(``test_realtime_mode.py``)."""

from __future__ import annotations

import subprocess

from connect_spark.testing.harness import cli_command, worker_properties


def test_the_cli_refuses_realtime_on_this_spark_naming_key_value_version_and_allowed_modes(bootstrap_servers, work_dir):
    from pyspark import __version__ as spark_version

    worker = worker_properties(bootstrap_servers, work_dir)
    connector = {"name": "rt-refused", "connector.class": "FileStreamSink", "topics": "rt-refused",
                 "file": str(work_dir / "out.txt"), "task.execution.mode": "realtime"}
    done = subprocess.run(cli_command(worker, connector, work_dir), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert ("task.execution.mode=realtime: connector rt-refused needs Spark 4.2 or newer (its real-time trigger); "
            f"the running pyspark is {spark_version}. Allowed with this Spark: executor or driver.") in done.stderr
    assert not (work_dir / "checkpoints").exists()  # refused before any query started
