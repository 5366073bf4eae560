"""A local Spark Connect server from the pip-installed pyspark, with the Kafka source and Delta jars on it.

Used by the Spark Connect tests (one server per test session, ``tests/connect_fixtures.py``) and handy by
hand (``python -m connect_spark.testing.connect_server``). The server is Spark's own
``SparkConnectServer`` started with ``spark-submit`` on 127.0.0.1, with the settings a session
connect_spark builds gets (:func:`connect_spark.spark_session.session_conf`: the locally resolved jars,
Delta's SQL extension and catalog) — as a platform provides them. Its Python workers, and the Python
process that runs a query's ``foreachBatch`` function, run this interpreter, so they import connect_spark.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping

from connect_spark.testing.spark_cluster import free_port, spark_submit

__all__ = ["ConnectServer", "SERVER_CLASS"]

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer:
    """Start with :meth:`start`, connect with ``SparkSession.builder.remote(server.url)``, end with :meth:`stop`.

    Args:
        log_path: where the server's output goes.
        conf: more Spark settings, on top of connect_spark's session settings.
    """

    def __init__(self, log_path: Path, conf: Mapping[str, str] | None = None) -> None:
        self.log_path = Path(log_path)
        self.conf = dict(conf or {})
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> "ConnectServer":
        """Start the server and wait until its gRPC port accepts connections.

        Raises:
            RuntimeError: the server exited or did not listen within ``timeout`` (its log's tail says why).
        """
        from connect_spark.spark_session import session_conf

        settings = session_conf({"spark.master": "local[2]", **self.conf}, ui=False)
        settings.update({"spark.connect.grpc.binding.address": "127.0.0.1",
                         "spark.connect.grpc.binding.port": str(self.port),
                         "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        master = settings.pop("spark.master")
        command = [str(spark_submit()), "--master", master, "--class", SERVER_CLASS, "--name", "connect-spark-connect"]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command.append("spark-internal")
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        env.pop("PYSPARK_GATEWAY_PORT", None)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The Spark Connect server exited ({self.process.returncode}): {self._tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"The Spark Connect server did not listen on {self.port}: {self._tail()}")

    def _tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server and every process it started (its process group)."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(10)


if __name__ == "__main__":  # pragma: no cover - by hand
    server = ConnectServer(Path("connect-server.log")).start()
    print(server.url, flush=True)
    try:
        server.process.wait()  # type: ignore[union-attr]
    except KeyboardInterrupt:
        server.stop()
