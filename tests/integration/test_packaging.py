"""`pip install` of connect_spark into an environment that already holds a supported pyspark keeps it.

Run by pip itself against a new virtualenv holding the real pyspark this environment runs (each CI lane its
own: 4.0, 4.1, 4.2), asking it what installing this checkout would change (``--dry-run --report``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[2]


def pip(target_python: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pip", "--python", str(target_python), "--disable-pip-version-check", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def test_installing_connect_spark_keeps_the_users_pyspark(tmp_path):
    users = tmp_path / "users-env"
    venv.EnvBuilder(with_pip=False).create(users)
    python = users / "bin" / "python"
    installed = pip(python, "install", "--quiet", "--no-deps", f"pyspark=={pyspark.__version__}")
    assert installed.returncode == 0, installed.stderr[-2000:]

    report_path = tmp_path / "report.json"
    planned = pip(python, "install", "--dry-run", "--quiet", "--report", str(report_path), str(ROOT))
    assert planned.returncode == 0, planned.stderr[-2000:]
    chosen = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]
              for item in json.loads(report_path.read_text())["install"]}

    assert "connect-spark" in chosen
    assert "pyspark" not in chosen, f"pip would replace pyspark {pyspark.__version__} with {chosen['pyspark']['version']}"
    assert "delta-spark" not in chosen  # the Delta sink reaches Delta through SQL; its jar needs no Python package
