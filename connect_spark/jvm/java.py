"""Finds a Java runtime of at least a given major version.

Called by the local servers (:mod:`connect_spark.localregistry`) before they start a JVM. Candidates, in
order: ``$CONNECT_SPARK_JAVA_HOME``, ``$JAVA_HOME``, ``java`` on ``PATH``, then every JDK under
``/usr/lib/jvm`` (newest first). The first whose ``java -version`` reports a major version at least the
one asked for wins, so a machine whose default Java is older still finds a newer JDK installed beside it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from connect_spark.api.errors import ConnectException

__all__ = ["JavaNotFoundError", "find_java", "java_major_version"]

_VERSION = re.compile(r'version "(?P<major>\d+)(?:\.(?P<minor>\d+))?')
_JVM_FOLDER = Path("/usr/lib/jvm")


class JavaNotFoundError(ConnectException):
    """No Java runtime of the needed version was found; the message lists what was tried."""


@functools.lru_cache(maxsize=None)
def java_major_version(java: str) -> int | None:
    """The major version ``java -version`` reports (``1.8`` → 8), or None when it cannot run."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(proc.stderr + proc.stdout)
    if match is None:
        return None
    major = int(match.group("major"))
    return int(match.group("minor") or 0) if major == 1 else major


def _candidates() -> list[str]:
    found: list[str] = []
    for variable in ("CONNECT_SPARK_JAVA_HOME", "JAVA_HOME"):
        home = os.environ.get(variable)
        if home:
            found.append(str(Path(home) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        found.append(on_path)
    if _JVM_FOLDER.is_dir():
        homes = sorted(_JVM_FOLDER.iterdir(), key=lambda p: _trailing_number(p.name), reverse=True)
        found.extend(str(home / "bin" / "java") for home in homes if (home / "bin" / "java").is_file())
    unique: list[str] = []
    for java in found:
        if java not in unique:
            unique.append(java)
    return unique


def _trailing_number(name: str) -> int:
    numbers = re.findall(r"\d+", name)
    return int(numbers[0]) if numbers else 0


def find_java(min_major: int, purpose: str) -> str:
    """The path of a ``java`` executable whose major version is at least ``min_major``.

    Raises:
        JavaNotFoundError: none of the candidates qualifies; the message names each and its version.
    """
    tried = []
    for java in _candidates():
        major = java_major_version(java)
        if major is not None and major >= min_major:
            return java
        tried.append(f"{java} ({'not runnable' if major is None else f'Java {major}'})")
    raise JavaNotFoundError(
        f"{purpose} needs Java {min_major}+, and none was found (tried: {', '.join(tried) or 'nothing'}). "
        f"Install one (e.g. apt-get install openjdk-{min_major}-jre-headless) or set CONNECT_SPARK_JAVA_HOME."
    )
