"""TimestampConverter: timestamps between string, unix, Date, Time and Timestamp (Kafka's ``TimestampConverter``).

Every conversion goes through epoch milliseconds in UTC, as Kafka's goes through ``java.util.Date``:
sub-millisecond precision is dropped. ``format`` is a Java ``SimpleDateFormat`` pattern (see
:mod:`connect_spark.transforms.simple_date_format`).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, Mapping

from connect_spark.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect_spark.api.data.java_semantics import INT_BOUNDS, is_blank
from connect_spark.api.data.logical import MILLIS_PER_DAY, logical_to_millis, to_utc_datetime
from connect_spark.api.errors import ConfigException, ConnectException, DataException
from connect_spark.api.data.java_map import hash_map_copy
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance, ValidString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.simple_date_format import SimpleDateFormat
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
    require_struct_or_null,
)

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue", "timestamp_kind"]

log = logging.getLogger(__name__)

FIELD_CONFIG = "field"
TARGET_TYPE_CONFIG = "target.type"
FORMAT_CONFIG = "format"
UNIX_PRECISION_CONFIG = "unix.precision"
PURPOSE = "converting timestamp formats"

TYPE_STRING = "string"
TYPE_UNIX = "unix"
TYPE_DATE = "Date"
TYPE_TIME = "Time"
TYPE_TIMESTAMP = "Timestamp"
VALID_TYPES = (TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP)

PRECISION_NANOS = "nanoseconds"
PRECISION_MICROS = "microseconds"
PRECISION_MILLIS = "milliseconds"
PRECISION_SECONDS = "seconds"
_UNITS_PER_MILLI = {PRECISION_NANOS: 1_000_000, PRECISION_MICROS: 1000, PRECISION_MILLIS: 1}

OPTIONAL_DATE_SCHEMA = Date.builder().optional().build()
OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()
OPTIONAL_TIME_SCHEMA = Time.builder().optional().build()
_LONG_MIN, _LONG_MAX = INT_BOUNDS[64]


def _config_def() -> ConfigDef:
    return define_replace_null_with_default(
        ConfigDef()
        .define(FIELD_CONFIG, ConfigType.STRING, "", importance=Importance.HIGH,
                doc="The field containing the timestamp, or empty if the entire value is a timestamp")
        .define(TARGET_TYPE_CONFIG, ConfigType.STRING, validator=ValidString.in_(*VALID_TYPES),
                importance=Importance.HIGH,
                doc="The desired timestamp representation: string, unix, Date, Time, or Timestamp")
        .define(FORMAT_CONFIG, ConfigType.STRING, "", importance=Importance.MEDIUM,
                doc="A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when "
                    "type=string or used to parse the input if the input is a string.")
        .define(UNIX_PRECISION_CONFIG, ConfigType.STRING, PRECISION_MILLIS,
                validator=ValidString.in_(PRECISION_NANOS, PRECISION_MICROS, PRECISION_MILLIS, PRECISION_SECONDS),
                importance=Importance.LOW,
                doc="The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or "
                    "nanoseconds. Used to generate the output when type=unix or used to parse the input if the "
                    "input is a Long. Note: This SMT will cause precision loss during conversions from, and to, "
                    "values with sub-millisecond components.")
    )


def _truncating_div(numerator: int, denominator: int) -> int:
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


def _saturate(value: int) -> int:
    return max(_LONG_MIN, min(_LONG_MAX, value))


class TimestampConverter(KeyOrValueTransformation):
    """Convert a timestamp field (or the whole key/value) to ``target.type``.

    Sources and targets: ``string`` (parsed/formatted with ``format``), ``unix`` (an INT64 in
    ``unix.precision`` units), ``Date``, ``Time``, ``Timestamp`` (the logical types). With a schema
    the source kind comes from the schema; without one, a ``datetime`` is a Timestamp (a ``date`` a
    Date, a ``time`` a Time), an ``int`` is unix and a ``str`` is string. Nulls stay null.

    Attributes:
        field: the field holding the timestamp, ``""`` for the whole key/value.
        target_type: one of ``string``, ``unix``, ``Date``, ``Time``, ``Timestamp``.
        format: the SimpleDateFormat pattern, or ``None``.
        unix_precision: ``seconds``, ``milliseconds``, ``microseconds`` or ``nanoseconds``.
        replace_null_with_default: whether a null struct field takes its default.
    """

    def __init__(self) -> None:
        self.field = ""
        self.target_type = TYPE_TIMESTAMP
        self.format: str | None = None
        self.unix_precision = PRECISION_MILLIS
        self.replace_null_with_default = True
        self._formatter: SimpleDateFormat | None = None
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.field = values[FIELD_CONFIG]
        self.target_type = values[TARGET_TYPE_CONFIG]
        pattern = values[FORMAT_CONFIG]
        self.unix_precision = values[UNIX_PRECISION_CONFIG]
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        if self.target_type == TYPE_STRING and is_blank(pattern):
            raise ConfigException("TimestampConverter requires format option to be specified when using string "
                                  "timestamps", FORMAT_CONFIG, pattern)
        self.format = None if is_blank(pattern) else pattern
        self._formatter = None
        if self.format is not None:
            try:
                self._formatter = SimpleDateFormat(self.format)
            except ValueError as e:
                raise ConfigException(f"TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
                                      f"timestamps: {e}", FORMAT_CONFIG, pattern) from e
        self._schema_cache = LruCache(16)

    # -- translations through epoch milliseconds --

    def _to_raw(self, kind: str, value: Any) -> int:
        if kind == TYPE_STRING:
            if not isinstance(value, str):
                raise DataException(f"Expected string timestamp to be a String, but found class {type(value).__name__}")
            if self._formatter is None:
                raise DataException("TimestampConverter requires the format option to parse string timestamps")
            try:
                return self._formatter.parse(value)
            except ValueError as e:
                raise DataException(f"Could not parse timestamp: value ({value}) does not match pattern "
                                    f"({self._formatter.to_pattern()})") from e
        if kind == TYPE_UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataException(f"Expected Unix timestamp to be a Long, but found class {type(value).__name__}")
            if self.unix_precision == PRECISION_SECONDS:
                return _saturate(value * 1000)
            return _truncating_div(value, _UNITS_PER_MILLI[self.unix_precision])
        millis = logical_to_millis(value)
        if millis is None:
            raise DataException(f"Expected {kind} to be a date/time value, but found class {type(value).__name__}")
        return millis

    def _to_type(self, millis: int) -> Any:
        target = self.target_type
        try:
            if target == TYPE_STRING:
                assert self._formatter is not None
                return self._formatter.format(millis)
            if target == TYPE_UNIX:
                if self.unix_precision == PRECISION_SECONDS:
                    return _truncating_div(millis, 1000)
                return _saturate(millis * _UNITS_PER_MILLI[self.unix_precision])
            if target == TYPE_DATE:
                return Date.to_logical(Date.SCHEMA, millis // MILLIS_PER_DAY)
            if target == TYPE_TIME:
                return Time.to_logical(Time.SCHEMA, millis % MILLIS_PER_DAY)
            return to_utc_datetime(millis)
        except ValueError as e:
            raise DataException(str(e)) from e

    def type_schema(self, optional: bool) -> Schema:
        """The schema of a converted value (optional or not); called by the column compiler."""
        return self._type_schema(optional)

    @property
    def format_tokens(self) -> list[Any]:
        """The compiled ``format`` pattern's tokens (empty without a format); read by the column compiler."""
        return self._formatter.tokens if self._formatter is not None else []

    def _type_schema(self, optional: bool) -> Schema:
        target = self.target_type
        if target == TYPE_STRING:
            return Schema.OPTIONAL_STRING_SCHEMA if optional else Schema.STRING_SCHEMA
        if target == TYPE_UNIX:
            return Schema.OPTIONAL_INT64_SCHEMA if optional else Schema.INT64_SCHEMA
        if target == TYPE_DATE:
            return OPTIONAL_DATE_SCHEMA if optional else Date.SCHEMA
        if target == TYPE_TIME:
            return OPTIONAL_TIME_SCHEMA if optional else Time.SCHEMA
        return OPTIONAL_TIMESTAMP_SCHEMA if optional else Timestamp.SCHEMA

    def convert(self, value: Any, kind: str | None = None) -> Any:
        """Convert one timestamp whose kind is ``kind`` (inferred from the Python type when ``None``)."""
        if value is None:
            return None
        if kind is None:
            kind = _infer_kind(value)
        return self._to_type(self._to_raw(kind, value))

    # -- the record --

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if value is None or not self.field:
                return self.new_record(record, None, self.convert(value))
            original = require_map(value, PURPOSE)
            updated_map = hash_map_copy(original)  # Kafka: new HashMap<>(value)
            updated_map[self.field] = self.convert(original.get(self.field))
            return self.new_record(record, None, updated_map)
        if not self.field:
            updated_schema = self._type_schema(schema.is_optional)
            return self.new_record(record, updated_schema, self.convert(value, timestamp_kind(schema)))
        struct = require_struct_or_null(value, PURPOSE)
        updated_schema = self._schema_cache.get_or_compute(schema, self._updated_schema)
        return self.new_record(record, updated_schema, self._convert_struct(struct, updated_schema))

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._updated_schema)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name == self.field:
                builder.field(field.name, self._type_schema(field.schema.is_optional))
            else:
                builder.field(field.name, field.schema)
        if schema.is_optional:
            builder.optional()
        if schema.default_value is not None:
            builder.default_value(self._convert_struct(schema.default_value, builder.build()))
        return builder.build()

    def _convert_struct(self, struct: Struct | None, updated_schema: Schema) -> Struct | None:
        if struct is None:
            return None
        updated = Struct(updated_schema)
        for field in struct.schema.fields:
            original = field_value(struct, field, self.replace_null_with_default)
            if field.name == self.field:
                original = self.convert(original, timestamp_kind(field.schema))
            updated.put(field.name, original)
        return updated


