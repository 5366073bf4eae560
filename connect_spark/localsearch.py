"""A single-node OpenSearch on 127.0.0.1, for the search sink's tests and ``connect-spark dev-opensearch``.

Runs OpenSearch's integration-test distribution (``org.opensearch.distribution.integ-test-zip``, resolved
with the other artifact sets, see :data:`connect_spark.jvm.OPENSEARCH`) with the machine's Java 17. Each
server gets its own configuration, data and log folders under ``data_dir``; the distribution itself is only
read. OpenSearch refuses to run as root, so when this process is root the server runs as the unprivileged
system user ``opensearch`` (created with ``useradd --system`` when missing), through ``setpriv``, which
execs: the process this object holds is OpenSearch's JVM itself (tests pause it with SIGSTOP).

Used by the session fixture in ``connect_spark.testing.search`` and by ``jobs/bench_search.py``::

    with LocalOpenSearch(tmp_dir) as server:
        server.url          # http://127.0.0.1:PORT
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from connect_spark.api.errors import ConnectException
from connect_spark.localprocess import LocalProcess, free_port

__all__ = ["LocalOpenSearch", "OpenSearchError", "SERVICE_USER"]

#: The system user the server runs as when this process is root.
SERVICE_USER = "opensearch"


class OpenSearchError(ConnectException):
    """The local OpenSearch could not be found, started or stopped; the message says why."""


class LocalOpenSearch(LocalProcess):
    """One OpenSearch node, owned by whoever started it.

    Args:
        data_dir: folder for the node's configuration, data and log; created at start.
        port: HTTP port on 127.0.0.1 (0 = a free port).
        heap: JVM heap (``-Xms`` = ``-Xmx``); small by default for 2-core test machines.
    """

    name = "OpenSearch node"
    error = OpenSearchError
    log_name = "opensearch.log"
    state_file = "opensearch.json"
    state_key = "url"
    stop_timeout = 30.0

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 0, heap: str = "384m") -> None:
        super().__init__(data_dir)
        self.port = port
        self.heap = heap
        self._as_service_user = os.geteuid() == 0

    @property
    def url(self) -> str:
        """The ``connection.url`` a sink uses."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.url

    def start(self, timeout: float = 180.0, detach: bool = False) -> "LocalOpenSearch":
        """Start the node and wait until its cluster health is at least yellow.

        Raises:
            OpenSearchError: the distribution is not resolved, a port is taken, or the node died or did not
                answer in time (the message carries the end of its log).
        """
        if self._process is not None:
            raise OpenSearchError(f"The OpenSearch node in {self.data_dir} is already running (pid {self.pid}).")
        home = _distribution()
        from connect_spark.jvm.java import JavaNotFoundError, find_java

        try:
            java = find_java(17, "OpenSearch 2.19")
        except JavaNotFoundError as e:
            raise OpenSearchError(str(e)) from e
        self.port = self.port or free_port()
        if _health(self.port) is not None:
            raise OpenSearchError(f"Cannot start OpenSearch: port 127.0.0.1:{self.port} is already in use.")
        if self._as_service_user:
            _ensure_service_user()  # before the configuration, whose files are handed to that user
        conf = self._configure(home)
        env = dict(os.environ, OPENSEARCH_PATH_CONF=str(conf), OPENSEARCH_JAVA_OPTS=f"-Xms{self.heap} -Xmx{self.heap}",
                   JAVA_HOME=str(Path(java).resolve().parents[1]))
        env.pop("JAVA_TOOL_OPTIONS", None)
        command = [str(home / "bin" / "opensearch")]
        if self._as_service_user:
            command = ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--init-groups",
                       "--inh-caps=-all", "--"] + command
            env["HOME"] = str(self.data_dir)
        self._launch(command, timeout, detach, cwd=str(self.data_dir), env=env)
        return self

    @classmethod
    def detached_url(cls, data_dir: str | os.PathLike[str]) -> str | None:
        """The URL of a node started with ``detach=True`` in ``data_dir`` that is still alive, or None."""
        return cls.detached_live_address(data_dir)

    # -- internals --------------------------------------------------------------------------

    def _configure(self, home: Path) -> Path:
        """A fresh configuration folder: the distribution's, with this node's settings appended."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "config"
        if conf.exists():
            shutil.rmtree(conf)
        shutil.copytree(home / "config", conf)
        # The JVM options' relative GC-log and heap-dump paths point into the (read-only) distribution.
        options = conf / "jvm.options"
        options.write_text("".join(line for line in options.read_text().splitlines(keepends=True)
                                   if "logs/" not in line and "HeapDumpPath" not in line))
        data, logs = self.data_dir / "data", self.data_dir / "logs"
        data.mkdir(exist_ok=True)
        logs.mkdir(exist_ok=True)
        with open(conf / "opensearch.yml", "a") as f:
            f.write(
                "\ncluster.name: connect-spark-dev\n"
                "discovery.type: single-node\n"
                "network.host: 127.0.0.1\n"
                f"http.port: {self.port}\n"
                "transport.port: 0\n"
                f"path.data: {data}\n"
                f"path.logs: {logs}\n"
                "cluster.routing.allocation.disk.threshold_enabled: false\n"
                "action.auto_create_index: true\n"
            )
        if self._as_service_user:
            for path in [self.data_dir, *self.data_dir.rglob("*")]:
                shutil.chown(path, SERVICE_USER, SERVICE_USER)
            _reachable(self.data_dir)
            _reachable(home)
        return conf

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if _health(self.port) in ("yellow", "green"):
                return
            time.sleep(0.5)
        raise OpenSearchError(f"OpenSearch did not answer at {self.url} within {timeout:.0f} s. "
                              f"End of {self.log_file}:\n{self._log_tail()}")


def _distribution() -> Path:
    """The unpacked distribution's home folder."""
    from connect_spark.jvm import OPENSEARCH, ensure_resolved
    from connect_spark.jvm.resolver import JarResolutionError

    try:
        ensure_resolved([OPENSEARCH])
    except JarResolutionError as e:
        raise OpenSearchError(f"Cannot start OpenSearch: {e}") from e
    homes = sorted(p.parent.parent for p in OPENSEARCH.folder().glob("opensearch-*/bin/opensearch"))
    if not homes:
        raise OpenSearchError(f"No OpenSearch distribution in {OPENSEARCH.folder()}; run `connect-spark jars` again.")
    return homes[-1]


def _ensure_service_user() -> None:
    """Create the ``opensearch`` system user (no home, no login shell) when it does not exist."""
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", SERVICE_USER], capture_output=True, text=True)
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise OpenSearchError(f"Cannot create the system user {SERVICE_USER} OpenSearch runs as (it refuses "
                                  f"root): {done.stderr.strip()}")


def _reachable(path: Path) -> None:
    """Let other users traverse every folder above ``path`` and read the files under it (the distribution
    and this node's folder are read by the service user)."""
    parent = path.parent
    while parent != parent.parent:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)
        parent = parent.parent
    mode = path.stat().st_mode
    if not mode & 0o005 == 0o005:
        path.chmod(mode | 0o005)


def _health(port: int) -> str | None:
    """The cluster's health status on ``port``, or None when nothing answers."""
    import json

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_cluster/health", timeout=2) as response:
            return json.loads(response.read()).get("status")
    except (urllib.error.URLError, OSError, ValueError):
        return None
