"""A fast, clear failure when the Kafka cluster refuses the configured SASL credentials."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from kafka import KafkaAdminClient
from kafka.errors import KafkaError, SaslAuthenticationFailedError

from connect_spark.kafka.clients import kafka_client_kwargs, plain_value
from connect_spark.kafka.errors import KafkaAuthenticationError
from connect_spark.kafka.tls import check_handshake

__all__ = ["check_authentication"]

log = logging.getLogger(__name__)


class _AuthFailureWatch(logging.Handler):
    """Notes the first SASL authentication failure kafka-python reports while it retries a bootstrap.

    kafka-python retries a bootstrap whose authentication fails until its timeout and then raises a bare
    "Unable to bootstrap"; the reason is only in the WARNING and ERROR records it logs meanwhile (the
    failure as an argument). This handler reads those records as they pass; it changes no logger's level
    or propagation, so the worker's own logging sees them as usual.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.reason is not None:
            return
        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, SaslAuthenticationFailedError):
                self.reason = str(arg).split(": ")[-1]
                return


def check_authentication(
    config: Mapping[str, Any], bootstrap_servers: str, timeout_s: float = 20.0, what: str = "Kafka"
) -> None:
    """Fail fast with a clear message when the cluster refuses the configured SASL credentials.

    Called from the ``start`` of the Kafka-backed stores, before their clients are made, so that a wrong
    password stops the worker within seconds with an error naming the keys to check, instead of a long
    bootstrap timeout. With ``SSL`` or ``SASL_SSL``, a broker certificate the truststore does not trust is
    reported first (:func:`connect_spark.kafka.tls.check_handshake`). The SASL check does nothing
    unless ``security.protocol`` is ``SASL_PLAINTEXT`` or ``SASL_SSL``. Other connection problems are left
    to the caller's clients to report.

    Args:
        config: Kafka-style client settings (as given to :func:`kafka_client_kwargs`).
        bootstrap_servers: the cluster.
        timeout_s: how long to try.
        what: who connects, for the message (``"the offsets topic connect-offsets"``).

    Raises:
        KafkaAuthenticationError: the broker answered with an authentication failure (the message names
            the user and mechanism, never the password).
        ConfigException: a store cannot be read, or the broker's certificate is not trusted.
    """
    kwargs = kafka_client_kwargs(config, KafkaAdminClient)
    check_handshake({str(k): plain_value(v) for k, v in config.items()}, bootstrap_servers)
    protocol = str(kwargs.get("security_protocol", "PLAINTEXT"))
    if not protocol.startswith("SASL"):
        return
    watch = _AuthFailureWatch()
    kafka_log = logging.getLogger("kafka")
    kafka_log.addHandler(watch)
    admin = None
    try:
        # A refused login shows as an explicit error or, when the broker's close wins the race, as a bare
        # disconnect: retry often (backoff at most 200 ms) so that one of the attempts reads the error.
        admin = KafkaAdminClient(**{**kwargs, "bootstrap_servers": bootstrap_servers,
                                    "client_id": "connect-spark-auth-check",
                                    "reconnect_backoff_max_ms": 200,
                                    "bootstrap_timeout_ms": int(timeout_s * 1000)})
    except KafkaError:
        if watch.reason is None:
            return  # not an authentication problem: the caller's own clients report it
    finally:
        kafka_log.removeHandler(watch)
        if admin is not None:
            admin.close()
    if watch.reason is not None and admin is None:
        user = kwargs.get("sasl_plain_username")
        raise KafkaAuthenticationError(
            f"Authentication to Kafka at {bootstrap_servers} failed for {what} "
            f"(security.protocol={protocol}, sasl.mechanism={kwargs.get('sasl_mechanism', 'GSSAPI')}"
            f"{f', user {user!r}' if user else ''}): {watch.reason}. Check the username and password in "
            "sasl.jaas.config (and sasl.mechanism) against the broker's listener")
