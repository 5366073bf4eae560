"""MaskField: replace field values with an empty value or a replacement (Kafka's ``MaskField$Key`` / ``$Value``)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any, Mapping

from connect_spark.api.data import Schema, Struct, Type, Values
from connect_spark.api.data.java_semantics import parse_big_decimal
from connect_spark.api.data.logical import EPOCH
from connect_spark.api.errors import DataException
from connect_spark.api.data.java_map import hash_map_copy
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance, NonEmptyString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    define_replace_null_with_default,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
)

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

FIELDS_CONFIG = "fields"
REPLACEMENT_CONFIG = "replacement"
PURPOSE = "mask fields"


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(
        ConfigDef()
        .define(FIELDS_CONFIG, ConfigType.LIST, validator=non_empty_list, importance=Importance.HIGH,
                doc="Names of fields to mask.")
        .define(REPLACEMENT_CONFIG, ConfigType.STRING, None, validator=NonEmptyString(), importance=Importance.LOW,
                doc="Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty "
                    "string values only).")
    )


def _empty_value(value: Any) -> Any:
    """The "null value" of the value's type: 0, false, empty string, empty list/map, the epoch."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, datetime.datetime):
        return EPOCH
    if isinstance(value, datetime.date):
        return datetime.date(1970, 1, 1)
    if isinstance(value, datetime.time):
        return datetime.time(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, (list, tuple)):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataException(f"Cannot mask value of type: class {type(value).__name__}")


_INT_CONVERSIONS = {
    Type.INT8: Values.convert_to_byte,
    Type.INT16: Values.convert_to_short,
    Type.INT32: Values.convert_to_integer,
    Type.INT64: Values.convert_to_long,
}


def _replacement_value(value: Any, replacement: str, schema: Schema | None) -> Any:
    """The replacement string converted to the value's type (Kafka picks by the value's Java class)."""
    schema_type = schema.type if schema is not None else None
    if isinstance(value, str):
        return replacement
    if isinstance(value, int) and not isinstance(value, bool):
        return _INT_CONVERSIONS.get(schema_type, Values.convert_to_long)(None, replacement)  # type: ignore[arg-type]
    if isinstance(value, float):
        if schema_type is Type.FLOAT32:
            return Values.convert_to_float(None, replacement)
        return Values.convert_to_double(None, replacement)
    if isinstance(value, decimal.Decimal):
        try:
            return parse_big_decimal(replacement)
        except ValueError as e:
            raise DataException(f"Unable to convert {replacement} (class str) to number") from e
    raise DataException(f"Cannot mask value of type class {type(value).__name__} with custom replacement.")


class MaskField(KeyOrValueTransformation):
    """Mask the listed fields: with the type's empty value (0, false, "", [], {}), or with ``replacement``.

    ``replacement`` is converted to the field's type (numbers and strings only). Null fields stay
    null. The key/value must be a struct or a map (a null is an error, as in Kafka).

    Attributes:
        masked_fields: the field names, as a frozenset.
        replacement: the replacement text, or ``None``.
        replace_null_with_default: whether a null struct field takes its default before masking.
    """

    def __init__(self) -> None:
        self.masked_fields: frozenset[str] = frozenset()
        self.replacement: str | None = None
        self.replace_null_with_default = True

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.masked_fields = frozenset(values[FIELDS_CONFIG])
        self.replacement = values[REPLACEMENT_CONFIG]
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def masked(self, value: Any, schema: Schema | None) -> Any:
        """The masked replacement of ``value`` (of ``schema``), as the per-record path gives it.

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`) for a sample of each
        field's kind.
        """
        return self._masked(value, schema)

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self.replacement is None:
            return _empty_value(value)
        return _replacement_value(value, self.replacement, schema)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            original = require_map(value, PURPOSE)
            updated_map = hash_map_copy(original)  # Kafka: new HashMap<>(value)
            for name in self.masked_fields:
                updated_map[name] = self._masked(original.get(name), None)
            return self.new_record(record, None, updated_map)
        struct = require_struct(value, PURPOSE)
        updated = Struct(struct.schema)
        for field in struct.schema.fields:
            original_value = field_value(struct, field, self.replace_null_with_default)
            masked = field.name in self.masked_fields
            updated.put(field, self._masked(original_value, field.schema) if masked else original_value)
        return self.new_record(record, schema, updated)


class MaskFieldKey(OperatesOnKey, MaskField):
    """MaskField on the record key (``org.apache.kafka.connect.transforms.MaskField$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.MaskField$Key"


class MaskFieldValue(OperatesOnValue, MaskField):
    """MaskField on the record value (``org.apache.kafka.connect.transforms.MaskField$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.MaskField$Value"
