"""Converters for single big-endian numbers and booleans (Kafka's ``NumberConverter`` family).

Each reads exactly the bytes Kafka's matching serializer writes (``IntegerSerializer``: 4 bytes,
big-endian two's complement; ``DoubleSerializer``: 8 bytes IEEE 754...). A null is
``SchemaAndValue(OPTIONAL_<TYPE>_SCHEMA, None)``; a payload of the wrong length is a
:class:`DataException`.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Mapping

from connect_spark.api import Converter, DataException, HeaderConverter, SchemaAndValue
from connect_spark.api.data import Schema, Type
from connect_spark.api.data.java_semantics import INT_BOUNDS
from connect_spark.config.definition import ConfigDef
from connect_spark.converters.base import converter_config_def, converter_type

__all__ = [
    "BooleanConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "LongConverter",
    "ShortConverter",
]


class _SingleValueConverter(Converter, HeaderConverter):
    """One fixed-size value per key, value or header."""

    kafka_class_name = ""
    _schema: Schema = Schema.OPTIONAL_BYTES_SCHEMA
    _type_name = ""
    _deserializer = ""
    _format = ""

    def config(self) -> ConfigDef:
        return converter_config_def()

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        self.config().parse(converter_type(configs, is_key))

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(self._schema, None)
        size = struct.calcsize(self._format)
        if len(value) != size:
            raise DataException(
                f"Failed to deserialize {self._type_name}: "
                f"Size of data received by {self._deserializer} is not {size}"
            )
        return SchemaAndValue(self._schema, self._decode(bytes(value)))

    def _decode(self, data: bytes) -> Any:
        return struct.unpack(self._format, data)[0]

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        if value is None:
            return None
        if not self._accepts(value):
            raise DataException(f"Failed to serialize to {self._type_name} (was class {type(value).__name__})")
        return struct.pack(self._format, value)

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)


class _IntegralConverter(_SingleValueConverter):
    _bits = 64

    def _accepts(self, value: Any) -> bool:
        low, high = INT_BOUNDS[self._bits]
        return super()._accepts(value) and low <= value <= high


class ShortConverter(_IntegralConverter):
    """INT16 as 2 bytes (``ShortSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.ShortConverter"
    _schema = Schema.OPTIONAL_INT16_SCHEMA
    _type_name = "short"
    _deserializer = "ShortDeserializer"
    _format = ">h"
    _bits = 16


class IntegerConverter(_IntegralConverter):
    """INT32 as 4 bytes (``IntegerSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.IntegerConverter"
    _schema = Schema.OPTIONAL_INT32_SCHEMA
    _type_name = "integer"
    _deserializer = "IntegerDeserializer"
    _format = ">i"
    _bits = 32


class LongConverter(_IntegralConverter):
    """INT64 as 8 bytes (``LongSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.LongConverter"
    _schema = Schema.OPTIONAL_INT64_SCHEMA
    _type_name = "long"
    _deserializer = "LongDeserializer"
    _format = ">q"
    _bits = 64


class FloatConverter(_SingleValueConverter):
    """FLOAT32 as 4 bytes (``FloatSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.FloatConverter"
    _schema = Schema.OPTIONAL_FLOAT32_SCHEMA
    _type_name = "float"
    _deserializer = "FloatDeserializer"
    _format = ">f"

    def _accepts(self, value: Any) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        try:
            struct.pack(">f", value)
        except OverflowError:
            return math.isinf(value)
        return True


class DoubleConverter(_SingleValueConverter):
    """FLOAT64 as 8 bytes (``DoubleSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.DoubleConverter"
    _schema = Schema.OPTIONAL_FLOAT64_SCHEMA
    _type_name = "double"
    _deserializer = "DoubleDeserializer"
    _format = ">d"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)


class BooleanConverter(_SingleValueConverter):
    """BOOLEAN as one byte, 1 or 0 (``BooleanSerializer``)."""

    kafka_class_name = "org.apache.kafka.connect.converters.BooleanConverter"
    _schema = Schema.OPTIONAL_BOOLEAN_SCHEMA
    _type_name = "boolean"
    _deserializer = "BooleanDeserializer"
    _format = ">B"

    def _decode(self, data: bytes) -> Any:
        if data == b"\x01":
            return True
        if data == b"\x00":
            return False
        raise DataException(
            "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: "
            f"{struct.unpack('>b', data)[0]}"
        )

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataException(f"Invalid schema type for BooleanConverter: {schema.type}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataException(f"BooleanConverter is not compatible with objects of type class {type(value).__name__}")
        return b"\x01" if value else b"\x00"
