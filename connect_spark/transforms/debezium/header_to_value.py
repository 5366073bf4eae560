"""HeaderToValue: copy or move headers into fields of the value (``io.debezium.transforms.HeaderToValue``).

``headers`` and ``fields`` pair up by position: each header of the record whose name is listed (every
occurrence, in header order) becomes the paired field, with the header's schema and value; a dotted field
name (``meta.op``) goes into a nested struct (see :mod:`connect_spark.transforms.debezium.nested_fields`).
``operation=move`` also removes the listed headers. A tombstone, or a record carrying none of the
headers, passes unchanged; any other value must be a struct (schemaless values are refused, as Debezium
refuses them). Any struct is accepted, not only change events.

The new value schema is cached per value schema (64 entries), as Debezium caches it: records of one value
schema must carry the same headers.
"""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance, ValidString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.debezium.nested_fields import NewEntry, make_new_schema, make_updated_value
from connect_spark.transforms.debezium.settings import NoEmptyOrSpacedItems, java_list, raw_string
from connect_spark.transforms.util import BaseTransformation, require_struct

__all__ = ["HeaderToValue"]

HEADERS_CONFIG = "headers"
FIELDS_CONFIG = "fields"
OPERATION_CONFIG = "operation"
MOVE = "move"
COPY = "copy"
CACHE_SIZE = 64


def _config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(HEADERS_CONFIG, ConfigType.LIST, validator=NoEmptyOrSpacedItems(), importance=Importance.HIGH,
                doc="Header names in the record whose values are to be copied or moved to record value.")
        .define(FIELDS_CONFIG, ConfigType.LIST, validator=NoEmptyOrSpacedItems(), importance=Importance.HIGH,
                doc="Field names, in the same order as the header names listed in the headers configuration "
                    "property. Supports Struct nesting using dot notation.")
        .define(OPERATION_CONFIG, ConfigType.STRING, validator=ValidString.in_(MOVE, COPY, case_insensitive=True),
                importance=Importance.HIGH,
                doc="Either <code>move</code> if the fields are to be moved to the value (removed from the "
                    "headers), or <code>copy</code> if the fields are to be copied to the value (retained in the "
                    "headers).")
    )


def _names(configs: Mapping[str, Any], key: str) -> list[str]:
    """The list as Debezium reads it, checked as Debezium checks it."""
    names = java_list(raw_string(configs, key))
    if "" in names:
        raise ConfigException("Empty string element(s) not permitted", key, raw_string(configs, key))
    if any(" " in name for name in names):
        raise ConfigException("Element(s) containing space not permitted", key, raw_string(configs, key))
    return names


class HeaderToValue(BaseTransformation):
    """Add the listed headers to the value as fields (see the module docstring).

    Attributes:
        headers, fields: the paired names.
        move: whether the headers are removed.
    """

    kafka_class_name = "io.debezium.transforms.HeaderToValue"

    def __init__(self) -> None:
        self.headers: list[str] = []
        self.fields: list[str] = []
        self.move = False
        self._schema_cache = LruCache(CACHE_SIZE)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.fields = _names(configs, FIELDS_CONFIG)
        self.headers = _names(configs, HEADERS_CONFIG)
        if len(self.fields) != len(self.headers):
            raise ConfigException(f"'{FIELDS_CONFIG}' config must have the same number of elements as "
                                  f"'{HEADERS_CONFIG}' config.", FIELDS_CONFIG, values[FIELDS_CONFIG])
        self.move = values[OPERATION_CONFIG].lower() == MOVE
        self._schema_cache = LruCache(CACHE_SIZE)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Called by the runtime for every record."""
        if record.value is None:
            return record
        value = require_struct(record.value, "Header field insertion")
        entries = []
        for header in record.headers:
            if header.key in self.headers:
                entries.append(NewEntry(self.fields[self.headers.index(header.key)], header.schema, header.value))
        if not entries:
            return record
        schema = self._schema_cache.get(value.schema)
        if schema is None:
            schema = make_new_schema(value.schema, entries)
            self._schema_cache.put(value.schema, schema)
        updated = make_updated_value(value, entries, schema)
        headers = record.headers.copy()
        if self.move:
            for name in self.headers:
                headers.remove(name)
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key, schema, updated,
                                 record.timestamp, headers)
