"""ReplaceField: keep, drop and rename fields (Kafka's ``ReplaceField$Key`` / ``$Value``).

Kafka 4.0 removed the deprecated ``blacklist``/``whitelist`` aliases of ``exclude``/``include``;
they are not accepted here either.
"""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.api.data.java_map import hash_map_with_capacity, java_items
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    require_map,
    require_struct,
)

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue", "parse_rename_mappings"]

EXCLUDE_CONFIG = "exclude"
INCLUDE_CONFIG = "include"
RENAMES_CONFIG = "renames"
PURPOSE = "field replacement"


def parse_rename_mappings(mappings: list[str]) -> dict[str, str]:
    """``["old:new", ...]`` → ``{"old": "new"}``.

    Raises:
        ConfigException: for an item that is not exactly ``old:new``.
    """
    renames = {}
    for mapping in mappings:
        parts = mapping.split(":")
        while len(parts) > 1 and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) != 2:
            raise ConfigException(f"Invalid rename mapping: {mapping}; use old:new", RENAMES_CONFIG, mappings)
        renames[parts[0]] = parts[1]
    return renames


class _RenamesValidator:
    def __call__(self, name: str, value: Any) -> None:
        parse_rename_mappings(value)

    def __str__(self) -> str:
        return "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(
        ConfigDef()
        .define(EXCLUDE_CONFIG, ConfigType.LIST, "", importance=Importance.MEDIUM,
                doc="Fields to exclude. This takes precedence over the fields to include.")
        .define(INCLUDE_CONFIG, ConfigType.LIST, "", importance=Importance.MEDIUM,
                doc="Fields to include. If specified, only these fields will be used.")
        .define(RENAMES_CONFIG, ConfigType.LIST, "", validator=_RenamesValidator(), importance=Importance.MEDIUM,
                doc="Field rename mappings.")
    )


class ReplaceField(KeyOrValueTransformation):
    """Drop the ``exclude`` fields, keep only the ``include`` fields (when given), rename by ``renames``.

    A null key/value passes through.

    Attributes:
        exclude, include: frozensets of field names.
        renames: ``{old name: new name}``.
        replace_null_with_default: whether a null struct field takes its default.
    """

    def __init__(self) -> None:
        self.exclude: frozenset[str] = frozenset()
        self.include: frozenset[str] = frozenset()
        self.renames: dict[str, str] = {}
        self.reverse_renames: dict[str, str] = {}
        self.replace_null_with_default = True
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.exclude = frozenset(values[EXCLUDE_CONFIG])
        self.include = frozenset(values[INCLUDE_CONFIG])
        self.renames = parse_rename_mappings(values[RENAMES_CONFIG])
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache = LruCache(16)

    def keeps(self, name: str) -> bool:
        """True when the field survives ``exclude`` and ``include``."""
        return name not in self.exclude and (not self.include or name in self.include)

    def renamed(self, name: str) -> str:
        return self.renames.get(name, name)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            original = require_map(value, PURPOSE)
            # Kafka: new HashMap<>(value.size()), filled while iterating the source in its (Java) order
            updated_map = hash_map_with_capacity(len(original))
            for k, v in java_items(original):
                if self.keeps(k):
                    updated_map[self.renamed(k)] = v
            return self.new_record(record, None, updated_map)
        struct = require_struct(value, PURPOSE)
        updated_schema = self._schema_cache.get_or_compute(struct.schema, self._updated_schema)
        updated = Struct(updated_schema)
        for field in updated_schema.fields:
            source = self.reverse_renames.get(field.name, field.name)
            updated.put(field.name, field_value(struct, source, self.replace_null_with_default))
        return self.new_record(record, updated_schema, updated)

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._updated_schema)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if self.keeps(field.name):
                builder.field(self.renamed(field.name), field.schema)
        return builder.build()


class ReplaceFieldKey(OperatesOnKey, ReplaceField):
    """ReplaceField on the record key (``org.apache.kafka.connect.transforms.ReplaceField$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.ReplaceField$Key"


class ReplaceFieldValue(OperatesOnValue, ReplaceField):
    """ReplaceField on the record value (``org.apache.kafka.connect.transforms.ReplaceField$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.ReplaceField$Value"
