"""SetSchemaMetadata: set the key/value schema's name and/or version (Kafka's ``SetSchemaMetadata``)."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from connect_spark.api.data import ConnectSchema, Schema, Struct, Type
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    define_replace_null_with_default,
    field_value,
    require_schema,
)

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]

log = logging.getLogger(__name__)

SCHEMA_NAME_CONFIG = "schema.name"
SCHEMA_VERSION_CONFIG = "schema.version"


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(
        ConfigDef()
        .define(SCHEMA_NAME_CONFIG, ConfigType.STRING, None, importance=Importance.HIGH, doc="Schema name to set.")
        .define(SCHEMA_VERSION_CONFIG, ConfigType.INT, None, importance=Importance.HIGH, doc="Schema version to set.")
    )


class SetSchemaMetadata(KeyOrValueTransformation):
    """Give the key/value schema ``schema.name`` and/or ``schema.version``; everything else is kept.

    A struct value is rebuilt on the new schema. A null value without a schema passes through; any
    other schemaless value is an error.

    Attributes:
        schema_name: the name to set, or ``None`` to keep the current one.
        schema_version: the version to set, or ``None`` to keep the current one.
        replace_null_with_default: whether null struct fields take their defaults when rebuilt.
    """

    def __init__(self) -> None:
        self.schema_name: str | None = None
        self.schema_version: int | None = None
        self.replace_null_with_default = True

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.schema_name = values[SCHEMA_NAME_CONFIG]
        self.schema_version = values[SCHEMA_VERSION_CONFIG]
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None and value is None:
            return record
        schema = require_schema(schema, "updating schema metadata")
        is_map = schema.type is Type.MAP
        updated_schema = ConnectSchema(
            schema.type,
            schema.is_optional,
            schema.default_value,
            self.schema_name if self.schema_name is not None else schema.name,
            self.schema_version if self.schema_version is not None else schema.version,
            schema.doc,
            schema.parameters,
            schema.fields if schema.type is Type.STRUCT else None,
            schema.key_schema if is_map else None,
            schema.value_schema if is_map or schema.type is Type.ARRAY else None,
        )
        log.debug("Applying SetSchemaMetadata SMT. Original schema: %s, updated schema: %s", schema, updated_schema)
        return self.new_record(record, updated_schema, self._rebuild(value, updated_schema))

    def _rebuild(self, value: Any, updated_schema: Schema) -> Any:
        if not isinstance(value, Struct):
            return value
        rebuilt = Struct(updated_schema)
        for field in updated_schema.fields:
            rebuilt.put(field, field_value(value, field.name, self.replace_null_with_default))
        return rebuilt


class SetSchemaMetadataKey(OperatesOnKey, SetSchemaMetadata):
    """SetSchemaMetadata on the record key (``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.SetSchemaMetadata$Key"


class SetSchemaMetadataValue(OperatesOnValue, SetSchemaMetadata):
    """SetSchemaMetadata on the record value (``org.apache.kafka.connect.transforms.SetSchemaMetadata$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value"
