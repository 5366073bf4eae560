"""RegexRouter: rename the topic with a regular expression (Kafka's ``RegexRouter``)."""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import BaseTransformation, check_java_replacement, java_regex, java_replace_first

__all__ = ["RegexRouter", "JavaRegexValidator"]

log = logging.getLogger(__name__)

REGEX_CONFIG = "regex"
REPLACEMENT_CONFIG = "replacement"


class JavaRegexValidator:
    """A string that compiles as a (Java-syntax) regular expression."""

    def __call__(self, name: str, value: Any) -> None:
        try:
            java_regex(value)
        except re.error as e:
            raise ConfigException(f"Invalid regular expression: {e}", name, value) from None

    def __str__(self) -> str:
        return "valid regex"


class RegexRouter(BaseTransformation):
    """When the whole topic matches ``regex``, rename it to ``replacement`` (``$1`` refers to group 1).

    The regex must match the entire topic, as Java's ``Matcher.matches()``; ``replacement`` uses
    Java's syntax (``$n``, ``${name}``, ``\\$`` for a dollar). The record keeps its original
    topic-partition for offset tracking (``original_topic``).

    Attributes:
        regex: the compiled pattern.
        replacement: the Java replacement string.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.RegexRouter"

    def __init__(self) -> None:
        self.regex = re.compile("")
        self.replacement = ""

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define(REGEX_CONFIG, ConfigType.STRING, validator=JavaRegexValidator(), importance=Importance.HIGH,
                        doc="Regular expression to use for matching.")
                .define(REPLACEMENT_CONFIG, ConfigType.STRING, importance=Importance.HIGH,
                        doc="Replacement string."))

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.regex = java_regex(values[REGEX_CONFIG])
        self.replacement = values[REPLACEMENT_CONFIG]
        try:
            check_java_replacement(self.regex, self.replacement)
        except ValueError as e:
            raise ConfigException(f"{e}; the regex has {self.regex.groups} group(s)", REPLACEMENT_CONFIG,
                                  self.replacement) from None

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        topic = record.topic
        if self.regex.fullmatch(topic) is None:
            log.debug("Not rerouting topic %s as it does not match the configured regex", topic)
            return record
        new_topic = java_replace_first(self.regex, topic, self.replacement)
        log.debug("Rerouting from topic %s to new topic %s", topic, new_topic)
        return record.new_record(new_topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp)
