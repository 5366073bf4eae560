"""The predicates shipped with Kafka: TopicNameMatches, HasHeaderKey, RecordIsTombstone.

A transformation guarded by a predicate runs when ``negate ^ predicate.test(record)``
(``transforms.<alias>.predicate`` and ``transforms.<alias>.negate``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from connect_spark.api.records import SinkRecord
from connect_spark.api.transforms import Predicate
from connect_spark.config.definition import CompositeValidator, ConfigDef, Importance, NonEmptyString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.regex_router import JavaRegexValidator
from connect_spark.transforms.util import java_regex

__all__ = ["TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"]

PATTERN_CONFIG = "pattern"
NAME_CONFIG = "name"


class TopicNameMatches(Predicate):
    """True when the record's (current) topic matches ``pattern`` entirely (Java regex syntax).

    Attributes:
        pattern: the compiled pattern.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"

    def __init__(self) -> None:
        self.pattern = re.compile("")

    def config(self) -> ConfigDef:
        return ConfigDef().define(
            PATTERN_CONFIG, ConfigType.STRING, validator=CompositeValidator.of(NonEmptyString(), JavaRegexValidator()),
            importance=Importance.MEDIUM,
            doc="A Java regular expression for matching against the name of a record's topic.")

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.pattern = java_regex(self.config().parse(configs)[PATTERN_CONFIG])

    def test(self, record: SinkRecord) -> bool:
        return record.topic is not None and self.pattern.fullmatch(record.topic) is not None

    def __repr__(self) -> str:
        return f"TopicNameMatches{{pattern={self.pattern.pattern}}}"


class HasHeaderKey(Predicate):
    """True when the record has at least one header with key ``name``.

    Attributes:
        name: the header key.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"

    def __init__(self) -> None:
        self.name = ""

    def config(self) -> ConfigDef:
        return ConfigDef().define(NAME_CONFIG, ConfigType.STRING, validator=NonEmptyString(),
                                  importance=Importance.MEDIUM, doc="The header name.")

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.name = self.config().parse(configs)[NAME_CONFIG]

    def test(self, record: SinkRecord) -> bool:
        return any(header.key == self.name for header in record.headers)

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self.name}'}}"


class RecordIsTombstone(Predicate):
    """True when the record's value is null (its value schema may be set)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def test(self, record: SinkRecord) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