def timestamp_kind(schema: Schema) -> str:
    """The timestamp kind a schema describes (Kafka's ``timestampTypeFromSchema``)."""
    if schema.name == Timestamp.LOGICAL_NAME:
        return TYPE_TIMESTAMP
    if schema.name == Date.LOGICAL_NAME:
        return TYPE_DATE
    if schema.name == Time.LOGICAL_NAME:
        return TYPE_TIME
    if schema.type is Type.STRING:
        return TYPE_STRING
    if schema.type is Type.INT64:
        return TYPE_UNIX
    raise ConnectException(f"Schema {schema} does not correspond to a known timestamp type format")


def _infer_kind(value: Any) -> str:
    """The timestamp kind of a schemaless value (Kafka's ``inferTimestampType``)."""
    if isinstance(value, datetime.datetime):
        return TYPE_TIMESTAMP
    if isinstance(value, datetime.date):
        return TYPE_DATE
    if isinstance(value, datetime.time):
        return TYPE_TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return TYPE_UNIX
    if isinstance(value, str):
        return TYPE_STRING
    raise DataException(f"TimestampConverter does not support class {type(value).__name__} objects as timestamps")


class TimestampConverterKey(OperatesOnKey, TimestampConverter):
    """TimestampConverter on the record key (``org.apache.kafka.connect.transforms.TimestampConverter$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.TimestampConverter$Key"


class TimestampConverterValue(OperatesOnValue, TimestampConverter):
    """TimestampConverter on the record value (``org.apache.kafka.connect.transforms.TimestampConverter$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
