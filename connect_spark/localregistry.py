"""A real schema registry on loopback: Apicurio Registry serving Confluent's REST API.

Started from the distribution :mod:`connect_spark.jvm` resolves (artifact set ``schema-registry``) with
in-memory storage, bound to 127.0.0.1 on a free port unless told otherwise. Confluent's clients (the
``AvroSerializer`` a producer uses, the converters here) talk to it at :attr:`LocalSchemaRegistry.url`,
which ends in ``/apis/ccompat/v7``. It serves the pytest session fixture and
``connect-spark dev-registry start|stop|status``. Starting, stopping and the ``registry.json`` of a
detached start are :mod:`connect_spark.localprocess`'s.

Everything registered lives in memory: a restarted registry is empty.
"""

from __future__ import annotations

import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

from connect_spark.api.errors import ConnectException
from connect_spark.localprocess import LocalProcess, free_port

__all__ = ["RegistryError", "LocalSchemaRegistry", "CONFLUENT_API_PATH", "MIN_JAVA"]

log = logging.getLogger(__name__)

CONFLUENT_API_PATH = "/apis/ccompat/v7"
"""Where Apicurio serves Confluent's schema registry API."""

MIN_JAVA = 17
"""The Java version the pinned Apicurio (2.6) needs."""


class RegistryError(ConnectException):
    """The local registry could not start or stop; the message says why."""


class LocalSchemaRegistry(LocalProcess):
    """One Apicurio Registry process, owned by whoever started it.

    Args:
        data_dir: folder for the registry's log file (its storage is in memory); created at start.
        port: HTTP port on 127.0.0.1 (0 = a free port).
        heap: JVM heap (``-Xmx``); small by default for 2-core test machines.

    Use as a context manager, or call :meth:`start` and :meth:`stop` (process plumbing:
    :class:`~connect_spark.localprocess.LocalProcess`).
    """

    name = "schema registry"
    error = RegistryError
    log_name = "registry.log"
    state_file = "registry.json"
    state_key = "url"
    stop_timeout = 20.0

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 0, heap: str = "384m") -> None:
        super().__init__(data_dir)
        self.port = port
        self.heap = heap

    @property
    def url(self) -> str:
        """The ``schema.registry.url`` clients use."""
        return f"http://127.0.0.1:{self.port}{CONFLUENT_API_PATH}"

    @property
    def address(self) -> str:
        return self.url

    def start(self, timeout: float = 240.0, detach: bool = False) -> "LocalSchemaRegistry":
        """Start the registry and wait until its Confluent API answers.

        Args:
            timeout: seconds to wait for it to answer (Quarkus starts in 10-40 s on a busy 2-core machine).
            detach: start the JVM in its own session so it outlives this Python process (the
                ``dev-registry`` command); its pid and URL are written to ``registry.json``.

        Raises:
            RegistryError: the distribution is not resolved, no suitable Java, a port is taken, or the
                registry died or did not answer in time (the message carries the end of its log).
        """
        if self._process is not None:
            raise RegistryError(f"The registry in {self.data_dir} is already running (pid {self._process.pid}).")
        runner = self._runner_jar()
        from connect_spark.jvm.java import JavaNotFoundError, find_java

        try:
            java = find_java(MIN_JAVA, "The schema registry (Apicurio Registry 2.6)")
        except JavaNotFoundError as e:
            raise RegistryError(str(e)) from e
        self.port = self.port or free_port()
        if _answers(self.port):
            raise RegistryError(f"Cannot start the schema registry: port 127.0.0.1:{self.port} is already in use.")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # starts faster; the registry's load in tests is tiny
            "-Djava.net.preferIPv4Stack=true",
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.log.level=WARN",
            "-Dquarkus.log.category.\"io.quarkus\".level=INFO",
            "-jar",
            str(runner),
        ]
        self._launch(command, timeout, detach, cwd=str(runner.parent))
        return self

    @classmethod
    def detached_url(cls, data_dir: str | os.PathLike[str]) -> str | None:
        """The URL of a registry started with ``detach=True`` in ``data_dir`` that is still alive, or None."""
        return cls.detached_live_address(data_dir)

    # -- internals --------------------------------------------------------------------------

    def _runner_jar(self) -> Path:
        from connect_spark.jvm import SCHEMA_REGISTRY, jar_paths
        from connect_spark.jvm.resolver import JarResolutionError

        try:
            jars = jar_paths(SCHEMA_REGISTRY)
        except JarResolutionError as e:
            raise RegistryError(f"Cannot start the schema registry: {e}") from e
        runners = [jar for jar in jars if jar.name.endswith("-runner.jar")]
        if not runners:
            raise RegistryError(f"No Apicurio runner jar in {SCHEMA_REGISTRY.folder()}; run `connect-spark jars` again.")
        return runners[0]

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if _answers(self.port):
                return
            time.sleep(0.5)
        raise RegistryError(
            f"The schema registry did not answer at {self.url} within {timeout:.0f} s. "
            f"End of {self.log_file}:\n{self._log_tail()}"
        )


def _answers(port: int) -> bool:
    """True when Confluent's API answers ``GET /subjects`` on ``port``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{CONFLUENT_API_PATH}/subjects", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False

