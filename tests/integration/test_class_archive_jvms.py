"""Real driver JVMs: the first session connect_spark builds writes the class data sharing archive as its JVM
exits, and the next one loads Spark's classes from it (the JVM's own class-load log says where from)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from connect_spark.jvm.class_archive import ARCHIVE_MAGIC

_SESSION = """
import sys
from connect_spark.spark_session import get_or_create_session
conf = {"spark.master": "local[1]", "spark.driver.extraJavaOptions": sys.argv[1]} if sys.argv[1] else {"spark.master": "local[1]"}
spark = get_or_create_session(conf=conf, ui=False)
assert spark.range(10).count() == 10
spark.stop()
"""


def _session(folder: Path, java_options: str = "") -> None:
    env = {**os.environ, "CONNECT_SPARK_CLASS_ARCHIVES": str(folder)}
    done = subprocess.run([sys.executable, "-c", _SESSION, java_options], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cds" not in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]  # the JVM's messages are off


def _written(folder: Path, timeout_s: float = 120.0) -> list[Path]:
    """The archives once a driver's JVM finished writing one (it writes as it exits, after Python is gone)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        parts = [p for p in folder.glob("*.part") if p.read_bytes()[:4] == ARCHIVE_MAGIC]
        if parts:
            return parts
        time.sleep(0.5)
    return []


def test_the_second_driver_loads_spark_classes_from_the_archive_the_first_wrote(tmp_path):
    folder = tmp_path / "archives"
    _session(folder)
    assert _written(folder), sorted(p.name for p in folder.iterdir())
    assert not list(folder.glob("*.jsa"))

    class_log = tmp_path / "classes.log"
    _session(folder, f"-Xlog:class+load=info:file={class_log}")
    archives = list(folder.glob("*.jsa"))
    assert len(archives) == 1 and not list(folder.glob("*.part")) and not list(folder.glob("*.claim"))
    loaded = class_log.read_text().splitlines()
    from_archive = [line for line in loaded if "org.apache.spark." in line and "shared objects file (top)" in line]
    assert len(from_archive) > 1000, loaded[-20:]
