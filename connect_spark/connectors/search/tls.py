"""The search sink's TLS: Confluent's ``elastic.https.ssl.*`` keys read as Kafka's ``ssl.*`` keys are.

Called by :func:`connect_spark.connectors.search.client.connect` (from a task's thread, when its client is
made): :func:`search_ssl_context` maps the sink's keys to Kafka-style ``ssl.*`` settings and builds the context
with :func:`connect_spark.kafka.tls.ssl_context`, so JKS, PKCS12 and PEM stores, store and key passwords and the
host-name check are read exactly as for the runtime's Kafka clients (and cached the same way, once per
process and store file version). :func:`check_server` shakes hands with the first ``https`` URL before the
client library is used, so an untrusted certificate fails the task at once with the key to fix, instead of
being retried as an unreachable cluster.

Errors raised by the Kafka layer name Kafka's keys; they are raised again here under the sink's names
(``ssl.truststore.location`` becomes ``elastic.https.ssl.truststore.location``). Passwords never appear in
a message: the Kafka layer shows them as ``[hidden]``.
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import Any, Collection, Mapping
from urllib.parse import urlsplit

from connect_spark.api.errors import ConfigException
from connect_spark.kafka.tls import check_handshake, ssl_context

__all__ = ["PREFIX", "KAFKA_KEYS", "kafka_settings", "search_ssl_context", "check_server"]

PREFIX = "elastic.https."
"""Confluent's prefix of the sink's TLS keys: ``elastic.https.ssl.truststore.location`` is Kafka's
``ssl.truststore.location``."""

KAFKA_KEYS = ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
              "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
              "ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites")
"""The Kafka keys the sink takes under :data:`PREFIX`."""

KEY_LOCATION = PREFIX + "ssl.key.location"
"""Not a Confluent key: a PEM file with the client's private key, the certificate chain being in
``elastic.https.ssl.keystore.location`` (a PEM file then)."""

_KAFKA_NAME = re.compile(r"(?<![\w.])ssl\.")


def kafka_settings(values: Mapping[str, Any], given: Collection[str]) -> dict[str, Any]:
    """The Kafka-style ``ssl.*`` settings (plain values, ``None`` left out) of the sink's parsed keys.

    Args:
        values: the parsed keys, defaults included.
        given: the keys the user set. A store type left at Confluent's default (JKS) is not passed on, so the
            store is read by its content (a PEM file as PEM, a binary store as JKS or PKCS12).

    ``key.location`` (with a PEM ``keystore.location``) becomes Kafka's inline PEM pair, read from the two
    files when the context is built.
    """
    settings: dict[str, Any] = {"security.protocol": "SSL"}
    for name in KAFKA_KEYS:
        if name.endswith(".type") and PREFIX + name not in given:
            continue
        value = values.get(PREFIX + name)
        if value is not None and str(value) != "":
            settings[name] = getattr(value, "value", value)  # a Password, unwrapped
        elif name == "ssl.endpoint.identification.algorithm" and value is not None:
            settings[name] = ""  # empty: no host-name check
    if values.get(KEY_LOCATION):
        settings["key.location"] = values[KEY_LOCATION]
    return settings


def _sink_name(name: str | None) -> str | None:
    if name is None:
        return None
    if name in ("ssl.keystore.key", "ssl.keystore.certificate.chain"):
        return KEY_LOCATION
    if name == "ssl.truststore.certificates":  # no truststore set: the system's CAs were used
        return PREFIX + "ssl.truststore.location"
    return PREFIX + name if name.startswith("ssl.") else name


def _renamed(error: ConfigException) -> ConfigException:
    """``error`` with the sink's key names in place of Kafka's."""
    reason = _KAFKA_NAME.sub(PREFIX + "ssl.", error.reason).replace("broker", "server")
    return ConfigException(reason, _sink_name(error.key), error.value)


def _with_key_file(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings with ``key.location`` turned into Kafka's inline PEM key and chain."""
    kafka = {k: v for k, v in settings.items() if k != "key.location"}
    key_location = settings.get("key.location")
    if not key_location:
        return kafka
    chain_location = kafka.pop("ssl.keystore.location", None)
    if not chain_location:
        raise ConfigException(f"{KEY_LOCATION} needs the certificate chain in {PREFIX}ssl.keystore.location",
                              KEY_LOCATION, key_location)
    kafka.pop("ssl.keystore.type", None)
    for key, location in ((KEY_LOCATION, key_location), (PREFIX + "ssl.keystore.location", chain_location)):
        try:
            text = Path(location).read_text("ascii")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigException(f"Cannot read the PEM file ({getattr(e, 'strerror', None) or e})", key,
                                  location) from None
        kafka["ssl.keystore.key" if key == KEY_LOCATION else "ssl.keystore.certificate.chain"] = text
    return kafka


def search_ssl_context(settings: Mapping[str, Any]) -> ssl.SSLContext:
    """The context :func:`kafka_settings` describes (cached per settings and store file versions).

    Raises:
        ConfigException: a store is missing, unreadable, of an unknown type, or its password is wrong; the
            message names the sink's key, never a password.
    """
    try:
        return ssl_context(_with_key_file(settings))
    except ConfigException as e:
        raise _renamed(e) from None


def check_server(settings: Mapping[str, Any], url: str, timeout_s: float) -> None:
    """Shake hands with ``url`` (an ``https`` one) and fail, naming the key to fix, when its certificate is not
    trusted or does not name its host. A server that cannot be reached is left to the client library.

    Raises:
        ConfigException: naming ``elastic.https.ssl.truststore.location`` or
            ``elastic.https.ssl.endpoint.identification.algorithm``.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    address = f"[{host}]" if ":" in host else host
    try:
        check_handshake(_with_key_file(settings), f"{address}:{parts.port or 443}", timeout_s)
    except ConfigException as e:
        raise _renamed(e) from None
