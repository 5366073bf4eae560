"""SimpleHeaderConverter: header strings with inferred types (Kafka's default header converter)."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from connect_spark.api import HeaderConverter, SchemaAndValue
from connect_spark.api.data import Schema, Values
from connect_spark.config.definition import ConfigDef

__all__ = ["SimpleHeaderConverter"]

log = logging.getLogger(__name__)


class SimpleHeaderConverter(HeaderConverter):
    """Reads a header as UTF-8 text and infers its type with :meth:`Values.parse_string`.

    ``"true"`` becomes a BOOLEAN, ``"42"`` an INT8, ``"[1,2]"`` an ARRAY and so on (see
    :class:`~connect_spark.api.data.Values`). A null header is ``(None, None)``. When the bytes
    cannot be read the header is kept as ``(BYTES_SCHEMA, raw bytes)`` and a warning is logged.
    Writing renders the value with :meth:`Values.convert_to_string` in UTF-8.
    """

    kafka_class_name = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        try:
            return Values.parse_string(bytes(value).decode("utf-8"))
        except Exception:
            log.warning("Failed to deserialize value for header '%s' on topic '%s', so using byte array",
                        header_key, topic, exc_info=True)
            return SchemaAndValue(Schema.BYTES_SCHEMA, bytes(value))

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        text = Values.convert_to_string(schema, value)
        return None if text is None else text.encode("utf-8")
