"""Cast: change the type of fields or of the whole key/value (Kafka's ``Cast$Key`` / ``Cast$Value``)."""

from __future__ import annotations

import base64
import datetime
import decimal
import logging
from typing import Any, Mapping

from connect_spark.api.data import ConnectSchema, Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type, Values
from connect_spark.api.data.java_semantics import (
    decimal_long_value,
    double_to_int,
    double_to_long,
    java_double_str,
    java_float_str,
    parse_java_double,
    parse_java_integer,
    to_float32,
    wrap_int,
)
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.data.java_map import hash_map_copy
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

__all__ = ["Cast", "CastKey", "CastValue", "cast_value_to_type"]

log = logging.getLogger(__name__)

SPEC_CONFIG = "spec"
PURPOSE = "cast types"

SUPPORTED_CAST_INPUT_TYPES = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                              Type.BOOLEAN, Type.STRING, Type.BYTES)
SUPPORTED_CAST_OUTPUT_TYPES = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                               Type.BOOLEAN, Type.STRING)
_OUTPUT_NAMES = ", ".join(t.value for t in SUPPORTED_CAST_OUTPUT_TYPES)


def _type_list(types: tuple[Type, ...]) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def parse_field_types(mappings: list[str]) -> dict[str | None, Type]:
    """Parse a ``spec`` list (``int32`` or ``f1:int32,f2:string``) into ``{field or None: Type}``.

    Raises:
        ConfigException: naming the key, the value and the valid types.
    """
    if not mappings:
        raise ConfigException("Must specify at least one field to cast.", SPEC_CONFIG, mappings)
    casts: dict[str | None, Type] = {}
    whole_value = False
    for mapping in mappings:
        parts = mapping.split(":")
        while len(parts) > 1 and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) > 2:
            raise ConfigException(f"Invalid cast mapping: {mapping}; use field:type or type", SPEC_CONFIG, mappings)
        type_text = parts[-1].strip()
        try:
            target = Type[type_text.upper()]
        except KeyError:
            raise ConfigException(f"Invalid type found in casting spec: {type_text}; valid types are {_OUTPUT_NAMES}",
                                  SPEC_CONFIG, mappings) from None
        if target not in SUPPORTED_CAST_OUTPUT_TYPES:
            raise ConfigException(f"Cast transformation does not support casting to {target}; supported types are "
                                  f"{_type_list(SUPPORTED_CAST_OUTPUT_TYPES)}", SPEC_CONFIG, mappings)
        if len(parts) == 1:
            casts[None] = target
            whole_value = True
        else:
            casts[parts[0].strip()] = target
    if whole_value and len(mappings) > 1:
        raise ConfigException("Cast transformations that specify a type to cast the entire value to may only specify "
                              "a single cast in their spec", SPEC_CONFIG, mappings)
    return casts


class _SpecValidator:
    def __call__(self, name: str, value: Any) -> None:
        parse_field_types(value)

    def __str__(self) -> str:
        return "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(ConfigDef().define(
        SPEC_CONFIG, ConfigType.LIST, validator=_SpecValidator(), importance=Importance.HIGH,
        doc="List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of "
            "Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, int64, "
            "float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
    ))


# --- the casts -----------------------------------------------------------------------------------


def _unexpected(value: Any) -> DataException:
    return DataException(f"Unexpected type in Cast transformation: class {type(value).__name__}")


