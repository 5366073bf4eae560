"""StringConverter: bytes ⇄ strings in a configurable encoding (Kafka's ``StringConverter``)."""

from __future__ import annotations

import codecs
import logging
from typing import Any, Mapping

from connect_spark.api import Converter, DataException, HeaderConverter, SchemaAndValue
from connect_spark.api.data import Schema
from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import ConfigDef, Importance, Type
from connect_spark.converters.base import converter_config_def, converter_type, java_to_string

__all__ = ["StringConverter"]

log = logging.getLogger(__name__)

ENCODING_CONFIG = "converter.encoding"
ENCODING_DEFAULT = "UTF-8"


def _valid_encoding(name: str, value: Any) -> None:
    try:
        codecs.lookup(value)
    except LookupError:
        raise ConfigException("Unknown character encoding; use a name such as UTF-8, UTF-16 or ISO-8859-1",
                              name, value) from None


class StringConverter(Converter, HeaderConverter):
    """Reads every key, value or header as a string; writes any value as its string form.

    A null (``None``) becomes ``SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)``. Bytes that are not
    valid in the encoding raise :class:`DataException` (Kafka substitutes U+FFFD instead).

    Config:
        ``converter.encoding``: the character encoding, ``UTF-8`` by default (Java charset names
        work: ``UTF-8``, ``UTF-16``, ``ISO-8859-1``, ``US-ASCII``).
    """

    kafka_class_name = "org.apache.kafka.connect.storage.StringConverter"

    def __init__(self) -> None:
        self.encoding = "utf-8"

    def config(self) -> ConfigDef:
        return converter_config_def().define(
            ENCODING_CONFIG, Type.STRING, ENCODING_DEFAULT, validator=_valid_encoding, importance=Importance.HIGH,
            doc="The name of the character encoding used to turn strings into bytes and back (e.g. UTF-8).",
        )

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Parse ``converter.encoding``; ``is_key`` ``None`` means use as a header converter."""
        values = self.config().parse(converter_type(configs, is_key))
        self.encoding = codecs.lookup(values[ENCODING_CONFIG]).name

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, bytes(value).decode(self.encoding))
        except UnicodeDecodeError as e:
            raise DataException(f"Failed to deserialize string: {e}") from e

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        if value is None:
            return None
        try:
            return java_to_string(value).encode(self.encoding)
        except UnicodeEncodeError as e:
            raise DataException(f"Failed to serialize to a string: {e}") from e

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)
