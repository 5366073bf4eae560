"""A local OAuth 2 token endpoint for tests of SASL/OAUTHBEARER (client credentials grant).

Used by the OAUTHBEARER tests: :class:`LocalTokenEndpoint` serves ``POST /oauth2/token`` on 127.0.0.1 in a
daemon thread, grants ``client_credentials`` to the clients it was given (HTTP basic authentication) and
answers with an unsecured JWT (``alg: none``, ``sub`` = the client id), which a development Kafka broker
(Kafka's default OAUTHBEARER validator) accepts. It records each request's client id and form fields.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Mapping

from connect_spark.kafka.oauth import unsecured_token

__all__ = ["LocalTokenEndpoint"]


class LocalTokenEndpoint:
    """Start with :meth:`start` (or as a context manager); :attr:`url` is the token endpoint.

    Args:
        clients: ``{client_id: client_secret}`` granted tokens.
        lifetime_s: ``expires_in`` of the tokens.
    """

    def __init__(self, clients: Mapping[str, str], lifetime_s: float = 3600) -> None:
        self.clients = dict(clients)
        self.lifetime_s = lifetime_s
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/oauth2/token"

    def start(self) -> "LocalTokenEndpoint":
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                scheme, _, encoded = (self.headers.get("Authorization") or "").partition(" ")
                client, _, secret = base64.b64decode(encoded or b"").decode().partition(":")
                client, secret = urllib.parse.unquote(client), urllib.parse.unquote(secret)
                endpoint.requests.append((client, form))
                if scheme != "Basic" or endpoint.clients.get(client) != secret or \
                        form.get("grant_type") != ["client_credentials"]:
                    self.send_response(401)
                    self.end_headers()
                    return
                answer = json.dumps({"access_token": unsecured_token(client, endpoint.lifetime_s),
                                     "token_type": "bearer", "expires_in": endpoint.lifetime_s}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="token-endpoint").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "LocalTokenEndpoint":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
