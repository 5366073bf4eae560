"""A Spark standalone master and workers started from the pip-installed pyspark, and process-tree helpers.

Tests that need real executor JVMs use these: :class:`StandaloneCluster` starts
``org.apache.spark.deploy.master.Master`` and one or more ``org.apache.spark.deploy.worker.Worker`` with
``$SPARK_HOME/bin/spark-class`` (``SPARK_HOME`` is the pyspark package folder), all bound to 127.0.0.1,
and stops them (and the executors and drivers they launched) on :meth:`StandaloneCluster.stop` or when
its ``with`` block ends, also on failure. :func:`executor_jvms` finds the ``CoarseGrainedExecutorBackend``
processes below a process (a driver in ``local-cluster`` mode launches them as its children), so a test
can kill one; :meth:`StandaloneCluster.driver_jvms` finds the drivers of cluster deploy mode.

Linux only: processes are read from ``/proc``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

__all__ = ["StandaloneCluster", "spark_home", "spark_submit", "spark_core_jar", "free_port", "parent_pid",
           "descendants", "executor_jvms", "EXECUTOR_MAIN_CLASS", "DRIVER_MAIN_CLASS"]

#: The main class of an executor JVM (standalone and local-cluster).
EXECUTOR_MAIN_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
#: The main class of a driver JVM a standalone worker launched (cluster deploy mode).
DRIVER_MAIN_CLASS = "org.apache.spark.deploy.worker.DriverWrapper"


def spark_home() -> Path:
    """The pyspark package folder: it holds ``bin/spark-class``, ``bin/spark-submit`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_submit() -> Path:
    """The ``spark-submit`` script of the pip-installed pyspark."""
    return spark_home() / "bin" / "spark-submit"


def spark_core_jar() -> Path:
    """The installed pyspark's ``spark-core`` jar: the primary resource of a Python driver submitted in
    cluster deploy mode through ``--class org.apache.spark.deploy.PythonRunner``."""
    return next((spark_home() / "jars").glob("spark-core_*.jar"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid``, or ``None`` when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 4 (ppid) follows the command name in parentheses, which may itself contain spaces.
    return int(stat[stat.rindex(")") + 2:].split()[1])


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = parent_pid(int(entry))
            if parent is not None:
                parents[int(entry)] = parent
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        children = [child for child, parent in parents.items() if parent == current]
        found.extend(children)
        frontier.extend(children)
    return found


def executor_jvms(root_pid: int) -> list[int]:
    """The executor JVMs (``CoarseGrainedExecutorBackend``) among ``root_pid``'s descendants."""
    return sorted(pid for pid in descendants(root_pid) if EXECUTOR_MAIN_CLASS in _cmdline(pid))


def _stop_tree(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM a process started in its own group, then SIGKILL the group if it lingers."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:  # the group may still hold executors the worker launched
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@dataclass
class StandaloneCluster:
    """A Spark standalone master (its REST submission server on too) and ``workers`` workers on 127.0.0.1.

    Args:
        work_dir: logs (``master.log``, ``worker.log``, ``worker-2.log``, ...) and the workers' executor
            and driver folders (``worker/``, ``worker-2/``, ...) go here.
        cores, memory: what each worker offers (``--cores``, ``--memory``).
        workers: how many workers.
        env: extra environment for every daemon (a worker passes it on to the executors and drivers it
            launches); ``SPARK_WORKER_OPTS`` here sets the workers' own ``spark.*`` keys.
        start_timeout: seconds to wait for the master to accept each worker.
    """

    work_dir: Path
    cores: int = 1
    memory: str = "1g"
    env: dict[str, str] = field(default_factory=dict)
    start_timeout: float = 90.0
    workers: int = 1
    port: int = 0
    rest_port: int = 0
    _processes: list[subprocess.Popen] = field(default_factory=list)
    _workers: list[subprocess.Popen] = field(default_factory=list)
    _logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def rest_url(self) -> str:
        """The master's REST submission server, which ``spark-submit --kill`` and ``--status`` talk to."""
        return f"spark://127.0.0.1:{self.rest_port}"

    def start(self) -> "StandaloneCluster":
        """Start the master, then each worker, and wait until every worker is registered."""
        self.work_dir = Path(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        try:
            self.rest_port = self.rest_port or free_port()
            rest = f"-Dspark.master.rest.enabled=true -Dspark.master.rest.port={self.rest_port}"
            master = self._spawn("master.log", "org.apache.spark.deploy.master.Master",
                                 "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", "0",
                                 extra_env={"SPARK_MASTER_OPTS": rest})
            self._wait_for(master, "master.log", "I have been elected leader", "the master")
            for _ in range(self.workers):
                self.add_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self) -> int:
        """Start one more worker like the others, wait until it is registered; returns its number."""
        number = len(self._workers) + 1
        name = self.worker_name(number)
        worker = self._spawn(f"{name}.log", "org.apache.spark.deploy.worker.Worker", self.master_url,
                             "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                             "--webui-port", "0", "--work-dir", str(self.work_dir / name))
        self._workers.append(worker)
        self._wait_for(worker, f"{name}.log", "Successfully registered with master", name)
        return number

    def stop_worker(self, number: int) -> None:
        """Stop worker ``number`` and what it launched (the master sees it lost); the others keep running."""
        _stop_tree(self._workers[number - 1])

    @staticmethod
    def worker_name(number: int) -> str:
        """``worker`` for the first worker, ``worker-<n>`` for the others (their log and folder names)."""
        return "worker" if number == 1 else f"worker-{number}"

    def worker_pid(self, number: int) -> int:
        """The JVM of worker ``number`` (1-based); ``spark-class`` execs it, so it is the spawned process."""
        return self._workers[number - 1].pid

    def decommission_worker(self, number: int) -> None:
        """Send worker ``number`` the signal standalone workers take as a decommission request (SIGPWR;
        the worker needs ``spark.decommission.enabled=true`` in ``SPARK_WORKER_OPTS``)."""
        os.kill(self.worker_pid(number), signal.SIGPWR)

    def driver_jvms(self) -> list[int]:
        """The driver JVMs the workers launched (cluster deploy mode), oldest first."""
        return sorted(pid for worker in self._workers for pid in descendants(worker.pid)
                      if DRIVER_MAIN_CLASS in _cmdline(pid))

    def stop(self) -> None:
        """Stop the workers (and their executors and drivers), then the master; safe to call twice."""
        for process in reversed(self._processes):
            _stop_tree(process)
        self._processes.clear()
        self._workers.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_text(self, name: str) -> str:
        path = self.work_dir / name
        return path.read_text(errors="replace") if path.exists() else ""

    def _spawn(self, log_name: str, main_class: str, *args: str,
               extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_NO_DAEMONIZE": "1", **self.env, **(extra_env or {})}
        log = open(self.work_dir / log_name, "ab")
        self._logs.append(log)
        command = [str(spark_home() / "bin" / "spark-class"), main_class, *args]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        self._processes.append(process)
        return process

    def _wait_for(self, process: subprocess.Popen, log_name: str, line: str, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if re.search(re.escape(line), self.log_text(log_name)):
                return
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited with {process.returncode}:\n{self.log_text(log_name)[-3000:]}")
            time.sleep(0.3)
        raise TimeoutError(f"{what} did not start in {self.start_timeout:.0f}s:\n{self.log_text(log_name)[-3000:]}")
