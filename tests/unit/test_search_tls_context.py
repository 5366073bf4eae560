"""The search sink's TLS context from Confluent's ``elastic.https.ssl.*`` keys: JKS, PKCS12 and PEM stores made
by :func:`make_tls_material` (the JDK's keytool makes the JKS ones), each proven by a real handshake with a
TLS relay that requires a client certificate, in front of a small echo server."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.config.secrets import masked
from connect_spark.connectors.search.client import connect
from connect_spark.connectors.search.config import SEARCH_SINK_CONFIG_DEF, SearchSinkConfig
from connect_spark.connectors.search.tls import search_ssl_context
from connect_spark.kafka.tls import clear_cache
from connect_spark.testing.tls import make_tls_material
from connect_spark.testing.tls_relay import TlsRelay
from connect_spark.testing.waiting import wait_for

SSL = "elastic.https.ssl."


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_material(tmp_path_factory.mktemp("search-tls"))


@pytest.fixture(scope="module")
def echo():
    """A plain TCP server sending back what it gets (the relay's upstream)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()
    server.close()


@pytest.fixture(scope="module")
def relay(tls, echo):
    with TlsRelay(tls, echo, require_client_cert=True) as server:
        yield server


@pytest.fixture(scope="module")
def elastic_like():
    """A plain HTTP server answering every GET as Elasticsearch 8 would, product header included."""

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = json.dumps({"version": {"number": "8.15.0"}, "tagline": "You Know, for Search"}).encode()
            self.send_response(200)
            for name, value in (("Content-Type", "application/json"), ("X-Elastic-Product", "Elasticsearch"),
                                ("Content-Length", str(len(body)))):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def fresh_contexts():
    clear_cache()


def _config(url: str, engine: str = "auto", **keys: str) -> SearchSinkConfig:
    return SearchSinkConfig.parse({"name": "tls-sink", "connection.url": url, "elastic.security.protocol": "SSL",
                                   "search.engine": engine, **{SSL + k: v for k, v in keys.items()}})


def _round_trip(context: ssl.SSLContext, relay: TlsRelay) -> bytes:
    with socket.create_connection(("127.0.0.1", relay.port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(b"ping")
            return conn.recv(4)


def _stores(tls, truststore: str, keystore: str) -> dict[str, str]:
    types = {"jks": "JKS", "p12": "PKCS12", "pem": "PEM"}
    keys = {"truststore.type": types[truststore], "keystore.type": types[keystore],
            "truststore.location": str(tls.ca_pem if truststore == "pem" else tls.client_truststore(truststore)),
            "keystore.location": str(tls.client_keystore(keystore))}
    if truststore != "pem":
        keys["truststore.password"] = tls.store_password
    if keystore != "pem":
        keys["keystore.password"] = tls.store_password
    if keystore != "p12":  # the JKS key entry and the PEM key have a password of their own
        keys["key.password"] = tls.key_password
    return keys


@pytest.mark.parametrize("truststore,keystore", [("jks", "p12"), ("p12", "jks"), ("pem", "pem")])
def test_stores_of_each_type_give_a_mutual_tls_context(tls, relay, truststore, keystore):
    config = _config(relay.url, **_stores(tls, truststore, keystore))
    context = search_ssl_context(config.tls.kafka)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "connect-spark test CA"),),)]
    assert _round_trip(context, relay) == b"ping"
    assert relay.clients[-1] == "connect-spark-client"  # the client certificate reached the server


def test_confluents_default_jks_type_reads_a_pkcs12_store_by_its_content(tls, relay):
    keys = _stores(tls, "p12", "p12")
    keys.pop("truststore.type"), keys.pop("keystore.type")
    config = _config(relay.url, **keys)
    assert _round_trip(search_ssl_context(config.tls.kafka), relay) == b"ping"


def test_pem_files_without_a_type_are_read_as_pem(tls, relay):
    config = _config(relay.url, **{"truststore.location": str(tls.ca_pem),
                                   "keystore.location": str(tls.client_keystore("pem")),
                                   "key.password": tls.key_password})
    assert _round_trip(search_ssl_context(config.tls.kafka), relay) == b"ping"


def test_a_pem_key_location_beside_a_pem_chain(tls, relay, tmp_path):
    text = tls.client_keystore("pem").read_text()
    split = text.index("-----BEGIN CERTIFICATE-----")
    (tmp_path / "key.pem").write_text(text[:split])
    (tmp_path / "chain.pem").write_text(text[split:])
    config = _config(relay.url, **{"truststore.type": "PEM", "truststore.location": str(tls.ca_pem),
                                   "keystore.type": "PEM", "keystore.location": str(tmp_path / "chain.pem"),
                                   "key.location": str(tmp_path / "key.pem"), "key.password": tls.key_password})
    assert _round_trip(search_ssl_context(config.tls.kafka), relay) == b"ping"
    assert relay.clients[-1] == "connect-spark-client"


