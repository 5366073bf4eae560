"""What the local servers share: one JVM process on 127.0.0.1, its log, readiness wait, stop and pid file.

:class:`~connect_spark.localkafka.LocalKafkaBroker` and
:class:`~connect_spark.localregistry.LocalSchemaRegistry` derive from :class:`LocalProcess`: each builds
its command line and says how to tell it is ready (``_wait_until_ready``, which may call
:meth:`LocalProcess._check_alive`); the base starts the process with its output in :attr:`log_file`,
stops it, and for a detached start (``connect-spark dev-kafka`` / ``dev-registry``) writes and reads the
state file with its pid and address.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

from connect_spark.api.errors import ConnectException

__all__ = ["LocalProcess", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalProcess:
    """One local server process, owned by whoever started it.

    Subclasses set the class attributes, implement :attr:`address` and ``_wait_until_ready(timeout)``,
    and call :meth:`_launch` from their ``start``. Use as a context manager, or call ``start`` and
    :meth:`stop`.

    Args:
        data_dir: the server's folder; its log file is :attr:`log_file` in it.
    """

    #: What the server is, for messages (``"Kafka broker"``).
    name: ClassVar[str]
    #: The exception for a failed start.
    error: ClassVar[type[ConnectException]]
    #: The log file's name in ``data_dir``.
    log_name: ClassVar[str]
    #: The state file a detached start writes in ``data_dir``, and the key its address is under.
    state_file: ClassVar[str]
    state_key: ClassVar[str]
    #: Seconds :meth:`stop` waits after SIGTERM before SIGKILL.
    stop_timeout: ClassVar[float] = 30.0

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """Where clients reach the server (written to the state file under :attr:`state_key`)."""
        raise NotImplementedError

    @property
    def log_file(self) -> Path:
        return self.data_dir / self.log_name

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def stop(self, timeout: float | None = None) -> None:
        """Stop the server: SIGTERM, SIGKILL after ``timeout`` seconds (default :attr:`stop_timeout`)."""
        timeout = self.stop_timeout if timeout is None else timeout
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._log.warning("%s pid %s did not stop in %.0f s; killing it", self._title, process.pid, timeout)
            process.kill()
            process.wait(10)

    def __enter__(self) -> Any:
        return self.start()  # type: ignore[attr-defined]  # every subclass defines start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    def stop_detached(cls, data_dir: str | os.PathLike[str], timeout: float | None = None) -> bool:
        """Stop a server started with ``detach=True`` in ``data_dir``; False if none was running.

        SIGTERM, then SIGKILL after ``timeout`` seconds (default :attr:`stop_timeout`).
        """
        timeout = cls.stop_timeout if timeout is None else timeout
        state_file = Path(data_dir) / cls.state_file
        if not state_file.is_file():
            return False
        pid = json.loads(state_file.read_text())["pid"]
        state_file.unlink()
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        return True

    @classmethod
    def detached_live_address(cls, data_dir: str | os.PathLike[str]) -> str | None:
        """The address of a server started with ``detach=True`` in ``data_dir`` that is still alive, or None
        (a state file left by a dead server is removed)."""
        state = cls._detached_state(data_dir)
        if state is None:
            return None
        try:
            os.kill(state["pid"], 0)
        except ProcessLookupError:
            (Path(data_dir) / cls.state_file).unlink()
            return None
        return state[cls.state_key]

    @classmethod
    def _detached_state(cls, data_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The state file a detached start wrote in ``data_dir`` (``pid`` and the address), or None."""
        state_file = Path(data_dir) / cls.state_file
        if not state_file.is_file():
            return None
        return json.loads(state_file.read_text())

    # -- for subclasses ---------------------------------------------------------------------

    def _launch(self, command: list[str], timeout: float, detach: bool, cwd: str | None = None,
                env: dict[str, str] | None = None) -> None:
        """Run ``command`` with its output in :attr:`log_file`, wait until ready, write the state file.

        ``detach`` starts it in its own session so it outlives this Python process. The process is
        stopped again when the wait fails (the subclass's ``_wait_until_ready`` raises).
        """
        started = time.monotonic()
        with open(self.log_file, "ab") as out:
            self._process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=cwd, start_new_session=detach, env=env,
            )
        try:
            self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self._log.info("%s up at %s in %.1f s (pid %s)", self._title, self.address, time.monotonic() - started,
                       self._process.pid)
        if detach:
            (self.data_dir / self.state_file).write_text(
                json.dumps({"pid": self._process.pid, self.state_key: self.address})
            )

    def _wait_until_ready(self, timeout: float) -> None:
        raise NotImplementedError

    def _check_alive(self) -> None:
        """Raise :attr:`error`, with the end of the log, when the process has exited while starting."""
        assert self._process is not None
        if self._process.poll() is not None:
            raise self.error(
                f"The {self.name} exited with code {self._process.returncode} while starting. "
                f"End of {self.log_file}:\n{self._log_tail()}"
            )

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @property
    def _title(self) -> str:
        return self.name[:1].upper() + self.name[1:]

    @property
    def _log(self) -> logging.Logger:
        """The subclass module's logger, so log lines keep naming ``connect_spark.localkafka`` etc."""
        return logging.getLogger(type(self).__module__)
