"""ExtractField: replace the key/value with one of its fields (Kafka's ``ExtractField$Key`` / ``$Value``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.errors import DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import (
    FIELD_SYNTAX_VERSION_CONFIG,
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    SingleFieldPath,
    define_field_syntax_version,
    define_replace_null_with_default,
    require_map_or_null,
    require_struct_or_null,
)

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

FIELD_CONFIG = "field"
PURPOSE = "field extraction"


def _config_def() -> ConfigDef:
    config = ConfigDef().define(FIELD_CONFIG, ConfigType.STRING, importance=Importance.MEDIUM,
                                doc="Field name to extract.")
    return define_replace_null_with_default(define_field_syntax_version(config))


class ExtractField(KeyOrValueTransformation):
    """Extract one field of a struct (schema present) or map (schemaless) as the new key/value.

    With ``field.syntax.version=V2`` the field is a dotted path into nested structs or maps
    (```a.b`.c`` quotes a name containing a dot). A null key/value gives a null result; a missing
    map entry gives null; a field missing from the schema is an error.

    Attributes:
        field_path: the parsed :class:`SingleFieldPath` (``field_path.steps`` are the names).
        replace_null_with_default: whether a null struct field yields its default.
    """

    def __init__(self) -> None:
        self.field_path = SingleFieldPath("")
        self.replace_null_with_default = True

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.field_path = SingleFieldPath(values[FIELD_CONFIG], values[FIELD_SYNTAX_VERSION_CONFIG])
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        schema = self.operating_schema(record)
        if schema is None:
            value = require_map_or_null(self.operating_value(record), PURPOSE)
            return self.new_record(record, None, self.field_path.value_from_map(value))
        struct = require_struct_or_null(self.operating_value(record), PURPOSE)
        field = self.field_path.field_from(schema)
        if field is None:
            raise DataException(f"Unknown field: {self.field_path.path}")
        extracted = self.field_path.value_from_struct(struct, self.replace_null_with_default)
        return self.new_record(record, field.schema, extracted)


class ExtractFieldKey(OperatesOnKey, ExtractField):
    """ExtractField on the record key (``org.apache.kafka.connect.transforms.ExtractField$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.ExtractField$Key"


class ExtractFieldValue(OperatesOnValue, ExtractField):
    """ExtractField on the record value (``org.apache.kafka.connect.transforms.ExtractField$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.ExtractField$Value"
