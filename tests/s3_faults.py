"""A front for the local S3 server that refuses chosen requests, for the S3 sink's failure tests.

The sink's real boto3 client talks HTTP to this front on 127.0.0.1; every request is passed on to moto's
server unchanged, except the next ``times`` requests of a method whose key contains a given text, which the
front answers itself with S3's ``500 InternalError`` (what a real store answers when it fails a write), or
holds unanswered (a store that stopped answering). With ``s3.retry.max.attempts=1`` one refusal fails
the upload::

    with S3Faults(local_s3.url) as faults:
        props["store.url"] = faults.url
        faults.refuse("PUT", "+0000000003.json")
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["S3Faults"]

_REFUSAL = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
            b"<Message>refused by the test's fault front</Message></Error>")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class S3Faults:
    """An HTTP front on a free port of 127.0.0.1 before the S3 server at ``upstream``."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self._rules: list[list] = []  # [method, text in the key, refusals left]
        self._lock = threading.Lock()
        self._stalls: list[tuple[str, str]] = []  # (method, text in the key)
        self._stopping = threading.Event()
        self.refused: list[str] = []  # "METHOD key?query" of each refused request
        self.stalled: list[str] = []  # and of each held one
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def refuse(self, method: str, key_contains: str, times: int = 1) -> None:
        """Answer the next ``times`` ``method`` requests whose key (and query) contains ``key_contains`` with
        a 500."""
        with self._lock:
            self._rules.append([method, key_contains, times])

    def stall(self, method: str, key_contains: str) -> None:
        """Hold every ``method`` request whose key (and query) contains ``key_contains``, unanswered, until
        the front stops: the client waits as on a store that stopped answering."""
        with self._lock:
            self._stalls.append((method, key_contains))

    def _matches(self, method: str, path: str) -> tuple[bool, bool]:
        """(refuse, stall) for a request; records it in ``refused`` or ``stalled``."""
        parts = urllib.parse.urlsplit(path)
        key = urllib.parse.unquote(parts.path) + (f"?{parts.query}" if parts.query else "")
        with self._lock:
            for rule in self._rules:
                if rule[0] == method and rule[1] in key and rule[2] > 0:
                    rule[2] -= 1
                    self.refused.append(f"{method} {key}")
                    return True, False
            if any(m == method and text in key for m, text in self._stalls):
                self.stalled.append(f"{method} {key}")
                return False, True
        return False, False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        chunk = self.rfile.read(size)
                        self.rfile.readline()
                        if not size:
                            return b"".join(chunks)
                        chunks.append(chunk)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _pass(self) -> None:
                body = self._body()
                refuse, stall = front._matches(self.command, self.path)
                if stall:
                    front._stopping.wait()
                    return
                if refuse:
                    self._answer(500, [("Content-Type", "application/xml")], _REFUSAL)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                connection = http.client.HTTPConnection(front.upstream.hostname, front.upstream.port, timeout=60)
                try:
                    connection.request(self.command, self.path, body=body, headers=headers)
                    response = connection.getresponse()
                    self._answer(response.status, response.getheaders(), response.read())
                finally:
                    connection.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _pass

        return Handler

    def __enter__(self) -> "S3Faults":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
