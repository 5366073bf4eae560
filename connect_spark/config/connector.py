"""The sink connector configuration: Kafka Connect's ``ConnectorConfig`` and ``SinkConnectorConfig`` keys.

Read from each connector ``.properties`` file (or a REST request) and checked by
``connect_spark.config.validation`` before anything starts; the runtime then reads its typed
accessors. The connector's own keys (``file``, ``table.path``...) are declared by the connector's
``config()`` and validated there too; this module knows only the keys every sink connector has.

Checks beyond single keys, as Kafka does them:

* exactly one of ``topics`` and ``topics.regex`` is set;
* the dead letter queue topic is neither in ``topics`` nor matched by ``topics.regex``;
* ``transforms`` and ``predicates`` hold unique aliases; each alias has its ``.type``; a transform's
  ``predicate`` names a declared predicate, and ``negate`` is only given with a ``predicate``;
* ``consumer.override.auto.offset.reset`` is ``earliest``, ``latest`` or ``none``.

Whether the ``*.override.*`` keys are allowed depends on the worker's
``connector.client.config.override.policy`` (:func:`client_override_issues`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from connect_spark.api.errors import ConfigException
from connect_spark.config.abstract import AbstractConfig
from connect_spark.config.definition import (
    NO_DEFAULT,
    ConfigDef,
    ConfigIssue,
    Importance,
    NonEmptyStringWithoutControlChars,
    Range,
    Type,
    ValidRegex,
    ValidString,
    parse_type,
)
from connect_spark.config.worker import EXECUTION_MODE_VALIDATOR
from connect_spark.config.self_healing import CONNECTOR_SELF_HEALING_DEF

if TYPE_CHECKING:
    from connect_spark.config.worker import WorkerConfig

__all__ = [
    "CONNECTOR_CONFIG_DEF",
    "ConnectorConfig",
    "TransformConfig",
    "PredicateConfig",
    "CONSUMER_OVERRIDE_PREFIX",
    "PRODUCER_OVERRIDE_PREFIX",
    "ADMIN_OVERRIDE_PREFIX",
    "AUTO_OFFSET_RESETS",
    "client_override_issues",
    "consumer_group_id",
]

CONSUMER_OVERRIDE_PREFIX = "consumer.override."
PRODUCER_OVERRIDE_PREFIX = "producer.override."
ADMIN_OVERRIDE_PREFIX = "admin.override."
_OVERRIDE_PREFIXES = (CONSUMER_OVERRIDE_PREFIX, PRODUCER_OVERRIDE_PREFIX, ADMIN_OVERRIDE_PREFIX)
AUTO_OFFSET_RESETS = ("earliest", "latest", "none")
_PRINCIPAL_OVERRIDABLE = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})
_CONVERTER_KEYS = {"key": "key.converter", "value": "value.converter", "header": "header.converter"}

_COMMON = "Common"
_TRANSFORMS = "Transforms and predicates"
_ERRORS = "Error handling"
_SPARK = "Spark (connect_spark)"

CONNECTOR_CONFIG_DEF = (
    ConfigDef()
    .define("name", Type.STRING, NO_DEFAULT, NonEmptyStringWithoutControlChars(), Importance.HIGH,
            "Unique name of the connector. Its sink consumer group is connect-<name>.", _COMMON)
    .define("connector.class", Type.STRING, NO_DEFAULT, None, Importance.HIGH,
            "The connector: an alias (FileStreamSink, DeltaSink), a Kafka class name "
            "(org.apache.kafka.connect.file.FileStreamSinkConnector), an entry point name or a Python path "
            "pkg.module:Class.", _COMMON)
    .define("tasks.max", Type.INT, 1, Range.at_least(1), Importance.HIGH,
            "Maximum number of tasks for this connector.", _COMMON)
    .define("topics", Type.LIST, "", None, Importance.HIGH,
            "Topics to consume, separated by commas. Exactly one of topics and topics.regex must be set.", _COMMON)
    .define("topics.regex", Type.STRING, "", ValidRegex(), Importance.HIGH,
            "Regular expression of the topics to consume; a topic is consumed when the whole name matches. "
            "Exactly one of topics and topics.regex must be set.", _COMMON)
    .define("key.converter", Type.CLASS, None, None, Importance.LOW,
            "Converter for record keys; not set: the worker's. Its settings are the key.converter.* keys of the "
            "same configuration that sets the class.", _COMMON)
    .define("value.converter", Type.CLASS, None, None, Importance.LOW,
            "Converter for record values; not set: the worker's. Its settings are the value.converter.* keys.",
            _COMMON)
    .define("header.converter", Type.CLASS, None, None, Importance.LOW,
            "Converter for header values; not set: the worker's. Its settings are the header.converter.* keys.",
            _COMMON)
    .define("config.action.reload", Type.STRING, "restart", ValidString.in_("none", "restart"), Importance.LOW,
            "What to do when a config provider reports a changed value: restart the connector, or none.", _COMMON)
    .define("transforms", Type.LIST, "", None, Importance.LOW,
            "Aliases of the single message transforms applied to each record, in order. Each is configured by "
            "transforms.<alias>.type and transforms.<alias>.*, and may be guarded by transforms.<alias>.predicate "
            "(and transforms.<alias>.negate).", _TRANSFORMS)
    .define("predicates", Type.LIST, "", None, Importance.LOW,
            "Aliases of the predicates used by transforms. Each is configured by predicates.<alias>.type and "
            "predicates.<alias>.*.", _TRANSFORMS)
    .define("errors.tolerance", Type.STRING, "none", ValidString.in_("none", "all", case_insensitive=True),
            Importance.MEDIUM,
            "none: a record that fails conversion or a transform fails the task. all: such records are skipped "
            "(and sent to the dead letter queue when one is set).", _ERRORS)
    .define("errors.retry.timeout", Type.LONG, 0, Range.at_least(-1), Importance.MEDIUM,
            "How long, in milliseconds, a retriable failure of a converter or transform is retried. 0: no retry; "
            "-1: forever.", _ERRORS)
    .define("errors.retry.delay.max.ms", Type.LONG, 60000, Range.at_least(1), Importance.MEDIUM,
            "Longest wait between two retries, in milliseconds; past it, waits are random up to this value.",
            _ERRORS)
    .define("errors.log.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
            "Log every failed operation, including tolerated ones, at ERROR.", _ERRORS)
    .define("errors.log.include.messages", Type.BOOLEAN, False, None, Importance.MEDIUM,
            "Add the failed record's topic, partition, offset and timestamp to the log line (never key or value).",
            _ERRORS)
    .define("errors.deadletterqueue.topic.name", Type.STRING, "", None, Importance.MEDIUM,
            "Topic receiving the records that failed conversion, a transform, or were reported by the task. "
            "Empty: no dead letter queue. Must not be one of the consumed topics.", _ERRORS)
    .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT, 3, None, Importance.MEDIUM,
            "Replication factor of the dead letter queue topic when the runtime creates it (with one partition).",
            _ERRORS)
    .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN, False, None, Importance.MEDIUM,
            "Add __connect.errors.* headers describing the failure to dead letter queue records.", _ERRORS)
    .define("task.execution.mode", Type.STRING, None, EXECUTION_MODE_VALIDATOR, Importance.LOW,
            "Where this connector's SinkTask.put runs: executor, driver or realtime (see the worker's key). Not set: "
            "the worker's.", _SPARK)
    .define_all(CONNECTOR_SELF_HEALING_DEF)
)
"""The keys every sink connector has. ``consumer.override.*``, ``producer.override.*``, ``admin.override.*``,
``transforms.<alias>.*``, ``predicates.<alias>.*`` and ``*.converter.*`` keys are checked separately."""


class TransformConfig(NamedTuple):
    """One configured transform, in ``transforms`` order.

    ``props`` are the ``transforms.<alias>.*`` keys with the prefix removed, without ``predicate`` and
    ``negate`` (as Kafka passes them to ``configure``; ``type`` stays).
    """

    alias: str
    type: str
    props: dict[str, Any]
    predicate: str | None
    negate: bool


class PredicateConfig(NamedTuple):
    """One configured predicate: ``props`` are the ``predicates.<alias>.*`` keys, prefix removed."""

    alias: str
    type: str
    props: dict[str, Any]


def consumer_group_id(connector_name: str) -> str:
    """The sink consumer group of a connector, ``connect-<name>``, as Kafka's ``SinkUtils`` names it."""
    return f"connect-{connector_name}"


