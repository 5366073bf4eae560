"""The README's demo command works end to end (on a small input)."""

from __future__ import annotations

import subprocess
import sys


def test_demo_runs_the_delta_connector_end_to_end(jars, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "connect_spark.cli", "demo", "--records", "500",
                           "--data-dir", str(tmp_path / "demo")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "holds 500 rows" in proc.stdout
    assert "connect-spark standalone exited with 0" in proc.stdout
