"""Kafka-style client settings as kafka-python keyword arguments, and closing clients quietly.

Called wherever the worker makes a kafka-python client: the Kafka-backed stores in their ``start``, the
runtime's consumers, the dead letter queue's producer and admin client.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Callable, Iterable, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import Password
from connect_spark.kafka.tls import ssl_context, uses_tls

__all__ = ["kafka_client_kwargs", "consumer_settings", "accepted_kwargs", "parse_jaas_config", "plain_value",
           "close_quietly"]

log = logging.getLogger(__name__)

# Kafka client keys that translate one to one (after a type conversion) into kafka-python arguments.
_DIRECT: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "security.protocol": ("security_protocol", lambda v: str(v).strip().upper()),
    "sasl.mechanism": ("sasl_mechanism", lambda v: str(v).strip().upper()),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", str),
    "client.id": ("client_id", str),
    "request.timeout.ms": ("request_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", int),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "metadata.max.age.ms": ("metadata_max_age_ms", int),
}
# Keys read together with others below, or that the caller passes by other means.
_HANDLED = frozenset({"bootstrap.servers", "sasl.jaas.config"})
_PASSWORD_MODULES = ("PlainLoginModule", "ScramLoginModule")
_OAUTH_MODULE = "OAuthBearerLoginModule"
# SASL mechanisms kafka-python serves from a user name and password in sasl.jaas.config.
_PASSWORD_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


def plain_value(value: Any) -> Any:
    """The value itself; a :class:`~connect_spark.config.definition.Password` is unwrapped."""
    return value.value if isinstance(value, Password) else value


def consumer_settings(worker: Any, connector: Any) -> dict[str, Any]:
    """A connector's consumer settings with Kafka's names: the worker's common client keys, its
    ``consumer.*`` keys, then the connector's ``consumer.override.*`` keys (a ``WorkerConfig`` and a
    ``ConnectorConfig``)."""
    return {**worker.kafka_client_config(), **worker.consumer_config(), **connector.consumer_overrides}


def kafka_client_kwargs(
    config: Mapping[str, Any] | None, client_class: type | None = None
) -> dict[str, Any]:
    """Translate Kafka client settings into kafka-python keyword arguments.

    Called by the Kafka-backed stores when they create their clients in ``start``, with the worker's
    ``security.protocol``/``sasl.*``/``ssl.*`` keys (``WorkerConfig.kafka_client_config()``).

    What is translated:

    * ``security.protocol``, ``sasl.mechanism``, ``sasl.kerberos.service.name``, ``client.id`` and a few
      timing keys (``request.timeout.ms``, ``retry.backoff.ms``, ...).
    * ``sasl.jaas.config`` with ``PlainLoginModule`` or ``ScramLoginModule``: its ``username`` and
      ``password`` options become ``sasl_plain_username``/``sasl_plain_password`` (kafka-python uses
      those for PLAIN and SCRAM alike). Other login modules cannot be expressed and are skipped with a
      WARN. ``OAuthBearerLoginModule`` with ``sasl.mechanism=OAUTHBEARER`` becomes a
      ``sasl_oauth_token_provider`` (:mod:`connect_spark.kafka.oauth`: client credentials or
      unsecured tokens). A mechanism the Python clients cannot serve, or PLAIN/SCRAM without a user name
      and password, is refused with a ``ConfigException`` naming the key.
    * With ``security.protocol`` ``SSL`` or ``SASL_SSL``, every ``ssl.*`` key (JKS, PKCS12 or PEM stores,
      inline PEM keys, host name checking, protocols) becomes one ``ssl_context``
      (:func:`connect_spark.kafka.tls.ssl_context`); otherwise ``ssl.*`` keys are ignored, as Kafka
      ignores them.

    Every other key is ignored with a DEBUG line naming the key, never its value.

    Args:
        config: Kafka-style settings; values may be strings, numbers or ``Password`` objects.
        client_class: when given (``KafkaProducer``, ``KafkaConsumer``, ``KafkaAdminClient``), only the
            arguments that class accepts are returned.

    Returns:
        kafka-python keyword arguments (secrets in plain text: never log this dict).
    """
    kwargs: dict[str, Any] = {}
    config = {str(k): plain_value(v) for k, v in (config or {}).items()}
    ignored: list[str] = []
    for key, value in config.items():
        if value is None:
            continue
        if key in _DIRECT:
            name, convert = _DIRECT[key]
            try:
                kwargs[name] = convert(value)
            except (TypeError, ValueError):
                raise ConfigException("Not a valid value for a Kafka client setting", key, value) from None
        elif key not in _HANDLED and not key.startswith("ssl."):
            ignored.append(key)

    jaas = config.get("sasl.jaas.config")
    module, options = "", {}
    if jaas:
        try:
            module, options = parse_jaas_config(str(jaas))
        except ValueError as e:
            raise ConfigException(f"Cannot parse the JAAS configuration: {e}", "sasl.jaas.config", "[hidden]") from None
        if module.endswith(_PASSWORD_MODULES):
            if "username" in options:
                kwargs["sasl_plain_username"] = options["username"]
            if "password" in options:
                kwargs["sasl_plain_password"] = options["password"]
        elif not module.endswith(_OAUTH_MODULE):
            log.warning("sasl.jaas.config uses %s, which the Python Kafka client of the storage topics cannot use; "
                        "only PlainLoginModule, ScramLoginModule and OAuthBearerLoginModule are translated", module)

    if uses_tls(config):
        kwargs["ssl_context"] = ssl_context(config)
    if str(kwargs.get("security_protocol", "")).startswith("SASL"):
        _check_mechanism(kwargs)
        if kwargs.get("sasl_mechanism") == "OAUTHBEARER":
            from connect_spark.kafka.oauth import token_provider

            kwargs["sasl_oauth_token_provider"] = token_provider(config, options, kwargs.get("ssl_context"))

    if ignored:
        log.debug("Kafka client settings not used by the storage clients: %s", ", ".join(sorted(ignored)))
    return kwargs if client_class is None else accepted_kwargs(client_class, kwargs)


def _check_mechanism(kwargs: Mapping[str, Any]) -> None:
    """Refuse a SASL mechanism the Python clients cannot serve, naming the key (never a secret)."""
    mechanism = str(kwargs.get("sasl_mechanism", "GSSAPI"))
    if mechanism in _PASSWORD_MECHANISMS:
        if "sasl_plain_username" not in kwargs or "sasl_plain_password" not in kwargs:
            raise ConfigException(
                f"sasl.mechanism={mechanism} needs sasl.jaas.config with PlainLoginModule (PLAIN) or ScramLoginModule "
                "(SCRAM) and its username and password options", "sasl.jaas.config", "[hidden]")
    elif mechanism not in ("GSSAPI", "OAUTHBEARER"):
        raise ConfigException("Not a SASL mechanism the Python Kafka clients can use; allowed: PLAIN, SCRAM-SHA-256, "
                              "SCRAM-SHA-512, OAUTHBEARER, GSSAPI", "sasl.mechanism", mechanism)


def accepted_kwargs(client_class: type, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` without the arguments ``client_class`` does not take (kafka-python refuses unknown ones).

    kafka-python's producer, consumer and admin client take different sets (the admin client has no
    ``ssl_ciphers``, for one); their ``DEFAULT_CONFIG`` lists what each takes.
    """
    accepted = getattr(client_class, "DEFAULT_CONFIG", None)
    if accepted is None:
        return dict(kwargs)
    dropped = sorted(k for k in kwargs if k not in accepted)
    if dropped:
        log.debug("%s does not take %s", client_class.__name__, ", ".join(dropped))
    return {k: v for k, v in kwargs.items() if k in accepted}


_JAAS_HEAD = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """Parse one JAAS login module entry as ``sasl.jaas.config`` holds it.

    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``
    gives ``("org.apache...PlainLoginModule", {"username": "u", "password": "p"})``. Quoted values may
    contain backslash escapes.

    Raises:
        ValueError: the text is not a login module entry (the message never contains option values).
    """
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise ValueError("expected '<LoginModule class> <flag> [option=value ...];'")
    options: dict[str, str] = {}
    position = head.end()
    while True:
        match = _JAAS_OPTION.match(text, position)
        if match is None:
            break
        name, quoted, bare = match.groups()
        options[name] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        position = match.end()
    rest = text[position:].strip()
    if rest not in (";", ""):
        raise ValueError(f"unexpected text after option {len(options)} of the login module entry")
    return head.group(1), options


def close_quietly(clients: Iterable[Any], what: str) -> None:
    """Close each client, logging (not raising) failures; used by the stores' ``stop``."""
    for client in clients:
        if client is None:
            continue
        try:
            client.close()
        except Exception as e:
            log.debug("Closing %s of %s failed: %s", type(client).__name__, what, e)