def _topics(values: Mapping[str, Any]) -> list[str]:
    """``topics`` without empty entries and duplicates, in order."""
    return list(dict.fromkeys(topic for topic in values.get("topics") or [] if topic))


def _alias_issues(props: Mapping[str, Any], values: Mapping[str, Any], list_key: str) -> list[ConfigIssue]:
    aliases = values.get(list_key)
    if aliases is None:
        return []
    issues: list[ConfigIssue] = []
    raw = props.get(list_key)
    if any(not alias for alias in aliases):
        issues.append(ConfigIssue(list_key, raw, f"Invalid value {raw!r} for configuration {list_key}: empty alias"))
    duplicates = sorted({alias for alias in aliases if aliases.count(alias) > 1})
    if duplicates:
        issues.append(
            ConfigIssue(
                list_key, raw, f"Invalid value {raw!r} for configuration {list_key}: duplicate alias {', '.join(duplicates)}"
            )
        )
    for alias in dict.fromkeys(a for a in aliases if a):
        type_key = f"{list_key}.{alias}.type"
        value = props.get(type_key)
        if value is None or (isinstance(value, str) and not value.strip()):
            issues.append(
                ConfigIssue(
                    type_key, value,
                    f'Missing required configuration "{type_key}" which has no default value'
                    f" ({list_key} lists {alias!r}).",
                )
            )
    return issues


