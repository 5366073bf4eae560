"""ByteArrayConverter: pass raw bytes through (Kafka's ``ByteArrayConverter``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api import Converter, DataException, HeaderConverter, SchemaAndValue
from connect_spark.api.data import Schema, Type
from connect_spark.config.definition import ConfigDef
from connect_spark.converters.base import converter_config_def, converter_type

__all__ = ["ByteArrayConverter"]


class ByteArrayConverter(Converter, HeaderConverter):
    """Keys, values or headers as raw bytes with ``OPTIONAL_BYTES_SCHEMA`` (also for a null)."""

    kafka_class_name = "org.apache.kafka.connect.converters.ByteArrayConverter"

    def config(self) -> ConfigDef:
        return converter_config_def()

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        self.config().parse(converter_type(configs, is_key))

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None if value is None else bytes(value))

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type}")
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise DataException(f"ByteArrayConverter is not compatible with objects of type class {type(value).__name__}")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)
