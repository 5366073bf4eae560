"""The converter contract: bytes from Kafka to Connect data, and back.

The runtime configures one key converter, one value converter and one header converter per connector
(a connector-level ``key.converter`` overrides the worker's), with the keys under the converter's prefix
(``value.converter.schemas.enable`` → ``schemas.enable``).
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

if TYPE_CHECKING:
    from connect_spark.api.data import Schema
    from connect_spark.api.records import Headers
    from connect_spark.config.definition import ConfigDef

__all__ = ["SchemaAndValue", "Converter", "HeaderConverter"]


class SchemaAndValue(NamedTuple):
    """A converted value and its schema (``None`` when the converter produces schemaless data)."""

    schema: "Schema | None"
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]


class Converter(abc.ABC):
    """Turns the raw bytes of a record key or value into Connect data, and back.

    ``to_connect_data`` is called by the runtime for every consumed record (stage ``KEY_CONVERTER``
    or ``VALUE_CONVERTER``); a :class:`~connect_spark.api.errors.DataException` marks the record
    failed and ``errors.tolerance`` decides what happens. ``from_connect_data`` is used when a record
    a task built has to be written as bytes again (the dead letter queue).
    """

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Called once before first use with the converter's own keys (prefix stripped)."""

    @abc.abstractmethod
    def to_connect_data(self, topic: str, value: bytes | None, headers: "Headers | None" = None) -> SchemaAndValue:
        """Convert raw bytes (``None`` for a null key or a tombstone) into a schema and a value."""

    @abc.abstractmethod
    def from_connect_data(
        self, topic: str, schema: "Schema | None", value: Any, headers: "Headers | None" = None
    ) -> bytes | None:
        """Convert Connect data back into bytes."""

    def config(self) -> "ConfigDef":
        """The converter's configuration keys."""
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def close(self) -> None:
        """Called when the runtime no longer needs the converter."""


class HeaderConverter(abc.ABC):
    """Turns raw header bytes into Connect data, and back (stage ``HEADER_CONVERTER``)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Called once before first use with the header converter's own keys."""

    @abc.abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Convert one header value."""

    @abc.abstractmethod
    def from_connect_header(self, topic: str, header_key: str, schema: "Schema | None", value: Any) -> bytes | None:
        """Convert one header value back into bytes."""

    def config(self) -> "ConfigDef":
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def close(self) -> None:
        """Called when the runtime no longer needs the converter."""
