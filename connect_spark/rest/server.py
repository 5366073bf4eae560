"""The REST server: uvicorn serving :func:`~connect_spark.rest.app.create_app` on the worker's first listener.

Started by the distributed worker before its herder runs and stopped after it; uvicorn runs in a
background thread of the driver, so the main thread stays free for the supervisor and signals.
The listener comes from ``listeners`` (default ``http://127.0.0.1:8083``: loopback only); an empty
host listens on every interface. Port 0 picks a free port (tests): :attr:`RestServer.port` tells which.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from typing import Any

from connect_spark.api.errors import ConfigException, ConnectException

__all__ = ["RestServer", "parse_listener"]

log = logging.getLogger(__name__)

_LISTENER = re.compile(r"(?i)(http|https)://(\[[^\]]*\]|[^:/\[\]]*):([0-9]{1,5})")


def parse_listener(listener: str) -> tuple[str, str, int]:
    """``http://host:port`` → ``("http", host, port)``; an empty host becomes ``0.0.0.0`` (every interface).

    Raises:
        ConfigException: naming ``listeners`` and the value.
    """
    match = _LISTENER.fullmatch(listener.strip())
    if not match:
        raise ConfigException("Not a listener like http://127.0.0.1:8083", "listeners", listener)
    scheme, host, port = match.group(1).lower(), match.group(2).strip("[]"), int(match.group(3))
    if scheme != "http":
        raise ConfigException("Only http listeners are supported (put TLS in front with a proxy)", "listeners", listener)
    return scheme, host or "0.0.0.0", port


class RestServer:
    """Serves an ASGI app on one listener, in a background thread.

    Args:
        app: the ASGI application.
        listener: ``http://host:port``.
    """

    def __init__(self, app: Any, listener: str) -> None:
        self.app = app
        _, self.host, requested_port = parse_listener(listener)
        self._socket = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((self.host, requested_port))
        except OSError as e:
            self._socket.close()
            raise ConnectException(f"Cannot listen on {listener}: {e}") from e
        self.port: int = self._socket.getsockname()[1]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        """Start serving; returns once the server accepts connections."""
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="connect-spark-rest", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConnectException(f"The REST server on {self.url} did not start")
            time.sleep(0.05)
        log.info("REST API listening on %s", self.url)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop accepting requests, finish those in flight, and release the port."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._socket.close()
