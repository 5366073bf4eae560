"""The worker configuration: Kafka Connect's worker keys plus connect_spark's own.

Read by the CLI from the worker ``.properties`` file (``WorkerConfig.from_properties(path)``) before
anything starts; the runtime then reads its typed accessors. Keys keep Kafka Connect's names and
defaults so that an existing ``connect-standalone.properties`` or ``connect-distributed.properties``
works unchanged. Notes for Kafka Connect users:

* ``key.converter`` and ``value.converter`` are required, as in Kafka 4.0.
* ``spark.*`` keys pass through to the SparkSession (:meth:`WorkerConfig.spark_conf`).
* ``consumer.*``, ``producer.*`` and ``admin.*`` keys configure the sink consumers, the dead letter
  queue producer and the admin client, as in Kafka. ``bootstrap.servers``, ``security.protocol``,
  ``sasl.*`` and ``ssl.*`` are the common client settings (:meth:`WorkerConfig.kafka_client_config`).
* ``config.providers`` declares config providers; ``env`` and ``file`` are enabled when it is not set
  (see ``connect_spark.config.providers``). References are resolved in the worker's own values too.
* Unknown keys are allowed, as in Kafka, and logged at DEBUG.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.config.abstract import AbstractConfig
from connect_spark.config.definition import (
    NO_DEFAULT,
    ConfigDef,
    ConfigIssue,
    Importance,
    LambdaValidator,
    Range,
    Type,
    ValidString,
)
from connect_spark.config.properties import load_properties
from connect_spark.config.providers import CONFIG_PROVIDERS, ConfigProviders
from connect_spark.config.self_healing import WORKER_SELF_HEALING_DEF

__all__ = [
    "WORKER_CONFIG_DEF",
    "WorkerConfig",
    "AVAILABLE_NOW",
    "parse_trigger",
    "TRIGGER_VALIDATOR",
    "EXECUTION_MODE_VALIDATOR",
    "REALTIME_OFFSET_FLUSH_INTERVAL_MS",
    "PASS_THROUGH_PREFIXES",
    "OVERRIDE_POLICIES",
]

log = logging.getLogger(__name__)

AVAILABLE_NOW = "available-now"
"""The ``trigger`` value that processes what is available, then stops."""

_INTERVAL = re.compile(r"(?i)\s*([0-9]+)\s*(ms|s|m|h)?\s*")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def parse_trigger(value: str) -> str | int:
    """Parse a ``trigger`` value.

    Args:
        value: ``available-now`` (any case) or an interval: a whole number with unit ``ms``, ``s``,
            ``m`` or ``h`` (``500ms``, ``10s``, ``1m``, ``2h``); a bare number is milliseconds.

    Returns:
        :data:`AVAILABLE_NOW`, or the interval in milliseconds.

    Raises:
        ConfigException: for any other value.
    """
    text = value.strip()
    if text.lower() == AVAILABLE_NOW:
        return AVAILABLE_NOW
    match = _INTERVAL.fullmatch(text)
    if not match:
        raise ConfigException(
            "Expected available-now or an interval such as 500ms, 10s, 1m or 2h", "trigger", value
        )
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]


def _check_trigger(name: str, value: Any) -> None:
    try:
        parse_trigger(value)
    except ConfigException as e:
        raise ConfigException(e.reason, name, value) from None


TRIGGER_VALIDATOR = LambdaValidator.with_(_check_trigger, "available-now, or an interval: 500ms, 10s, 1m, 2h")
EXECUTION_MODE_VALIDATOR = ValidString.in_("driver", "executor", "realtime")
#: ``offset.flush.interval.ms`` of connectors in ``task.execution.mode=realtime`` when the worker does not set the
#: key: their tasks commit from the executors as records arrive, so the tick is short (measured in
#: docs/performance.md, "Real-time mode").
REALTIME_OFFSET_FLUSH_INTERVAL_MS = 200

#: ``max.offsets.per.trigger`` when it is not set and every record of a batch is collected to the driver
#: (record and Arrow tasks in driver mode, DataFrame tasks without a vectorized plan): a backlog must not
#: arrive there as one batch.
DRIVER_MAX_OFFSETS_PER_TRIGGER = 50_000
#: ``max.offsets.per.trigger`` when it is not set and a batch's records stay in Spark (tasks on the
#: executors, DataFrame tasks with a vectorized plan, whose rows only reach the driver when they need the
#: per-record path): a backlog is still read in bounded slices.
EXECUTOR_MAX_OFFSETS_PER_TRIGGER = 1_000_000

OVERRIDE_POLICIES = {
    "All": "org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy",
    "None": "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy",
    "Principal": "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy",
}
"""Values of ``connector.client.config.override.policy``: Kafka's aliases and their class names."""