def _predicate_reference_issues(props: Mapping[str, Any], values: Mapping[str, Any]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    declared = list(dict.fromkeys(p for p in values.get("predicates") or [] if p))
    for alias in dict.fromkeys(a for a in values.get("transforms") or [] if a):
        predicate_key = f"transforms.{alias}.predicate"
        negate_key = f"transforms.{alias}.negate"
        predicate = props.get(predicate_key)
        predicate = predicate.strip() if isinstance(predicate, str) else predicate
        if predicate and predicate not in declared:
            issues.append(
                ConfigIssue(
                    predicate_key, predicate,
                    f"Invalid value {predicate!r} for configuration {predicate_key}: not a predicate alias listed in"
                    f" predicates ({', '.join(declared) or 'none declared'})",
                )
            )
        if negate_key in props:
            try:
                parse_type(negate_key, props[negate_key], Type.BOOLEAN)
            except ConfigException as e:
                issues.append(ConfigIssue(negate_key, props[negate_key], str(e)))
            if not predicate:
                issues.append(
                    ConfigIssue(
                        negate_key, props[negate_key],
                        f"Configuration {negate_key} is set but {predicate_key}, the predicate it negates, is not",
                    )
                )
    return issues


def _topic_issues(props: Mapping[str, Any], values: Mapping[str, Any]) -> list[ConfigIssue]:
    if "topics" not in values or "topics.regex" not in values:
        return []  # one of them is invalid and already reported
    topics = _topics(values)
    regex = values["topics.regex"]
    if topics and regex:
        return [
            ConfigIssue(
                "topics", props.get("topics"),
                f"topics and topics.regex are mutually exclusive, but both are set (topics={','.join(topics)},"
                f" topics.regex={regex}); set exactly one",
            )
        ]
    if not topics and not regex:
        return [ConfigIssue("topics", props.get("topics"), "Must configure one of topics or topics.regex")]
    dlq = values.get("errors.deadletterqueue.topic.name") or ""
    if not dlq:
        return []
    if dlq in topics:
        return [
            ConfigIssue(
                "errors.deadletterqueue.topic.name", dlq,
                f"The dead letter queue topic {dlq!r} may not be one of the consumed topics (topics={','.join(topics)})",
            )
        ]
    if regex and re.fullmatch(regex, dlq):
        return [
            ConfigIssue(
                "errors.deadletterqueue.topic.name", dlq,
                f"The dead letter queue topic {dlq!r} may not match the consumed topics (topics.regex={regex})",
            )
        ]
    return []


def _offset_reset_issues(props: Mapping[str, Any]) -> list[ConfigIssue]:
    key = CONSUMER_OVERRIDE_PREFIX + "auto.offset.reset"
    value = props.get(key)
    if value is None or (isinstance(value, str) and value.strip().lower() in AUTO_OFFSET_RESETS):
        return []
    return [
        ConfigIssue(
            key, value, f"Invalid value {value!r} for configuration {key}: String must be one of: "
            f"{', '.join(AUTO_OFFSET_RESETS)}"
        )
    ]


def client_override_issues(props: Mapping[str, Any], policy: str) -> list[ConfigIssue]:
    """The ``*.override.*`` keys of a connector that the worker's override policy forbids.

    Called by ``connect_spark.config.validation`` with the worker's
    ``connector.client.config.override.policy``.

    Args:
        props: the connector properties.
        policy: ``All`` (everything allowed), ``None`` (nothing) or ``Principal`` (only
            ``sasl.jaas.config``, ``sasl.mechanism`` and ``security.protocol``).
    """
    if policy == "All":
        return []
    issues: list[ConfigIssue] = []
    for key, value in props.items():
        prefix = next((p for p in _OVERRIDE_PREFIXES if key.startswith(p)), None)
        if prefix is None:
            continue
        if policy == "Principal" and key[len(prefix) :] in _PRINCIPAL_OVERRIDABLE:
            continue
        allowed = "none" if policy == "None" else ", ".join(sorted(_PRINCIPAL_OVERRIDABLE))
        issues.append(
            ConfigIssue(
                key, value,
                f"Configuration {key} is not allowed: the worker's connector.client.config.override.policy is "
                f"{policy} (overridable client settings: {allowed})",
            )
        )
    return issues


class ConnectorConfig(AbstractConfig):
    """A parsed, valid sink connector configuration with typed accessors.

    Build it with ``ConnectorConfig(props)`` (raises one ``ConfigValidationError`` with every problem)
    or ``ConnectorConfig.check(props, providers)``. Pass the worker's ``providers`` to resolve
    references with the providers the worker declares; by default ``env`` and ``file`` are used.
    """

    CONFIG_DEF = CONNECTOR_CONFIG_DEF

    @classmethod
    def _cross_check(cls, props: Mapping[str, Any], values: Mapping[str, Any]) -> list[ConfigIssue]:
        return (
            _topic_issues(props, values)
            + _alias_issues(props, values, "transforms")
            + _alias_issues(props, values, "predicates")
            + _predicate_reference_issues(props, values)
            + _offset_reset_issues(props)
        )

    # --- common ------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._values["name"]

    @property
    def connector_class(self) -> str:
        return self._values["connector.class"]

    @property
    def tasks_max(self) -> int:
        return self._values["tasks.max"]

    @property
    def topics(self) -> list[str]:
        """The consumed topics, without empty entries and duplicates; ``[]`` when ``topics.regex`` is used."""
        return _topics(self._values)

    @property
    def topics_regex(self) -> str | None:
        """The ``topics.regex`` pattern (matched against whole topic names), or ``None``."""
        return self._values["topics.regex"] or None

    @property
    def config_action_reload(self) -> str:
        return self._values["config.action.reload"]

    @property
    def task_execution_mode(self) -> str | None:
        """The connector's override of the worker's ``task.execution.mode``, or ``None``."""
        return self._values["task.execution.mode"]

    def execution_mode(self, worker: "WorkerConfig") -> str:
        """``executor``, ``driver`` or ``realtime``: this connector's override, else the worker's setting."""
        return self.task_execution_mode or worker.task_execution_mode

    # --- errors ------------------------------------------------------------------------------------

    @property
    def errors_tolerance(self) -> str:
        """``none`` or ``all``."""
        return self._values["errors.tolerance"].lower()

    @property
    def errors_retry_timeout(self) -> int:
        """Milliseconds; 0 = no retry, -1 = forever."""
        return self._values["errors.retry.timeout"]

    @property
    def errors_retry_delay_max_ms(self) -> int:
        return self._values["errors.retry.delay.max.ms"]

    @property
    def errors_log_enable(self) -> bool:
        return self._values["errors.log.enable"]

    @property
    def errors_log_include_messages(self) -> bool:
        return self._values["errors.log.include.messages"]

    @property
    def errors_deadletterqueue_topic_name(self) -> str:
        """The dead letter queue topic, ``""`` when there is none."""
        return self._values["errors.deadletterqueue.topic.name"]

    @property
    def dlq_topic(self) -> str | None:
        """The dead letter queue topic, or ``None``."""
        return self._values["errors.deadletterqueue.topic.name"] or None

    @property
    def errors_deadletterqueue_topic_replication_factor(self) -> int:
        return self._values["errors.deadletterqueue.topic.replication.factor"]

    @property
    def errors_deadletterqueue_context_headers_enable(self) -> bool:
        return self._values["errors.deadletterqueue.context.headers.enable"]

    # --- clients -----------------------------------------------------------------------------------

    @property
    def consumer_overrides(self) -> dict[str, Any]:
        """The ``consumer.override.*`` keys, prefix stripped (applied last to the sink consumer config)."""
        return self.originals_with_prefix(CONSUMER_OVERRIDE_PREFIX)

    @property
    def producer_overrides(self) -> dict[str, Any]:
        """The ``producer.override.*`` keys, prefix stripped (the dead letter queue producer)."""
        return self.originals_with_prefix(PRODUCER_OVERRIDE_PREFIX)

    @property
    def admin_overrides(self) -> dict[str, Any]:
        """The ``admin.override.*`` keys, prefix stripped (the admin client creating the DLQ topic)."""
        return self.originals_with_prefix(ADMIN_OVERRIDE_PREFIX)

    @property
    def consumer_group_id(self) -> str:
        """``consumer.override.group.id`` when set, else ``connect-<name>``."""
        override = self.consumer_overrides.get("group.id")
        if isinstance(override, str) and override.strip():
            return override.strip()
        return consumer_group_id(self.name)

    @property
    def auto_offset_reset(self) -> str:
        """``consumer.override.auto.offset.reset`` (lower case) when set, else ``earliest`` as in Kafka Connect."""
        override = self.consumer_overrides.get("auto.offset.reset")
        return override.strip().lower() if isinstance(override, str) else "earliest"

    # --- plugins -----------------------------------------------------------------------------------

    @property
    def transforms(self) -> list[str]:
        return list(self._values["transforms"])

    @property
    def predicates(self) -> list[str]:
        return list(self._values["predicates"])

    def transform_configs(self) -> list[TransformConfig]:
        """Every transform in ``transforms`` order: ``(alias, type, props, predicate alias or None, negate)``."""
        result = []
        for alias in self._values["transforms"]:
            props = self.originals_with_prefix(f"transforms.{alias}.")
            predicate = props.pop("predicate", None)
            negate = props.pop("negate", None)
            result.append(
                TransformConfig(
                    alias,
                    str(props["type"]).strip(),
                    props,
                    predicate.strip() if isinstance(predicate, str) and predicate.strip() else None,
                    bool(parse_type("negate", negate, Type.BOOLEAN)) if negate is not None else False,
                )
            )
        return result

    def predicate_configs(self) -> list[PredicateConfig]:
        """Every predicate in ``predicates`` order: ``(alias, type, props)``."""
        result = []
        for alias in self._values["predicates"]:
            props = self.originals_with_prefix(f"predicates.{alias}.")
            result.append(PredicateConfig(alias, str(props["type"]).strip(), props))
        return result

    def converter_config(self, which: str, worker: "WorkerConfig") -> tuple[str, dict[str, Any]]:
        """The class and settings of the key, value or header converter this connector uses.

        As Kafka's ``Plugins.newConverter``: when the connector sets ``<which>.converter``, its class and
        its own ``<which>.converter.*`` keys are used; otherwise the worker's class and the worker's keys.
        The two sets of keys are not merged. ``converter.type`` (``key``, ``value`` or ``header``) is added,
        as Kafka does.

        Args:
            which: ``key``, ``value`` or ``header`` (``key.converter`` etc. are accepted too).
            worker: the worker configuration supplying the defaults.

        Returns:
            ``(class name, settings with the prefix removed)``.
        """
        short = which[: -len(".converter")] if which.endswith(".converter") else which
        if short not in _CONVERTER_KEYS:
            raise ValueError(f"which must be key, value or header, not {which!r}")
        key = _CONVERTER_KEYS[short]
        source: AbstractConfig = self if self._values.get(key) else worker
        class_name = source.get(key)
        props = source.originals_with_prefix(key + ".")
        props["converter.type"] = short
        return class_name, props
