"""Kafka's ``ssl.*`` client keys, as Connect users write them, turned into one :class:`ssl.SSLContext`.

Called by :func:`connect_spark.kafka.kafka_client_kwargs` whenever ``security.protocol`` is
``SSL`` or ``SASL_SSL``, i.e. by every Python Kafka client of the runtime (offset, status and config stores,
the consumer-group commit, the dead letter queue producer and admin client, the REST herder's admin client,
the partition directory), on the driver or an executor, in whichever thread makes the client. The context is
handed to kafka-python as ``ssl_context``; contexts are cached per distinct settings (and store file
versions), so each store is read once per process.

Stores are read as the Java client reads them:

* ``PEM``: a file (``ssl.truststore.location`` / ``ssl.keystore.location``) or the inline keys
  (``ssl.truststore.certificates``, ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``); a key may be
  encrypted with ``ssl.key.password``.
* ``PKCS12``: read in memory with ``cryptography`` (the ``tls`` extra).
* ``JKS`` (and JCEKS): converted once to PKCS12 by the JDK's ``keytool`` into a folder only this process can
  read, read back into memory and deleted at once; passwords reach keytool through its environment, never
  its command line.

As Java 17 does, a binary store is read by its content (JKS or PKCS12 magic) whichever of the two
``ssl.*.type`` names. The client key reaches OpenSSL through an anonymous in-memory file (Linux ``memfd``;
elsewhere a 0600 file deleted at once), encrypted with a one-time password. Nothing here logs a password,
a key or a certificate's content; errors name the key and never its secret value.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from typing import Any, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.kafka.tls_stores import STORE_TYPES, load_client_key, setting_text, trusted_pem

__all__ = ["ssl_context", "check_handshake", "TLS_PROTOCOLS", "STORE_TYPES", "uses_tls", "clear_cache"]

log = logging.getLogger(__name__)

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
"""The ``security.protocol`` values whose clients speak TLS."""

_HIDDEN = "[hidden]"
_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3,
             "TLSV1.1": ssl.TLSVersion.TLSv1_1, "TLSV1": ssl.TLSVersion.TLSv1}
_cache: dict[tuple, ssl.SSLContext] = {}
_cache_lock = threading.Lock()


def uses_tls(config: Mapping[str, Any]) -> bool:
    """Whether ``security.protocol`` (default ``PLAINTEXT``) is ``SSL`` or ``SASL_SSL``."""
    return str(config.get("security.protocol") or "PLAINTEXT").strip().upper() in TLS_PROTOCOLS


def clear_cache() -> None:
    """Forget the cached contexts (tests; a process that rotated its stores in place reads them again)."""
    with _cache_lock:
        _cache.clear()


def ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """The TLS context Kafka's ``ssl.*`` keys describe, for a kafka-python client.

    Args:
        config: Kafka-style client settings with plain values (``Password`` objects unwrapped).

    Honoured: ``ssl.truststore.*``, ``ssl.keystore.*``, ``ssl.key.password``, ``ssl.truststore.certificates``,
    ``ssl.keystore.certificate.chain``, ``ssl.keystore.key``, ``ssl.endpoint.identification.algorithm``
    (``https``, Kafka's default, checks the broker's host name; empty does not) and ``ssl.enabled.protocols``
    (the lowest and highest listed bound the TLS version). ``ssl.cipher.suites`` is honoured when OpenSSL
    knows the names; Java's own names of TLS 1.2 suites are not translated (WARN). Without a truststore the
    system's CA certificates are trusted, as the JVM trusts its ``cacerts``.

    Raises:
        ConfigException: a store is missing, unreadable, of an unknown type, or its password is wrong; the
            message names the key, never a password.
    """
    key = _cache_key(config)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        context = _build(config)
        _cache[key] = context
        return context


def _cache_key(config: Mapping[str, Any]) -> tuple:
    items = tuple(sorted((k, str(v)) for k, v in config.items() if k.startswith("ssl.") and v is not None))
    files = []
    for name in ("ssl.truststore.location", "ssl.keystore.location"):
        location = config.get(name)
        if location:
            try:
                stat = os.stat(str(location))
                files.append((stat.st_mtime_ns, stat.st_size, stat.st_ino))
            except OSError:
                files.append(None)
    return items + tuple(files)


def _build(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    algorithm = config.get("ssl.endpoint.identification.algorithm")
    context.check_hostname = algorithm is None or str(algorithm).strip().lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    _set_protocols(context, config)
    _set_ciphers(context, config)

    trusted = trusted_pem(config)
    if trusted is None:
        context.load_default_certs()
    else:
        try:
            context.load_verify_locations(cadata=trusted)
        except (ssl.SSLError, ValueError) as e:
            name = "ssl.truststore.location" if config.get("ssl.truststore.location") else "ssl.truststore.certificates"
            raise ConfigException(f"The truststore holds no usable CA certificate ({e})", name,
                                  config.get(name) if name.endswith("location") else _HIDDEN) from None
    load_client_key(context, config)
    return context


def _set_protocols(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    text = setting_text(config, "ssl.enabled.protocols")
    if text is None:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return
    versions = []
    for name in (p.strip() for p in text.split(",") if p.strip()):
        version = _VERSIONS.get(name.upper())
        if version is None:
            raise ConfigException(f"Unknown TLS protocol {name!r}; allowed: TLSv1.2, TLSv1.3 (and the obsolete "
                                  "TLSv1.1, TLSv1)", "ssl.enabled.protocols", text)
        versions.append(version)
    context.minimum_version, context.maximum_version = min(versions), max(versions)


def _set_ciphers(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    text = setting_text(config, "ssl.cipher.suites")
    if text is None:
        return
    names = [c.strip() for c in text.split(",") if c.strip()]
    tls12 = [n for n in names if not n.startswith("TLS_AES_") and not n.startswith("TLS_CHACHA20_")]
    if not tls12:
        return  # TLS 1.3 suites: OpenSSL enables them all, Python cannot narrow them
    try:
        context.set_ciphers(":".join(tls12))
    except ssl.SSLError:
        log.warning("ssl.cipher.suites: OpenSSL knows none of %s (Java names of TLS 1.2 suites are not translated); "
                    "the Python Kafka clients use OpenSSL's default suites, Spark's Kafka source uses the list",
                    ", ".join(tls12))


def check_handshake(config: Mapping[str, Any], bootstrap_servers: str, timeout_s: float = 10.0) -> None:
    """Fail fast, naming the key to check, when the broker's certificate is not trusted.

    Called by :func:`connect_spark.kafka.check_authentication` from the ``start`` of the
    Kafka-backed stores, before their clients are made: kafka-python retries a failed handshake until its
    bootstrap timeout and then reports a bare "Unable to bootstrap". Does nothing unless the protocol speaks
    TLS; a broker that cannot be reached, or another failure, is left to the caller's clients to report.

    Raises:
        ConfigException: the certificate chain is not trusted (names ``ssl.truststore.location``) or does not
            name the host (names ``ssl.endpoint.identification.algorithm``).
    """
    if not uses_tls(config):
        return
    context = ssl_context(config)
    server = bootstrap_servers.split(",")[0].strip()
    host, _, port = server.rpartition(":")
    host = host.strip("[]")
    try:
        raw = socket.create_connection((host, int(port)), timeout=timeout_s)
    except (OSError, ValueError):
        return
    try:
        with context.wrap_socket(raw, server_hostname=host) as conn:
            conn.settimeout(timeout_s)
    except ssl.SSLCertVerificationError as e:
        if e.verify_code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            raise ConfigException(f"The certificate of the broker at {server} does not name {host} ({e.verify_message})"
                                  "; connect with the name the certificate has, or set "
                                  "ssl.endpoint.identification.algorithm= (empty) to skip the check",
                                  "ssl.endpoint.identification.algorithm",
                                  config.get("ssl.endpoint.identification.algorithm", "https")) from None
        name = "ssl.truststore.location" if config.get("ssl.truststore.location") else "ssl.truststore.certificates"
        shown = config.get(name) if name.endswith("location") else _HIDDEN
        raise ConfigException(f"The broker at {server} presented a certificate the truststore does not trust "
                              f"({e.verify_message}); the truststore needs the CA that signed it", name,
                              shown) from None
    except (OSError, ssl.SSLError):
        return
    finally:
        raw.close()