def _check_policy(name: str, value: Any) -> None:
    if value not in OVERRIDE_POLICIES and value not in OVERRIDE_POLICIES.values():
        raise ConfigException(f"Must be one of {', '.join(OVERRIDE_POLICIES)} (or Kafka's class name for one)", name, value)


def _check_replication_factor(name: str, value: Any) -> None:
    if value != -1 and value < 1:
        raise ConfigException("Must be at least 1, or -1 for the broker's default", name, value)


_REPLICATION_FACTOR = LambdaValidator.with_(_check_replication_factor, "-1 (broker default) or [1,...]")
_LISTENER = re.compile(r"(?i)(http|https)://(\[[^\]]*\]|[^:/\[\]]*):([0-9]{1,5})")


def _check_listeners(name: str, value: Any) -> None:
    if not value:
        raise ConfigException("At least one listener is needed", name, value)
    for listener in value:
        match = _LISTENER.fullmatch(listener)
        if not match or int(match.group(3)) > 65535:
            raise ConfigException(f"{listener!r} is not a listener like http://host:8083 or https://:8443", name, value)


_LISTENERS = LambdaValidator.with_(_check_listeners, "list of http://host:port or https://host:port")
_SECURITY_PROTOCOLS = ValidString.in_("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case_insensitive=True)

PASS_THROUGH_PREFIXES = (
    "spark.",
    "consumer.",
    "producer.",
    "admin.",
    "sasl.",
    "ssl.",
    "key.converter.",
    "value.converter.",
    "header.converter.",
    CONFIG_PROVIDERS + ".",
    "listeners.",
)
"""Prefixes of undeclared keys the worker knows about (not logged as unknown)."""

_COMMON = "Common"
_CONVERTERS = "Converters"
_STORAGE = "Offsets, configs and status storage"
_REST = "REST"
_PLUGINS = "Plugins and config providers"
_SPARK = "Spark (connect_spark)"
_SECURITY = "Kafka security (TLS and SASL)"
_STORE_TYPES = ValidString.in_("JKS", "PKCS12", "PEM", case_insensitive=True)

WORKER_CONFIG_DEF = (
    ConfigDef()
    .define("bootstrap.servers", Type.LIST, "localhost:9092", None, Importance.HIGH,
            "Kafka brokers to connect to, as host:port pairs separated by commas. Used by the sink consumers "
            "(the Spark Kafka source), the dead letter queue producer and the worker's storage topics.", _COMMON)
    .define("security.protocol", Type.STRING, "PLAINTEXT", _SECURITY_PROTOCOLS, Importance.MEDIUM,
            "Security protocol of connect_spark's Kafka clients, shared with the sasl.* and ssl.* keys. "
            "consumer.*, producer.* and admin.* keys (e.g. consumer.security.protocol) override it for one kind of "
            "client.", _COMMON)
    .define("ssl.truststore.location", Type.STRING, None, None, Importance.HIGH,
            "The truststore (CA certificates) of every Kafka client: a JKS or PKCS12 store, or a PEM file. Read by "
            "Spark's Kafka source and, in memory, by connect_spark's own clients (stores, dead letter queue, admin).",
            _SECURITY)
    .define("ssl.truststore.password", Type.PASSWORD, None, None, Importance.HIGH,
            "Password of the JKS or PKCS12 truststore.", _SECURITY)
    .define("ssl.truststore.type", Type.STRING, None, _STORE_TYPES, Importance.MEDIUM,
            "JKS (Kafka's default), PKCS12 or PEM. A binary store is read by its content, as Java 17 does.",
            _SECURITY)
    .define("ssl.truststore.certificates", Type.STRING, None, None, Importance.LOW,
            "CA certificates as inline PEM text (with ssl.truststore.type=PEM), instead of a truststore file.",
            _SECURITY)
    .define("ssl.keystore.location", Type.STRING, None, None, Importance.HIGH,
            "The client keystore (key and certificate chain) for mutual TLS: JKS, PKCS12 or a PEM file.", _SECURITY)
    .define("ssl.keystore.password", Type.PASSWORD, None, None, Importance.HIGH,
            "Password of the JKS or PKCS12 keystore.", _SECURITY)
    .define("ssl.keystore.type", Type.STRING, None, _STORE_TYPES, Importance.MEDIUM,
            "JKS (Kafka's default), PKCS12 or PEM.", _SECURITY)
    .define("ssl.key.password", Type.PASSWORD, None, None, Importance.HIGH,
            "Password of the private key in the keystore (a JKS key's own password, or an encrypted PEM key).",
            _SECURITY)
    .define("ssl.keystore.key", Type.PASSWORD, None, None, Importance.LOW,
            "The client's private key as inline PEM text (with ssl.keystore.certificate.chain).", _SECURITY)
    .define("ssl.keystore.certificate.chain", Type.STRING, None, None, Importance.LOW,
            "The client's certificate chain as inline PEM text (with ssl.keystore.key).", _SECURITY)
    .define("ssl.endpoint.identification.algorithm", Type.STRING, "https", None, Importance.LOW,
            "https checks that the broker's certificate names the host connected to; empty turns the check off.",
            _SECURITY)
    .define("ssl.enabled.protocols", Type.STRING, "TLSv1.2,TLSv1.3", None, Importance.LOW,
            "TLS versions the clients may use; connect_spark's own clients use the lowest to the highest listed.",
            _SECURITY)
    .define("ssl.cipher.suites", Type.STRING, None, None, Importance.LOW,
            "Cipher suites. Spark's Kafka source uses the list; connect_spark's own clients use it when OpenSSL knows "
            "the names and otherwise OpenSSL's defaults (with a WARN).", _SECURITY)
    .define("sasl.mechanism", Type.STRING, "GSSAPI", None, Importance.MEDIUM,
            "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (user and password from sasl.jaas.config), "
            "OAUTHBEARER (client credentials from sasl.oauthbearer.token.endpoint.url and OAuthBearerLoginModule's "
            "clientId/clientSecret, or unsecured tokens for development brokers), or GSSAPI.",
            _SECURITY)
    .define("sasl.jaas.config", Type.PASSWORD, None, None, Importance.MEDIUM,
            "JAAS login entry, e.g. org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" "
            "password=\"p\";", _SECURITY)
    .define("group.id", Type.STRING, None, None, Importance.LOW,
            "Name of a distributed worker group. Not the sink consumer group, which is connect-<connector name>.",
            _COMMON)
    .define("session.timeout.ms", Type.INT, 10000, Range.at_least(1), Importance.HIGH,
            "A distributed worker that sends no heartbeat to the group coordinator for this long leaves the group "
            "and its connectors move to the others (after scheduled.rebalance.max.delay.ms).", _COMMON)
    .define("heartbeat.interval.ms", Type.INT, 3000, Range.at_least(1), Importance.HIGH,
            "How often a distributed worker heartbeats to the group coordinator; below a third of "
            "session.timeout.ms.", _COMMON)
    .define("rebalance.timeout.ms", Type.INT, 60000, Range.at_least(1), Importance.MEDIUM,
            "How long a distributed worker may take to stop the connectors it gives up and rejoin the group "
            "during a rebalance.", _COMMON)
    .define("scheduled.rebalance.max.delay.ms", Type.INT, 300000, Range.at_least(0), Importance.LOW,
            "How long the connectors of a distributed worker that left the group without a graceful stop wait "
            "for it to come back before they move to the other workers.", _COMMON)
    .define("key.converter", Type.CLASS, NO_DEFAULT, None, Importance.HIGH,
            "Converter for record keys, used by connectors that do not set their own. Required, as in Kafka 4.0. "
            "An alias (StringConverter, JsonConverter, ByteArrayConverter...), a Kafka class name or a Python path. "
            "Its settings are the key.converter.* keys.", _CONVERTERS)
    .define("value.converter", Type.CLASS, NO_DEFAULT, None, Importance.HIGH,
            "Converter for record values, used by connectors that do not set their own. Required, as in Kafka 4.0. "
            "Its settings are the value.converter.* keys.", _CONVERTERS)
    .define("header.converter", Type.CLASS, "org.apache.kafka.connect.storage.SimpleHeaderConverter", None,
            Importance.LOW, "Converter for header values, used by connectors that do not set their own. "
            "Its settings are the header.converter.* keys.", _CONVERTERS)
    .define("offset.storage.topic", Type.STRING, "connect-offsets", None, Importance.HIGH,
            "Compacted topic for connector offsets kept by the worker.", _STORAGE)
    .define("offset.storage.partitions", Type.INT, 25, Range.at_least(1), Importance.LOW,
            "Partitions of the offset storage topic when the worker creates it.", _STORAGE)
    .define("offset.storage.replication.factor", Type.SHORT, 3, _REPLICATION_FACTOR, Importance.LOW,
            "Replication factor of the offset storage topic when the worker creates it; -1 for the broker's default.",
            _STORAGE)
    .define("offset.storage.file.filename", Type.STRING, "", None, Importance.MEDIUM,
            "File for offsets of a standalone worker that should not use Kafka topics for its own state. "
            "Empty: use offset.storage.topic.", _STORAGE)
    .define("offset.flush.interval.ms", Type.LONG, 60000, Range.at_least(0), Importance.LOW,
            "How often the sink tasks commit offsets (the preCommit/flush tick), in milliseconds. Not set: 60000, "
            f"and {REALTIME_OFFSET_FLUSH_INTERVAL_MS} for connectors in task.execution.mode=realtime.", _STORAGE)
    .define("offset.flush.timeout.ms", Type.LONG, 5000, Range.at_least(0), Importance.LOW,
            "How long an offset commit may take before it is abandoned and retried at the next tick, "
            "in milliseconds.", _STORAGE)
    .define("task.shutdown.graceful.timeout.ms", Type.LONG, 5000, Range.at_least(0), Importance.LOW,
            "Total time to wait for tasks to stop gracefully, in milliseconds. After it, tasks are cancelled and "
            "their final commit is skipped.", _STORAGE)
    .define("config.storage.topic", Type.STRING, "connect-configs", None, Importance.HIGH,
            "Compacted, single-partition topic holding connector configurations.", _STORAGE)
    .define("config.storage.replication.factor", Type.SHORT, 3, _REPLICATION_FACTOR, Importance.LOW,
            "Replication factor of the config storage topic when the worker creates it; -1 for the broker's default.",
            _STORAGE)
    .define("status.storage.topic", Type.STRING, "connect-status", None, Importance.HIGH,
            "Compacted topic holding connector and task status.", _STORAGE)
    .define("status.storage.partitions", Type.INT, 5, Range.at_least(1), Importance.LOW,
            "Partitions of the status storage topic when the worker creates it.", _STORAGE)
    .define("status.storage.replication.factor", Type.SHORT, 3, _REPLICATION_FACTOR, Importance.LOW,
            "Replication factor of the status storage topic when the worker creates it; -1 for the broker's default.",
            _STORAGE)
    .define("listeners", Type.LIST, "http://127.0.0.1:8083", _LISTENERS, Importance.LOW,
            "URIs the REST API listens on. An empty host listens on all interfaces (http://:8083).", _REST)
    .define("rest.advertised.host.name", Type.STRING, None, None, Importance.LOW,
            "Host name given to other workers and clients to reach this worker's REST API, when it differs from "
            "the listener's.", _REST)
    .define("rest.basic.auth.username", Type.STRING, None, None, Importance.MEDIUM,
            "User name the REST API requires with HTTP basic authentication; not set: no authentication. "
            "Set rest.basic.auth.password with it.", _REST)
    .define("rest.basic.auth.password", Type.PASSWORD, None, None, Importance.MEDIUM,
            "Password of rest.basic.auth.username (a config provider reference keeps it out of the file).", _REST)
    .define("plugin.path", Type.LIST, None, None, Importance.LOW,
            "Directories added to the Python path (sys.path) before plugins are resolved, for connectors, "
            "converters and transforms installed outside the environment.", _PLUGINS)
    .define(CONFIG_PROVIDERS, Type.LIST, None, None, Importance.LOW,
            "Names of the config providers enabled for ${provider:[path:]key} references. When not set, env and "
            "file are enabled. Each listed name is declared with config.providers.<name>.class (optional for env, "
            "file and directory) and configured with config.providers.<name>.param.*.", _PLUGINS)
    .define("connector.client.config.override.policy", Type.STRING, "All",
            LambdaValidator.with_(_check_policy, "[All, None, Principal]"), Importance.MEDIUM,
            "Which consumer.override.*, producer.override.* and admin.override.* keys connectors may set: All, None, "
            "or Principal (only the sasl.jaas.config, sasl.mechanism and security.protocol settings).", _PLUGINS)
    .define("checkpoint.location", Type.STRING, "./.data/checkpoints", None, Importance.HIGH,
            "Root folder of the Spark streaming checkpoints; each connector's tasks use a folder under it.", _SPARK)
    .define("trigger", Type.STRING, "1s", TRIGGER_VALIDATOR, Importance.MEDIUM,
            "How often a micro-batch starts: an interval (500ms, 10s, 1m, 2h; a bare number is milliseconds), or "
            "available-now to process what is in the topics and stop.", _SPARK)
    .define("task.execution.mode", Type.STRING, "executor", EXECUTION_MODE_VALIDATOR, Importance.MEDIUM,
            "Where SinkTask.put runs: executor (in the Spark executors, per micro-batch), driver (in the driver "
            "process, for sinks that must run in one place) or realtime (record and Arrow tasks in the executors "
            "in Spark 4.2's real-time mode: records are put as they arrive and offsets committed from the "
            "executors every offset.flush.interval.ms; needs Spark 4.2, a task slot per Kafka partition and the "
            "Kafka offset store). Connectors may override it.", _SPARK)
    .define("max.offsets.per.trigger", Type.LONG, None, Range.at_least(1), Importance.LOW,
            "Upper bound on the records read per micro-batch across all partitions (Spark's maxOffsetsPerTrigger). "
            f"Not set: {DRIVER_MAX_OFFSETS_PER_TRIGGER} when every record of a batch is collected to the driver "
            "(record and Arrow tasks with task.execution.mode=driver, DataFrame tasks whose converters and transforms "
            f"have no vectorized form), {EXECUTOR_MAX_OFFSETS_PER_TRIGGER} when the records stay in Spark (tasks on "
            "the executors, DataFrame tasks such as the Delta sink with a vectorized plan).", _SPARK)
    .define_all(WORKER_SELF_HEALING_DEF)
)
"""The declared worker keys. ``spark.*``, ``consumer.*``, ``producer.*``, ``admin.*``, ``sasl.*`` and ``ssl.*``
keys pass through undeclared."""


class WorkerConfig(AbstractConfig):
    """A parsed, valid worker configuration with typed accessors.

    Build it with ``WorkerConfig(props)`` or ``WorkerConfig.from_properties(path)``; both raise one
    :class:`~connect_spark.config.definition.ConfigValidationError` listing every problem.
    Config-provider references are resolved with the providers the properties declare.
    """

    CONFIG_DEF = WORKER_CONFIG_DEF

    @classmethod
    def from_properties(cls, path: str | os.PathLike[str]) -> "WorkerConfig":
        """Read and parse a worker ``.properties`` file.

        Raises:
            ConfigException: when the file cannot be read.
            ConfigValidationError: listing every problem of its content.
        """
        return cls(load_properties(path))

    @classmethod
    def _default_providers(cls, props: Mapping[str, Any]) -> tuple[ConfigProviders, list[ConfigIssue]]:
        return ConfigProviders.from_worker_props(props)

    @classmethod
    def _cross_check(cls, props: Mapping[str, Any], values: Mapping[str, Any]) -> list[ConfigIssue]:
        issues = []
        if values.get("rest.basic.auth.username") and not values.get("rest.basic.auth.password"):
            issues.append(ConfigIssue("rest.basic.auth.password", None,
                                      "rest.basic.auth.password is required when rest.basic.auth.username is set"))
        heartbeat, session = values.get("heartbeat.interval.ms"), values.get("session.timeout.ms")
        if isinstance(heartbeat, int) and isinstance(session, int) and heartbeat >= session:
            issues.append(ConfigIssue("heartbeat.interval.ms", heartbeat,
                                      f"heartbeat.interval.ms must be below session.timeout.ms ({session}), "
                                      "typically a third of it"))
        return issues

    def _setup(self, originals: Mapping[str, Any], resolved: dict[str, Any], values: dict[str, Any]) -> None:
        super()._setup(originals, resolved, values)
        self.providers, _ = ConfigProviders.from_worker_props(originals)
        for key in resolved:
            if key not in WORKER_CONFIG_DEF and not key.startswith(PASS_THROUGH_PREFIXES):
                log.debug("Worker configuration key %s is not used by connect_spark", key)

    # --- Kafka -------------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``bootstrap.servers`` as one comma-separated string (what Spark and Kafka clients take)."""
        return ",".join(self._values["bootstrap.servers"])

    @property
    def security_protocol(self) -> str:
        return self._values["security.protocol"].upper()

    @property
    def group_id(self) -> str | None:
        return self._values["group.id"]

    @property
    def session_timeout_ms(self) -> int:
        return self._values["session.timeout.ms"]

    @property
    def heartbeat_interval_ms(self) -> int:
        return self._values["heartbeat.interval.ms"]

    @property
    def rebalance_timeout_ms(self) -> int:
        return self._values["rebalance.timeout.ms"]

    @property
    def scheduled_rebalance_max_delay_ms(self) -> int:
        return self._values["scheduled.rebalance.max.delay.ms"]

    def kafka_client_config(self) -> dict[str, Any]:
        """The common Kafka client settings: ``bootstrap.servers``, ``security.protocol`` and every ``sasl.*`` /
        ``ssl.*`` key (values may be secrets; never log them unmasked).

        Kafka Connect uses these for the worker's own clients only and expects ``consumer.``/``producer.``
        prefixed copies for sink consumers; callers that build a client from them should apply the
        ``consumer_config()``/``producer_config()`` keys on top.
        """
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        for key, value in self._resolved.items():
            if key.startswith(("sasl.", "ssl.")):
                config[key] = value
        return config

    def consumer_config(self) -> dict[str, Any]:
        """The ``consumer.*`` keys, prefix stripped: worker-wide settings of the sink consumers."""
        return self.originals_with_prefix("consumer.")

    def producer_config(self) -> dict[str, Any]:
        """The ``producer.*`` keys, prefix stripped: settings of the dead letter queue producer."""
        return self.originals_with_prefix("producer.")

    def admin_config(self) -> dict[str, Any]:
        """The ``admin.*`` keys, prefix stripped: settings of the admin client."""
        return self.originals_with_prefix("admin.")

    # --- converters --------------------------------------------------------------------------------

    @property
    def key_converter(self) -> str:
        return self._values["key.converter"]

    @property
    def value_converter(self) -> str:
        return self._values["value.converter"]

    @property
    def header_converter(self) -> str:
        return self._values["header.converter"]

    # --- storage -----------------------------------------------------------------------------------

    @property
    def offset_storage_topic(self) -> str:
        return self._values["offset.storage.topic"]

    @property
    def offset_storage_partitions(self) -> int:
        return self._values["offset.storage.partitions"]

    @property
    def offset_storage_replication_factor(self) -> int:
        return self._values["offset.storage.replication.factor"]

    @property
    def offset_storage_file_filename(self) -> str | None:
        """The standalone offsets file, or ``None`` to use :attr:`offset_storage_topic`."""
        return self._values["offset.storage.file.filename"] or None

    @property
    def offset_flush_interval_ms(self) -> int:
        return self._values["offset.flush.interval.ms"]

    @property
    def realtime_offset_flush_interval_ms(self) -> int:
        """The commit tick of connectors in ``task.execution.mode=realtime``: the key when set, else
        :data:`REALTIME_OFFSET_FLUSH_INTERVAL_MS`."""
        if "offset.flush.interval.ms" in self._resolved:
            return self._values["offset.flush.interval.ms"]
        return REALTIME_OFFSET_FLUSH_INTERVAL_MS

    @property
    def offset_flush_timeout_ms(self) -> int:
        return self._values["offset.flush.timeout.ms"]

    @property
    def task_shutdown_graceful_timeout_ms(self) -> int:
        return self._values["task.shutdown.graceful.timeout.ms"]

    @property
    def config_storage_topic(self) -> str:
        return self._values["config.storage.topic"]

    @property
    def config_storage_replication_factor(self) -> int:
        return self._values["config.storage.replication.factor"]

    @property
    def status_storage_topic(self) -> str:
        return self._values["status.storage.topic"]

    @property
    def status_storage_partitions(self) -> int:
        return self._values["status.storage.partitions"]

    @property
    def status_storage_replication_factor(self) -> int:
        return self._values["status.storage.replication.factor"]

    # --- REST and plugins --------------------------------------------------------------------------

    @property
    def listeners(self) -> list[str]:
        return list(self._values["listeners"])

    @property
    def rest_advertised_host_name(self) -> str | None:
        return self._values["rest.advertised.host.name"]

    @property
    def rest_basic_auth(self) -> tuple[str, str] | None:
        """``(user, password)`` the REST API requires, or ``None`` when authentication is off."""
        user, password = self._values["rest.basic.auth.username"], self._values["rest.basic.auth.password"]
        if not user:
            return None
        return user, password.value if password is not None else ""

    @property
    def plugin_path(self) -> list[str]:
        return list(self._values["plugin.path"] or [])

    @property
    def config_providers(self) -> list[str]:
        """The enabled config provider names (``env`` and ``file`` when ``config.providers`` is not set)."""
        return self.providers.names()

    @property
    def connector_client_config_override_policy(self) -> str:
        """``All``, ``None`` or ``Principal`` (a Kafka class name is mapped to its alias)."""
        value = self._values["connector.client.config.override.policy"]
        for alias, class_name in OVERRIDE_POLICIES.items():
            if value == class_name:
                return alias
        return value

    # --- Spark -------------------------------------------------------------------------------------

    @property
    def checkpoint_location(self) -> str:
        return self._values["checkpoint.location"]

    @property
    def trigger(self) -> str | int:
        """:data:`AVAILABLE_NOW`, or the micro-batch interval in milliseconds."""
        return parse_trigger(self._values["trigger"])

    @property
    def task_execution_mode(self) -> str:
        """``executor``, ``driver`` or ``realtime``."""
        return self._values["task.execution.mode"]

    @property
    def max_offsets_per_trigger(self) -> int | None:
        """The ``max.offsets.per.trigger`` set, or None (see :meth:`max_offsets_per_trigger_for`)."""
        return self._values["max.offsets.per.trigger"]

    def max_offsets_per_trigger_for(self, collects_batches: bool) -> int:
        """The bound a connector reads with: the key's value, else the default its declaration documents,
        which depends on whether the connector's processor ``collects_batches`` (every record of a batch
        comes to the driver)."""
        if self.max_offsets_per_trigger:
            return int(self.max_offsets_per_trigger)
        return DRIVER_MAX_OFFSETS_PER_TRIGGER if collects_batches else EXECUTOR_MAX_OFFSETS_PER_TRIGGER

    def spark_conf(self) -> dict[str, str]:
        """Every ``spark.*`` key with its full name, as strings, for the SparkSession builder."""
        return {key: str(value) for key, value in self._resolved.items() if key.startswith("spark.")}
