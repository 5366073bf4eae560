"""Kafka's ssl.* keys as Connect users write them -> the SSLContext of the Python Kafka clients.

Each store kind is proven by a real TLS handshake against an in-process TLS server that presents the test
broker's certificate and requires a client certificate signed by the test CA (mutual TLS). Needs the JDK's
keytool (JKS stores), no broker and no Spark.
"""

import logging
import os
import socket
import ssl
import tempfile
import threading

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.kafka.tls import clear_cache, ssl_context
from connect_spark.kafka.clients import kafka_client_kwargs
from connect_spark.testing.tls import make_tls_material

SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="jaas-pw";'


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """Keys of another CA, which the test broker's certificate does not chain to."""
    return make_tls_material(tmp_path_factory.mktemp("other"))


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


@pytest.fixture(scope="module")
def server(tls, tmp_path_factory):
    """A TLS server on loopback (the broker's key, client certificates required); yields its port and the
    subjects of the client certificates it saw."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    loaded = pkcs12.load_pkcs12(tls.broker_keystore.read_bytes(), tls.store_password.encode())
    pem = tmp_path_factory.mktemp("server") / "broker.pem"
    pem.write_bytes(loaded.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
                    + loaded.cert.certificate.public_bytes(Encoding.PEM))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    context.load_verify_locations(str(tls.ca_pem))
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    seen = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(conn, server_side=True) as tls_conn:
                    seen.append(dict(x[0] for x in tls_conn.getpeercert()["subject"])["commonName"])
                    tls_conn.sendall(b"ok")
            except (ssl.SSLError, OSError):
                seen.append(None)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], seen
    listener.close()


def handshake(context, port, host="127.0.0.1"):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as conn:
            return conn.recv(2)


def stores(tls, truststore, keystore):
    config = {"security.protocol": "SSL"}
    if truststore == "pem":
        config.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca_pem)})
    elif truststore == "inline":
        config.update({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": tls.ca_pem.read_text()})
    else:
        config.update({"ssl.truststore.location": str(tls.client_truststore(truststore)),
                       "ssl.truststore.password": tls.store_password,
                       "ssl.truststore.type": {"jks": "JKS", "p12": "PKCS12"}[truststore]})
    if keystore == "inline":
        text = tls.client_keystore("pem").read_text()
        cut = text.index("-----BEGIN CERTIFICATE-----")
        config.update({"ssl.keystore.type": "PEM", "ssl.keystore.key": text[:cut],
                       "ssl.keystore.certificate.chain": text[cut:], "ssl.key.password": tls.key_password})
    elif keystore == "pem":
        config.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tls.client_keystore("pem")),
                       "ssl.key.password": tls.key_password})
    else:
        config.update({"ssl.keystore.location": str(tls.client_keystore(keystore)),
                       "ssl.keystore.password": tls.store_password,
                       "ssl.keystore.type": {"jks": "JKS", "p12": "PKCS12"}[keystore]})
        if keystore == "jks":
            config["ssl.key.password"] = tls.key_password  # its key has a password of its own
    return config


@pytest.mark.parametrize("truststore,keystore", [("jks", "p12"), ("p12", "jks"), ("pem", "pem"),
                                                 ("inline", "inline")])
def test_mutual_tls_with_every_store_kind(tls, server, truststore, keystore):
    port, seen = server
    context = kafka_client_kwargs(stores(tls, truststore, keystore))["ssl_context"]
    assert handshake(context, port) == b"ok"
    assert seen[-1] == "connect-spark-client"  # the client certificate was presented and accepted


def test_no_store_file_left_behind(tls, server):
    before = set(os.listdir(tempfile.gettempdir()))
    handshake(ssl_context(stores(tls, "jks", "jks")), server[0])
    assert {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("connect-spark-")} == set()


def test_host_name_checked_unless_the_algorithm_is_empty(tls, server):
    port, _ = server
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(ssl_context(stores(tls, "pem", "pem")), port, host="kafka.example.com")
    clear_cache()
    unchecked = ssl_context({**stores(tls, "pem", "pem"), "ssl.endpoint.identification.algorithm": ""})
    assert handshake(unchecked, port, host="kafka.example.com") == b"ok"


def test_an_untrusted_ca_is_refused(tls, server, other):
    context = ssl_context({**stores(tls, "pem", "pem"), "ssl.truststore.location": str(other.ca_pem)})
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(context, server[0])


def test_enabled_protocols_bound_the_version(tls):
    context = ssl_context({**stores(tls, "pem", "pem"), "ssl.enabled.protocols": "TLSv1.3"})
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    with pytest.raises(ConfigException, match="ssl.enabled.protocols"):
        ssl_context({**stores(tls, "pem", "pem"), "ssl.enabled.protocols": "SSLv3"})


@pytest.mark.parametrize("kind", ["jks", "p12"])
def test_wrong_truststore_password_names_the_key_not_the_password(tls, kind, caplog):
    config = {**stores(tls, kind, "pem"), "ssl.truststore.password": "wrong-truststore-pw"}
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigException) as info:
        kafka_client_kwargs(config)
    assert info.value.key == "ssl.truststore.password"
    assert "wrong-truststore-pw" not in str(info.value) and "wrong-truststore-pw" not in caplog.text


def test_wrong_key_password_of_a_jks_keystore(tls):
    with pytest.raises(ConfigException) as info:
        ssl_context({**stores(tls, "pem", "jks"), "ssl.key.password": "not-the-key-pw"})
    assert info.value.key == "ssl.key.password" and "not-the-key-pw" not in str(info.value)


def test_wrong_key_password_of_a_pem_keystore(tls):
    with pytest.raises(ConfigException) as info:
        ssl_context({**stores(tls, "pem", "pem"), "ssl.key.password": "not-the-key-pw"})
    assert info.value.key == "ssl.keystore.location" and "not-the-key-pw" not in str(info.value)


def test_missing_store_and_unknown_type(tls, tmp_path):
    with pytest.raises(ConfigException) as info:
        ssl_context({"ssl.truststore.location": str(tmp_path / "nope.jks"), "ssl.truststore.password": "x"})
    assert info.value.key == "ssl.truststore.location"
    with pytest.raises(ConfigException) as info:
        ssl_context({**stores(tls, "jks", "pem"), "ssl.truststore.type": "BKS"})
    assert info.value.key == "ssl.truststore.type" and "JKS, PKCS12, PEM" in str(info.value)


def test_ssl_keys_ignored_without_tls(tls):
    config = {**stores(tls, "jks", "p12"), "security.protocol": "PLAINTEXT", "ssl.truststore.password": "wrong"}
    assert "ssl_context" not in kafka_client_kwargs(config)


def test_contexts_are_cached_per_settings(tls):
    config = stores(tls, "jks", "p12")
    assert ssl_context(config) is ssl_context(dict(config))
    assert ssl_context(config) is not ssl_context({**config, "ssl.endpoint.identification.algorithm": ""})


def test_sasl_mechanisms_the_python_clients_cannot_serve():
    oauth = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientSecret=\"oauth-pw\";"
    with pytest.raises(ConfigException) as info:  # neither a token endpoint nor an unsecured login
        kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                             "sasl.jaas.config": oauth})
    assert info.value.key == "sasl.oauthbearer.token.endpoint.url" and "oauth-pw" not in str(info.value)
    with pytest.raises(ConfigException) as info:  # an endpoint and no clientId
        kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                             "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token", "sasl.jaas.config": oauth})
    assert info.value.key == "sasl.jaas.config" and "clientId" in str(info.value) and "oauth-pw" not in str(info.value)
    with pytest.raises(ConfigException) as info:
        kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                             "sasl.login.callback.handler.class": "com.example.MyHandler", "sasl.jaas.config": oauth})
    assert info.value.key == "sasl.login.callback.handler.class"
    with pytest.raises(ConfigException) as info:
        kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256"})
    assert info.value.key == "sasl.jaas.config"
    with pytest.raises(ConfigException, match="sasl.mechanism"):
        kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "NTLM", "sasl.jaas.config": SCRAM})
    kwargs = kafka_client_kwargs({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "scram-sha-512",
                                  "sasl.jaas.config": SCRAM})
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-512" and kwargs["sasl_plain_password"] == "jaas-pw"


def test_an_untrusted_broker_certificate_is_named_at_start(tls, server, other):
    from connect_spark.kafka.authentication import check_authentication

    config = {**stores(tls, "jks", "p12"), "ssl.truststore.location": str(other.client_truststore("jks"))}
    with pytest.raises(ConfigException) as info:
        check_authentication(config, f"127.0.0.1:{server[0]}")
    assert info.value.key == "ssl.truststore.location" and "does not trust" in str(info.value)
    check_authentication(stores(tls, "jks", "p12"), f"127.0.0.1:{server[0]}")  # the right CA passes