def _cast_to_int(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return wrap_int(value, bits)
    if isinstance(value, float):
        if bits == 64:
            return double_to_long(value)
        return wrap_int(double_to_int(value), bits)
    if isinstance(value, decimal.Decimal):
        return decimal_long_value(value) if bits == 64 else wrap_int(int(value), bits) if value.is_finite() else 0
    if isinstance(value, str):
        return parse_java_integer(value, bits)
    raise _unexpected(value)


def _cast_to_float(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, str):
        return parse_java_double(value)
    raise _unexpected(value)


def _cast_to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return wrap_int(value, 64) != 0
    if isinstance(value, float):
        return double_to_long(value) != 0
    if isinstance(value, decimal.Decimal):
        return value.is_finite() and decimal_long_value(value) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise _unexpected(value)


def _cast_to_string(value: Any, source_type: Type | None) -> str:
    if isinstance(value, (datetime.date, datetime.time)):
        return Values.format_temporal(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_str(value) if source_type is Type.FLOAT32 else java_double_str(value)
    return str(value)


def _encode_logical(schema: Schema, value: Any) -> Any:
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    return value


def cast_value_to_type(schema: Schema | None, value: Any, target: Type) -> Any:
    """Cast one value (described by ``schema``, or schemaless) to ``target`` as Kafka's Cast does.

    Numbers narrow like Java casts (``300`` to int8 is ``44``, ``1.9`` to int32 is ``1``), strings
    parse with Java's rules (``Integer.parseInt``...), booleans give 1/0, bytes cast only to a base64
    string, and Date/Time/Timestamp values become their integer encoding (or ISO text for string).

    Raises:
        DataException: for an unsupported input type or a string out of range.
    """
    if value is None:
        return None
    inferred = schema.type if schema is not None else ConnectSchema.schema_type(value)
    if inferred is None:
        raise DataException(f"Cast transformation was passed a value of type class {type(value).__name__} which is "
                            "not supported by Connect's data API")
    if inferred not in SUPPORTED_CAST_INPUT_TYPES:
        raise DataException(f"Cast transformation does not support casting from {inferred}; supported types are "
                            f"{_type_list(SUPPORTED_CAST_INPUT_TYPES)}")
    if schema is not None and schema.name is not None and target is not Type.STRING:
        value = _encode_logical(schema, value)
    try:
        if target is Type.INT8:
            return _cast_to_int(value, 8)
        if target is Type.INT16:
            return _cast_to_int(value, 16)
        if target is Type.INT32:
            return _cast_to_int(value, 32)
        if target is Type.INT64:
            return _cast_to_int(value, 64)
        if target is Type.FLOAT32:
            return to_float32(_cast_to_float(value))
        if target is Type.FLOAT64:
            return _cast_to_float(value)
        if target is Type.BOOLEAN:
            return _cast_to_boolean(value)
        if target is Type.STRING:
            return _cast_to_string(value, inferred)
    except ValueError as e:
        raise DataException(f"Value ({value}) was out of range for requested data type") from e
    raise DataException(f"{target} is not supported in the Cast transformation.")


class Cast(KeyOrValueTransformation):
    """Cast fields, or the whole key/value, to another primitive type.

    ``spec`` is either one type (``int32``: cast the whole key/value) or ``field:type`` pairs
    (``age:int16,score:float64``) for the fields of a struct or map. Valid target types: int8, int16,
    int32, int64, float32, float64, boolean, string. A null key/value passes through unchanged.

    Attributes:
        casts: ``{field name: Type}``; the key ``None`` means the whole value.
        whole_value_cast_type: the target type of a whole-value cast, else ``None``.
        replace_null_with_default: whether a null struct field takes its default before casting.
    """

    def __init__(self) -> None:
        self.casts: dict[str | None, Type] = {}
        self.whole_value_cast_type: Type | None = None
        self.replace_null_with_default = True
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.casts = parse_field_types(values[SPEC_CONFIG])
        self.whole_value_cast_type = self.casts.get(None)
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            return self._apply_schemaless(record, value)
        return self._apply_with_schema(record, schema, value)

    def _apply_schemaless(self, record: SinkRecord, value: Any) -> SinkRecord:
        if self.whole_value_cast_type is not None:
            return self.new_record(record, None, cast_value_to_type(None, value, self.whole_value_cast_type))
        original = require_map(value, PURPOSE)
        updated = hash_map_copy(original)  # Kafka: new HashMap<>(value)
        for field, target in self.casts.items():
            updated[field] = cast_value_to_type(None, original.get(field), target)  # type: ignore[index]
        return self.new_record(record, None, updated)

    def _apply_with_schema(self, record: SinkRecord, schema: Schema, value: Any) -> SinkRecord:
        updated_schema = self._schema_cache.get_or_compute(schema, self._build_schema)
        if self.whole_value_cast_type is not None:
            return self.new_record(record, updated_schema,
                                   cast_value_to_type(schema, value, self.whole_value_cast_type))
        struct = require_struct(value, PURPOSE)
        updated = Struct(updated_schema)
        for field in struct.schema.fields:
            original = field_value(struct, field, self.replace_null_with_default)
            target = self.casts.get(field.name)
            new_value = original if target is None else cast_value_to_type(field.schema, original, target)
            updated.put(updated_schema.field(field.name), new_value)
        return self.new_record(record, updated_schema, updated)

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._build_schema)

    def _build_schema(self, schema: Schema) -> Schema:
        if self.whole_value_cast_type is not None:
            builder = copy_schema_basics(schema, SchemaBuilder(self.whole_value_cast_type))
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in require_struct_schema(schema).fields:
                target = self.casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = SchemaBuilder(target)
                if field.schema.is_optional:
                    field_builder.optional()
                if field.schema.default_value is not None:
                    field_builder.default_value(cast_value_to_type(field.schema, field.schema.default_value, target))
                builder.field(field.name, field_builder.build())
        if schema.is_optional:
            builder.optional()
        if schema.default_value is not None:
            builder.default_value(cast_value_to_type(schema, schema.default_value, builder.type))
        return builder.build()


def require_struct_schema(schema: Schema) -> Schema:
    if schema.type is not Type.STRUCT:
        raise DataException(f"Only Struct objects supported for [{PURPOSE}], found: {schema}")
    return schema


class CastKey(OperatesOnKey, Cast):
    """Cast on the record key (``org.apache.kafka.connect.transforms.Cast$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.Cast$Key"


class CastValue(OperatesOnValue, Cast):
    """Cast on the record value (``org.apache.kafka.connect.transforms.Cast$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.Cast$Value"
