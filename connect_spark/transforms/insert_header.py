"""InsertHeader: add a header with a literal value (Kafka's ``InsertHeader``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.converters import SchemaAndValue
from connect_spark.api.data import Values
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import BaseTransformation

__all__ = ["InsertHeader"]

HEADER_CONFIG = "header"
VALUE_LITERAL_CONFIG = "value.literal"


class InsertHeader(BaseTransformation):
    """Add the header ``header`` to every record, its value ``value.literal`` parsed by :meth:`Values.parse_string`.

    ``value.literal=42`` adds an INT8 header, ``true`` a BOOLEAN, ``hello`` a STRING.

    Attributes:
        header: the header key.
        literal: the parsed value, a ``SchemaAndValue``.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.InsertHeader"

    def __init__(self) -> None:
        self.header = ""
        self.literal = SchemaAndValue(None, None)

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define(HEADER_CONFIG, ConfigType.STRING, importance=Importance.HIGH,
                        doc="The name of the header.")
                .define(VALUE_LITERAL_CONFIG, ConfigType.STRING, importance=Importance.HIGH,
                        doc="The literal value that is to be set as the header value on all records."))

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.header = values[HEADER_CONFIG]
        self.literal = Values.parse_string(values[VALUE_LITERAL_CONFIG])

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        headers = record.headers.copy().add(self.header, self.literal.value, self.literal.schema)
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp, headers)