def test_without_a_keystore_the_relay_refuses_the_client(tls, relay):
    refused = len(relay.refused)
    config = _config(relay.url, **{"truststore.location": str(tls.client_truststore("jks")),
                                   "truststore.password": tls.store_password})
    with pytest.raises((ssl.SSLError, OSError)):
        _round_trip(search_ssl_context(config.tls.kafka), relay)
    # Under TLS 1.3 the client may see the refusal before the relay's thread has recorded it.
    wait_for(lambda: len(relay.refused) > refused, timeout=10, interval=0.05, what="the relay to record the refusal")
    assert len(relay.refused) == refused + 1


def test_a_wrong_store_password_names_the_key_and_hides_the_password(tls):
    config = _config("https://127.0.0.1:9200", **{"truststore.location": str(tls.client_truststore("jks")),
                                                 "truststore.password": "wrong-pw-marker"})
    with pytest.raises(ConfigException) as error:
        search_ssl_context(config.tls.kafka)
    assert error.value.key == SSL + "truststore.password"
    assert "wrong-pw-marker" not in str(error.value) and "password is wrong" in str(error.value)


def test_a_wrong_key_password_names_the_key(tls):
    keys = _stores(tls, "jks", "jks")
    keys["key.password"] = "not-the-key-pw"
    with pytest.raises(ConfigException) as error:
        search_ssl_context(_config("https://127.0.0.1:9200", **keys).tls.kafka)
    assert error.value.key == SSL + "key.password" and "not-the-key-pw" not in str(error.value)


def test_unknown_store_types_and_plain_urls_are_refused_naming_key_value_and_what_is_allowed():
    with pytest.raises(ConfigException) as error:
        SearchSinkConfig.parse({"connection.url": "http://127.0.0.1:9200", "elastic.security.protocol": "SSL",
                                SSL + "truststore.type": "BKS", SSL + "key.location": "/k.pem"})
    text = str(error.value)
    assert f"{SSL}truststore.type" in text and "BKS" in text and "JKS, PKCS12, PEM" in text
    assert "connection.url" in text and "https://" in text
    assert f"{SSL}key.location" in text and f"{SSL}keystore.location" in text


def test_passwords_are_never_shown(tls):
    config = _config("https://127.0.0.1:9200", **{"truststore.location": str(tls.client_truststore("jks")),
                                                 "truststore.password": "trust-pw-marker",
                                                 "keystore.password": "key-store-pw-marker",
                                                 "key.password": "key-pw-marker"})
    assert config.tls.kafka["ssl.truststore.password"] == "trust-pw-marker"
    shown = repr(config) + repr(config.tls)
    shown += repr(masked({SSL + k: v for k, v in (("truststore.password", "trust-pw-marker"),
                                                    ("keystore.password", "key-store-pw-marker"),
                                                    ("key.password", "key-pw-marker"))}, SEARCH_SINK_CONFIG_DEF))
    assert not any(m in shown for m in ("trust-pw-marker", "key-store-pw-marker", "key-pw-marker"))
    assert shown.count("[hidden]") == 3  # as REST answers and status show the config


def test_an_empty_endpoint_algorithm_turns_the_host_check_off(tls):
    keys = {"truststore.location": str(tls.ca_pem), "truststore.type": "PEM", "endpoint.identification.algorithm": ""}
    config = _config("https://127.0.0.1:9200", **keys)
    assert not config.tls.check_hostname
    assert not search_ssl_context(config.tls.kafka).check_hostname
    assert _config("https://127.0.0.1:9200").tls.check_hostname


def test_elasticsearch_py_uses_the_context_as_built_over_mutual_tls(tls, elastic_like):
    """elasticsearch-py through the sink's context: a JKS truststore and keystore, the client certificate
    presented, and the context's trust not widened by the library (certifi's bundle is not loaded into it)."""
    with TlsRelay(tls, elastic_like, require_client_cert=True) as relay:
        config = _config(relay.url, "elasticsearch", **_stores(tls, "jks", "jks"))
        client = connect(config)
        try:
            assert client.engine == "elasticsearch"
            assert client.client.info()["version"]["number"] == "8.15.0"
        finally:
            client.close()
        assert relay.clients[-1] == "connect-spark-client"
    assert search_ssl_context(config.tls.kafka).cert_store_stats()["x509_ca"] == 1
