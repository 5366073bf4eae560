"""ValueToKey: build the key from fields of the value (Kafka's ``ValueToKey``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    BaseTransformation,
    define_replace_null_with_default,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
)

__all__ = ["ValueToKey"]

FIELDS_CONFIG = "fields"
PURPOSE = "copying fields from value to key"


class ValueToKey(BaseTransformation):
    """Replace the key with a struct (schema present) or map (schemaless) of the listed value fields.

    The value must be a struct or a map: a null value (a tombstone) is an error, as in Kafka.

    Attributes:
        fields: the field names, in key order.
        replace_null_with_default: whether a null struct field takes its default.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.ValueToKey"

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.replace_null_with_default = True
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return define_replace_null_with_default(ConfigDef().define(
            FIELDS_CONFIG, ConfigType.LIST, validator=non_empty_list, importance=Importance.HIGH,
            doc="Field names on the record value to extract as the record key."))

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.fields = list(values[FIELDS_CONFIG])
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        if record.value_schema is None:
            value = require_map(record.value, PURPOSE)
            key = {name: value.get(name) for name in self.fields}
            return record.new_record(record.topic, record.kafka_partition, None, key, record.value_schema,
                                     record.value, record.timestamp)
        struct = require_struct(record.value, PURPOSE)
        key_schema = self._schema_cache.get_or_compute(struct.schema, self._key_schema)
        key_struct = Struct(key_schema)
        for name in self.fields:
            key_struct.put(name, field_value(struct, name, self.replace_null_with_default))
        return record.new_record(record.topic, record.kafka_partition, key_schema, key_struct, struct.schema,
                                 struct, record.timestamp)

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose value schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._key_schema)

    def _key_schema(self, value_schema: Schema) -> Schema:
        builder = SchemaBuilder.struct()
        for name in self.fields:
            field = value_schema.field(name)
            if field is None:
                raise DataException(f"Field does not exist: {name}")
            builder.field(name, field.schema)
        return builder.build()
