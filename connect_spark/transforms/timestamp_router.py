"""TimestampRouter: route to a topic named after the record's timestamp (Kafka's ``TimestampRouter``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.simple_date_format import SimpleDateFormat
from connect_spark.transforms.util import BaseTransformation

__all__ = ["TimestampRouter"]

TOPIC_FORMAT_CONFIG = "topic.format"
TIMESTAMP_FORMAT_CONFIG = "timestamp.format"


class TimestampRouter(BaseTransformation):
    """Set the topic to ``topic.format`` with ``${topic}`` and ``${timestamp}`` filled in.

    ``${timestamp}`` is the record timestamp formatted with ``timestamp.format`` (a Java
    ``SimpleDateFormat`` pattern, in UTC). A record without a timestamp is an error.

    Attributes:
        topic_format: the topic template.
        timestamp_format: the timestamp pattern.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.TimestampRouter"

    def __init__(self) -> None:
        self.topic_format = "${topic}-${timestamp}"
        self.timestamp_format = "yyyyMMdd"
        self._formatter = SimpleDateFormat(self.timestamp_format)

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define(TOPIC_FORMAT_CONFIG, ConfigType.STRING, "${topic}-${timestamp}", importance=Importance.HIGH,
                        doc="Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as "
                            "placeholders for the topic and timestamp, respectively.")
                .define(TIMESTAMP_FORMAT_CONFIG, ConfigType.STRING, "yyyyMMdd", importance=Importance.HIGH,
                        doc="Format string for the timestamp that is compatible with "
                            "<code>java.text.SimpleDateFormat</code>."))

    @property
    def formatter(self) -> SimpleDateFormat:
        """The compiled ``timestamp.format`` (read by the column compiler)."""
        return self._formatter

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.topic_format = values[TOPIC_FORMAT_CONFIG]
        self.timestamp_format = values[TIMESTAMP_FORMAT_CONFIG]
        try:
            self._formatter = SimpleDateFormat(self.timestamp_format)
        except ValueError as e:
            raise ConfigException(f"Invalid SimpleDateFormat pattern: {e}", TIMESTAMP_FORMAT_CONFIG,
                                  self.timestamp_format) from e

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        if record.timestamp is None:
            raise DataException(f"Timestamp missing on record: {record.coordinates()}")
        try:
            formatted = self._formatter.format(record.timestamp)
        except ValueError as e:
            raise DataException(str(e)) from e
        topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", formatted)
        return record.new_record(topic, record.kafka_partition, record.key_schema, record.key, record.value_schema,
                                 record.value, record.timestamp)
