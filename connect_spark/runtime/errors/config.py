"""The ``errors.*`` policy of one connector, as the error handler reads it.

The keys are declared once, in :data:`connect_spark.config.connector.CONNECTOR_CONFIG_DEF` (that is
where their defaults, validators and documentation live, and where the cross-key check that the dead
letter queue topic is not a consumed topic is made). This module only picks the error-handling keys
out of a connector configuration and gives them typed names; it is called by whoever builds a task's
:class:`~connect_spark.runtime.errors.ErrorHandler`, on the driver or on an executor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from connect_spark.runtime.errors.stage import ToleranceType

__all__ = ["ErrorHandlingConfig", "ERROR_HANDLING_KEYS"]

#: The connector keys this package reads, with Kafka Connect's names.
ERROR_HANDLING_KEYS = (
    "errors.tolerance",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "errors.log.enable",
    "errors.log.include.messages",
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.topic.replication.factor",
    "errors.deadletterqueue.context.headers.enable",
)

_config_def_cache: Any = None


def _config_def() -> Any:
    """The error-handling subset of the connector declaration (built once, on first use)."""
    global _config_def_cache
    if _config_def_cache is None:
        from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
        from connect_spark.config.definition import ConfigDef

        subset = ConfigDef()
        for name in ERROR_HANDLING_KEYS:
            key = CONNECTOR_CONFIG_DEF.keys[name]
            subset.define(key.name, key.type, key.default, key.validator, key.importance, key.doc, key.group)
        _config_def_cache = subset
    return _config_def_cache


@dataclass(frozen=True)
class ErrorHandlingConfig:
    """How a task handles failed records. Defaults are Kafka Connect's.

    Attributes:
        tolerance: ``errors.tolerance``: fail the task on the first failed record, or skip failed records.
        retry_timeout_ms: ``errors.retry.timeout``: how long a ``RetriableException`` is retried;
            ``0`` never retries, ``-1`` retries forever.
        retry_delay_max_ms: ``errors.retry.delay.max.ms``: the longest back-off between two attempts.
        log_enable: ``errors.log.enable``: log every failure at ERROR.
        log_include_messages: ``errors.log.include.messages``: add the record's coordinates and
            timestamp to that line (never its key or value).
        dlq_topic_name: ``errors.deadletterqueue.topic.name``: empty for no dead letter queue.
        dlq_replication_factor: ``errors.deadletterqueue.topic.replication.factor``: used only when
            the topic is created by the reporter.
        dlq_context_headers_enable: ``errors.deadletterqueue.context.headers.enable``: add the
            ``__connect.errors.*`` headers to dead letter queue records.
    """

    tolerance: ToleranceType = ToleranceType.NONE
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic_name: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers_enable: bool = False

    @classmethod
    def from_connector_config(cls, props: Mapping[str, Any]) -> "ErrorHandlingConfig":
        """Read the ``errors.*`` keys of a connector configuration; other keys are ignored.

        Args:
            props: the connector's properties (strings, as read from a ``.properties`` file, or values
                already typed). Config-provider references must already be resolved.

        Raises:
            ConfigValidationError: listing every invalid ``errors.*`` value.
        """
        values = _config_def().parse(props)
        return cls(
            tolerance=ToleranceType(values["errors.tolerance"].lower()),
            retry_timeout_ms=values["errors.retry.timeout"],
            retry_delay_max_ms=values["errors.retry.delay.max.ms"],
            log_enable=values["errors.log.enable"],
            log_include_messages=values["errors.log.include.messages"],
            dlq_topic_name=(values["errors.deadletterqueue.topic.name"] or "").strip(),
            dlq_replication_factor=values["errors.deadletterqueue.topic.replication.factor"],
            dlq_context_headers_enable=values["errors.deadletterqueue.context.headers.enable"],
        )

    @property
    def dlq_enabled(self) -> bool:
        """True when a dead letter queue topic is configured."""
        return bool(self.dlq_topic_name)

    @property
    def errant_record_reporter_enabled(self) -> bool:
        """Whether tasks get an ``ErrantRecordReporter``: when a DLQ is set or errors are logged, as in Kafka."""
        return self.dlq_enabled or self.log_enable
