"""Flatten: turn nested structs/maps into one level of delimiter-joined names (Kafka's ``Flatten``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import ConnectSchema, Schema, SchemaBuilder, Struct, Type
from connect_spark.api.errors import DataException
from connect_spark.api.data.java_map import JavaLinkedHashMap, java_items
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import (
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    copy_schema_basics,
    require_map,
    require_struct_or_null,
)

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

DELIMITER_CONFIG = "delimiter"
DELIMITER_DEFAULT = "."
PURPOSE = "flattening"

_COPIED_TYPES = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN,
                           Type.STRING, Type.BYTES, Type.ARRAY, Type.MAP})
_SCHEMALESS_COPIED = _COPIED_TYPES - {Type.MAP}


def _config_def() -> ConfigDef:
    return ConfigDef().define(
        DELIMITER_CONFIG, ConfigType.STRING, DELIMITER_DEFAULT, importance=Importance.MEDIUM,
        doc="Delimiter to insert between field names from the input record when generating field names for the "
            "output record",
    )


class Flatten(KeyOrValueTransformation):
    """Flatten nested structs (schema present) or maps (schemaless) into one level.

    ``{"a": {"b": 1}}`` becomes ``{"a.b": 1}`` with the default ``delimiter``. Arrays (and, with a
    schema, maps) are copied as they are. A field under an optional parent becomes optional, and
    defaults of parents are carried down. A null key/value passes through.

    Attributes:
        delimiter: the separator between names.
    """

    def __init__(self) -> None:
        self.delimiter = DELIMITER_DEFAULT
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.delimiter = self.parse_config(configs)[DELIMITER_CONFIG]
        self._schema_cache = LruCache(16)

    def field_name(self, prefix: str, name: str) -> str:
        """The flattened name of field ``name`` under ``prefix``; called by the column compiler."""
        return self._name(prefix, name)

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self.delimiter + name

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            flattened: dict[str, Any] = JavaLinkedHashMap()  # Kafka: a LinkedHashMap
            self._flatten_map(require_map(value, PURPOSE), "", flattened)
            return self.new_record(record, None, flattened)
        struct = require_struct_or_null(value, PURPOSE)
        updated_schema = self._schema_cache.get_or_compute(schema, self._build_schema)
        updated = Struct(updated_schema)
        self._flatten_struct(struct, "", updated)
        return self.new_record(record, updated_schema, updated)

    def _flatten_map(self, original: Mapping[Any, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, value in java_items(original):  # the source map in Java's iteration order
            name = self._name(prefix, key if isinstance(key, str) else str(key))
            if value is None:
                out[name] = None
                continue
            inferred = ConnectSchema.schema_type(value)
            if inferred is None:
                raise DataException(f"Flatten transformation was passed a value of type class {type(value).__name__} "
                                    "which is not supported by Connect's data API")
            if inferred in _SCHEMALESS_COPIED:
                out[name] = value
            elif inferred is Type.MAP:
                self._flatten_map(require_map(value, PURPOSE), name, out)
            else:
                raise DataException(f"Flatten transformation does not support class {type(value).__name__} for record "
                                    f"without schemas (for field {name}).")

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._build_schema)

    def _build_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        self._add_fields(schema, "", builder, schema.is_optional, schema.default_value)
        return builder.build()

    def _add_fields(self, schema: Schema, prefix: str, builder: SchemaBuilder, optional: bool,
                    default_from_parent: Struct | None) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.is_optional
            field_default = field.schema.default_value
            if field_default is None and default_from_parent is not None:
                field_default = default_from_parent.get(field)
            if field.schema.type in _COPIED_TYPES:
                field_builder = copy_schema_basics(field.schema)
                if field_optional:
                    field_builder.optional()
                if field_default is not None:
                    field_builder.default_value(field_default)
                builder.field(name, field_builder.build())
            elif field.schema.type is Type.STRUCT:
                self._add_fields(field.schema, name, builder, field_optional, field_default)
            else:  # pragma: no cover - every type is handled above
                raise DataException(f"Flatten transformation does not support {field.schema.type} for record with "
                                    f"schemas (for field {name}).")

    def _flatten_struct(self, struct: Struct | None, prefix: str, out: Struct) -> None:
        if struct is None:
            return
        for field in struct.schema.fields:
            name = self._name(prefix, field.name)
            if field.schema.type is Type.STRUCT:
                self._flatten_struct(struct.get_struct(field.name), name, out)
            else:
                out.put(name, struct.get(field))


class FlattenKey(OperatesOnKey, Flatten):
    """Flatten the record key (``org.apache.kafka.connect.transforms.Flatten$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.Flatten$Key"


class FlattenValue(OperatesOnValue, Flatten):
    """Flatten the record value (``org.apache.kafka.connect.transforms.Flatten$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.Flatten$Value"
