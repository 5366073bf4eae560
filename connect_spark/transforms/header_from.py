"""HeaderFrom: move or copy fields of the key/value into headers (Kafka's ``HeaderFrom$Key`` / ``$Value``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance, ValidString
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
    non_empty_list,
    require_map,
    require_struct,
)

__all__ = ["HeaderFrom", "HeaderFromKey", "HeaderFromValue"]

FIELDS_CONFIG = "fields"
HEADERS_CONFIG = "headers"
OPERATION_CONFIG = "operation"
MOVE = "move"
COPY = "copy"


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(
        ConfigDef()
        .define(FIELDS_CONFIG, ConfigType.LIST, validator=non_empty_list, importance=Importance.HIGH,
                doc="Field names in the record whose values are to be copied or moved to headers.")
        .define(HEADERS_CONFIG, ConfigType.LIST, validator=non_empty_list, importance=Importance.HIGH,
                doc="Header names, in the same order as the field names listed in the fields configuration property.")
        .define(OPERATION_CONFIG, ConfigType.STRING, validator=ValidString.in_(MOVE, COPY), importance=Importance.HIGH,
                doc="Either <code>move</code> if the fields are to be moved to the headers (removed from the "
                    "key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in the "
                    "key/value).")
    )


class HeaderFrom(KeyOrValueTransformation):
    """Add a header for each listed field, with the field's value (and schema); ``move`` also removes the field.

    ``fields`` and ``headers`` pair up by position. The key/value must be a struct or a map.

    Attributes:
        fields, headers: the paired names.
        operation: ``"move"`` or ``"copy"``.
        replace_null_with_default: whether a null struct field yields its default.
    """

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.headers: list[str] = []
        self.operation = COPY
        self.replace_null_with_default = True
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.fields = list(values[FIELDS_CONFIG])
        self.headers = list(values[HEADERS_CONFIG])
        if len(self.fields) != len(self.headers):
            raise ConfigException(f"'{FIELDS_CONFIG}' config must have the same number of elements as "
                                  f"'{HEADERS_CONFIG}' config.", HEADERS_CONFIG, values[HEADERS_CONFIG])
        self.operation = values[OPERATION_CONFIG]
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        headers = record.headers.copy()
        purpose = f"header {self.operation}"
        if schema is None:
            original = require_map(value, purpose)
            updated_map = dict(original)
            for field, header in zip(self.fields, self.headers):
                if self.operation == MOVE:
                    updated_map.pop(field, None)
                headers.add(header, original.get(field), None)
            return self.new_record(record, None, updated_map, headers)

        struct = require_struct(value, purpose)
        if self.operation == MOVE:
            updated_schema = self._schema_cache.get_or_compute(schema, self._moved_schema)
            updated: Struct = Struct(updated_schema)
            for field in updated_schema.fields:
                updated.put(field, field_value(struct, field.name, self.replace_null_with_default))
        else:
            updated_schema, updated = schema, struct
        for field_name, header in zip(self.fields, self.headers):
            field = schema.field(field_name)
            if field is None:
                raise DataException(f"Field {field_name} is not in the record's schema {schema}")
            headers.add(header, field_value(struct, field, self.replace_null_with_default), field.schema)
        return self.new_record(record, updated_schema, updated, headers)

    def _moved_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name not in self.fields:
                builder.field(field.name, field.schema)
        return builder.build()


class HeaderFromKey(OperatesOnKey, HeaderFrom):
    """HeaderFrom on the record key (``org.apache.kafka.connect.transforms.HeaderFrom$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.HeaderFrom$Key"


class HeaderFromValue(OperatesOnValue, HeaderFrom):
    """HeaderFrom on the record value (``org.apache.kafka.connect.transforms.HeaderFrom$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.HeaderFrom$Value"
