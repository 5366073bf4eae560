"""A TLS-terminating relay for tests: a real ``ssl`` server socket whose connections are forwarded, byte for
byte, to a plain-TCP server (OpenSearch's integration-test distribution has no TLS).

Used by the search sink's TLS tests, started once per test module: :class:`TlsRelay` listens on
``127.0.0.1`` with the server certificate of :func:`connect_spark.testing.tls.make_tls_material` (SAN
``localhost`` and ``127.0.0.1``), optionally requires a client certificate signed by the same CA (mutual TLS),
and records the common name of each client certificate it accepted and each handshake it refused, so a test
can assert what the client presented. One thread accepts; one thread per connection copies bytes both ways.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from connect_spark.testing.tls import TlsMaterial

__all__ = ["TlsRelay"]


def _server_pem(material: TlsMaterial) -> Path:
    """The server's key and chain as one PEM file beside the stores (test material only)."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    loaded = pkcs12.load_pkcs12(material.broker_keystore.read_bytes(), material.store_password.encode())
    assert loaded.key is not None and loaded.cert is not None
    path = material.folder / "relay.server.pem"
    path.write_bytes(loaded.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
                     + loaded.cert.certificate.public_bytes(Encoding.PEM)
                     + b"".join(c.certificate.public_bytes(Encoding.PEM) for c in loaded.additional_certs))
    return path


class TlsRelay:
    """``https://<host>:<port>`` in front of ``upstream`` (``(host, port)``), until :meth:`close`. ``host`` is a
    loopback address (another than ``127.0.0.1`` gives a certificate that does not name it).

    Attributes:
        port: the port it listens on.
        clients: the common names of the client certificates of completed handshakes (``None``: none sent).
        refused: the reasons of the handshakes that failed.
    """

    def __init__(self, material: TlsMaterial, upstream: tuple[str, int], require_client_cert: bool = True,
                 host: str = "127.0.0.1") -> None:
        self._upstream = upstream
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(_server_pem(material)))
        self._context.load_verify_locations(cafile=str(material.ca_pem))
        self._context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.2)  # accept() wakes up to see close()
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self.clients: list[str | None] = []
        self.refused: list[str] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=f"tls-relay-{self.port}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def __enter__(self) -> "TlsRelay":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(10)
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                raw, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        raw.settimeout(30)
        try:
            conn = self._context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.refused.append(str(e))
            raw.close()
            return
        peer = conn.getpeercert()
        names = [value for rdn in (peer or {}).get("subject", ()) for key, value in rdn if key == "commonName"]
        self.clients.append(names[0] if names else None)
        try:
            upstream = socket.create_connection(self._upstream, timeout=30)
        except OSError:
            conn.close()
            return
        try:
            self._pump(conn, upstream)
        finally:
            conn.close()
            upstream.close()

    def _pump(self, conn: ssl.SSLSocket, upstream: socket.socket) -> None:
        """Copy bytes both ways in one thread (an ``SSLSocket`` is not to be read and written from two)
        until either side closes."""
        while not self._closed.is_set():
            ready, _, _ = select.select([conn, upstream], [], [], 1.0)
            for source in ready:
                target = upstream if source is conn else conn
                try:
                    data = source.recv(65536)
                    if not data:
                        return
                    target.sendall(data)
                    while isinstance(source, ssl.SSLSocket) and source.pending():
                        target.sendall(source.recv(source.pending()))
                except (OSError, ssl.SSLError):
                    return
