"""Values: convert Connect values between types, and to and from strings (Kafka's ``Values``).

Mapping to Kafka: ``Values.convertToLong`` → :meth:`Values.convert_to_long` and so on;
``parseString`` → :meth:`Values.parse_string`; ``inferSchema`` → :meth:`Values.infer_schema`;
``dateFormatFor(date).format(date)`` → :meth:`Values.format_temporal`.

:meth:`Values.parse_string` is what the ``SimpleHeaderConverter`` and ``InsertHeader`` use to give a
string a type: ``"true"`` is a BOOLEAN, ``"12"`` an INT8, ``"1.5"`` a FLOAT32, ``"[1,2]"`` an ARRAY of
INT8, ``"{"a":1}"`` a MAP, ``"2024-01-31"`` a Date, ``"10:15:30.000Z"`` a Time,
``"2024-01-31T10:15:30.000Z"`` a Timestamp, anything else a STRING. It follows Kafka 4.0's parser
token for token, quirks included (a string that starts with a number may parse as just that
number). Dates and times are read and written in UTC (Kafka uses the JVM's default time zone,
which Connect deployments normally set to UTC).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import logging
import re
from collections.abc import Mapping
from typing import Any

from connect_spark.api.converters import SchemaAndValue
from connect_spark.api.data.java_semantics import (
    decimal_long_value,
    double_to_long,
    is_blank,
    java_double_str,
    java_float_str,
    java_trim,
    parse_big_decimal,
    to_float32,
    wrap_int,
)
from connect_spark.api.data.logical import (
    MILLIS_PER_DAY,
    Date,
    Decimal,
    Time,
    Timestamp,
    logical_to_millis,
    to_utc_datetime,
)
from connect_spark.api.data.schema import ConnectSchema, Schema, SchemaBuilder, Type
from connect_spark.api.data.struct import Struct
from connect_spark.api.errors import DataException

__all__ = ["Values", "ValueTokenizer"]

log = logging.getLogger(__name__)

_NULL = SchemaAndValue(None, None)
_TRUE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)
_ARRAY_SELECTOR_SCHEMA = SchemaBuilder.array(Schema.STRING_SCHEMA).build()
_MAP_SELECTOR_SCHEMA = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build()
_STRUCT_SELECTOR_SCHEMA = SchemaBuilder.struct().build()

_ISO_DATE_LENGTH = len("yyyy-MM-dd")
_ISO_TIME_LENGTH = len("HH:mm:ss.SSSZ")
_ISO_TIMESTAMP_LENGTH = len("yyyy-MM-ddTHH:mm:ss.SSSZ")
_DATE_RE = re.compile(r"(\d+)-(\d+)-(\d+)")
_TIME_RE = re.compile(r"(\d+):(\d+):(\d+)\.(\d+)Z")
_TIMESTAMP_RE = re.compile(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_BIGGER_THAN_LONG = decimal.Decimal("1e19")
_TEMPORAL = (datetime.date, datetime.time)  # datetime.datetime is a date


def _class_name(value: Any) -> str:
    return f"class {type(value).__name__}"


def _cannot(value: Any, target: object) -> DataException:
    return DataException(f"Unable to convert {value} ({_class_name(value)}) to {target}")


def _require_value(value: Any) -> None:
    if value is None:
        raise DataException("Unable to convert a null value to a schema that requires a value")


class Values:
    """Static conversions between Connect values (see the module docstring)."""

    # -- conversions to one type --

    @staticmethod
    def convert_to_boolean(schema: Schema | None, value: Any) -> bool | None:
        """A BOOLEAN: booleans as they are, ``"true"``/``"false"``, numbers as ``!= 0``."""
        if value is None:
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            parsed = Values.parse_string(value)
            if isinstance(parsed.value, bool):
                return parsed.value
        return _as_long(value, schema) != 0

    @staticmethod
    def convert_to_byte(schema: Schema | None, value: Any) -> int | None:
        """An INT8, narrowing like Java's ``(byte)`` cast."""
        return None if value is None else wrap_int(_as_long(value, schema), 8)

    @staticmethod
    def convert_to_short(schema: Schema | None, value: Any) -> int | None:
        """An INT16, narrowing like Java's ``(short)`` cast."""
        return None if value is None else wrap_int(_as_long(value, schema), 16)

    @staticmethod
    def convert_to_integer(schema: Schema | None, value: Any) -> int | None:
        """An INT32, narrowing like Java's ``(int)`` cast."""
        return None if value is None else wrap_int(_as_long(value, schema), 32)

    @staticmethod
    def convert_to_long(schema: Schema | None, value: Any) -> int | None:
        """An INT64."""
        return None if value is None else _as_long(value, schema)

    @staticmethod
    def convert_to_float(schema: Schema | None, value: Any) -> float | None:
        """A FLOAT32 (a Python float holding a float32 value)."""
        return None if value is None else to_float32(_as_double(value, schema))

    @staticmethod
    def convert_to_double(schema: Schema | None, value: Any) -> float | None:
        """A FLOAT64."""
        return None if value is None else _as_double(value, schema)

    @staticmethod
    def convert_to_string(schema: Schema | None, value: Any) -> str | None:
        """The string form of any value, the one :meth:`parse_string` reads back."""
        if value is None:
            return None
        out: list[str] = []
        _append(out, value, False, schema)
        return "".join(out)

    @staticmethod
    def convert_to_list(schema: Schema | None, value: Any) -> list[Any]:
        """A list: lists as they are, strings parsed (``"[1, 2]"``)."""
        return _convert_to_array(_ARRAY_SELECTOR_SCHEMA, value)

    @staticmethod
    def convert_to_map(schema: Schema | None, value: Any) -> dict[Any, Any]:
        """A dict: mappings as they are, strings parsed (``"{"a": 1}"``)."""
        return _convert_to_map(_MAP_SELECTOR_SCHEMA, value)

    @staticmethod
    def convert_to_struct(schema: Schema | None, value: Any) -> Struct:
        """A struct; only a :class:`Struct` converts."""
        return _convert_to_struct(_STRUCT_SELECTOR_SCHEMA, value)

    @staticmethod
    def convert_to_time(schema: Schema | None, value: Any) -> datetime.time:
        """A Time value."""
        _require_value(value)
        return _convert_to_time(Time.SCHEMA, schema, value)

    @staticmethod
    def convert_to_date(schema: Schema | None, value: Any) -> datetime.date:
        """A Date value."""
        _require_value(value)
        return _convert_to_date(Date.SCHEMA, schema, value)

    @staticmethod
    def convert_to_timestamp(schema: Schema | None, value: Any) -> datetime.datetime:
        """A Timestamp value."""
        _require_value(value)
        return _convert_to_timestamp(Timestamp.SCHEMA, schema, value)

    @staticmethod
    def convert_to_decimal(schema: Schema | None, value: Any, scale: int) -> decimal.Decimal:
        """A Decimal value (the scale only matters when decoding bytes)."""
        _require_value(value)
        return _convert_to_decimal(Decimal.schema(scale), value)

    @staticmethod
    def convert_to(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
        """Convert ``value`` to the type of ``to_schema`` (Kafka's protected ``convertTo``).

        Raises:
            DataException: when the value cannot be converted, or is ``None`` for a required schema.
        """
        if value is None:
            if to_schema.is_optional:
                return None
            raise DataException("Unable to convert a null value to a schema that requires a value")
        t = to_schema.type
        if t is Type.BYTES:
            if to_schema.name == Decimal.LOGICAL_NAME:
                return _convert_to_decimal(to_schema, value)
            return _convert_to_bytes(to_schema, value)
        if t is Type.STRING:
            return Values.convert_to_string(from_schema, value)
        if t is Type.BOOLEAN:
            return Values.convert_to_boolean(from_schema, value)
        if t is Type.INT8:
            return Values.convert_to_byte(from_schema, value)
        if t is Type.INT16:
            return Values.convert_to_short(from_schema, value)
        if t is Type.INT32:
            if to_schema.name == Date.LOGICAL_NAME:
                return _convert_to_date(to_schema, from_schema, value)
            if to_schema.name == Time.LOGICAL_NAME:
                return _convert_to_time(to_schema, from_schema, value)
            return Values.convert_to_integer(from_schema, value)
        if t is Type.INT64:
            if to_schema.name == Timestamp.LOGICAL_NAME:
                return _convert_to_timestamp(to_schema, from_schema, value)
            return Values.convert_to_long(from_schema, value)
        if t is Type.FLOAT32:
            return Values.convert_to_float(from_schema, value)
        if t is Type.FLOAT64:
            return Values.convert_to_double(from_schema, value)
        if t is Type.ARRAY:
            return _convert_to_array(to_schema, value)
        if t is Type.MAP:
            return _convert_to_map(to_schema, value)
        return _convert_to_struct(to_schema, value)

    # -- schemas and strings --

    @staticmethod
    def infer_schema(value: Any) -> Schema | None:
        """The schema of a value when it can be told from the value alone, else ``None``.

        Python ints infer INT64 and floats FLOAT64; lists and dicts whose elements share a type infer
        an ARRAY or MAP of that type; an empty list or dict, and logical values, infer nothing.
        """
        if isinstance(value, str):
            return Schema.STRING_SCHEMA
        if isinstance(value, bool):
            return Schema.BOOLEAN_SCHEMA
        if isinstance(value, int):
            return Schema.INT64_SCHEMA
        if isinstance(value, float):
            return Schema.FLOAT64_SCHEMA
        if isinstance(value, (bytes, bytearray)):
            return Schema.BYTES_SCHEMA
        if isinstance(value, (list, tuple)):
            if not value:
                return None
            detector = _SchemaDetector()
            if not all(detector.can_detect(e) for e in value):
                return None
            return SchemaBuilder.array(detector.schema()).build()
        if isinstance(value, Mapping):
            if not value:
                return None
            keys, values = _SchemaDetector(), _SchemaDetector()
            for k, v in value.items():
                if not keys.can_detect(k) or not values.can_detect(v):
                    return None
            return SchemaBuilder.map(keys.schema(), values.schema()).build()
        if isinstance(value, Struct):
            return value.schema
        return None

    @staticmethod
    def parse_string(value: str | None) -> SchemaAndValue:
        """Infer the schema and value a string represents (see the module docstring).

        ``None`` and the literal ``null`` give ``SchemaAndValue(None, None)``; the empty string is a
        STRING.
        """
        if value is None:
            return _NULL
        if not value:
            return SchemaAndValue(Schema.STRING_SCHEMA, value)
        parsed = _ValueParser(ValueTokenizer(value)).parse(False)
        return _NULL if parsed is None else parsed

    @staticmethod
    def format_temporal(value: datetime.date | datetime.time) -> str:
        """A date, time or datetime in Connect's ISO-8601 forms, chosen as Kafka's ``dateFormatFor``.

        Kafka only sees the instant: an instant before 1970-01-02 prints as a time
        (``HH:mm:ss.SSS'Z'``), one at midnight as a date (``yyyy-MM-dd``), any other as a timestamp
        (``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``), all in UTC.
        """
        millis = logical_to_millis(value)
        assert millis is not None
        return format_millis(millis)


def format_millis(millis: int) -> str:
    """Format epoch milliseconds the way ``Values.dateFormatFor(date).format(date)`` does (in UTC)."""
    moment = to_utc_datetime(millis)
    millis_part = f"{moment.microsecond // 1000:03d}"
    if millis < MILLIS_PER_DAY:
        return f"{moment:%H:%M:%S}.{millis_part}Z"
    if millis % MILLIS_PER_DAY == 0:
        return f"{moment.year:04d}-{moment:%m-%d}"
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{millis_part}Z"


# --- numeric helpers ----------------------------------------------------------------------------


def _as_long(value: Any, from_schema: Schema | None) -> int:
    error: Exception | None = None
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return wrap_int(value, 64)
        if isinstance(value, float):
            return double_to_long(value)
        if isinstance(value, decimal.Decimal):
            return decimal_long_value(value)
        if isinstance(value, str):
            return decimal_long_value(parse_big_decimal(value))
    except ValueError as e:
        error = e
    if from_schema is not None:
        name = from_schema.name
        if isinstance(value, _TEMPORAL):
            if name == Date.LOGICAL_NAME:
                return Date.from_logical(from_schema, value)  # type: ignore[arg-type]
            if name == Time.LOGICAL_NAME:
                return Time.from_logical(from_schema, value)  # type: ignore[arg-type]
            if name == Timestamp.LOGICAL_NAME:
                return Timestamp.from_logical(from_schema, value)  # type: ignore[arg-type]
        raise _cannot(value, from_schema) from error
    raise DataException(f"Unable to convert {value} ({_class_name(value)}) to a number") from error


def _as_double(value: Any, schema: Schema | None) -> float:
    try:
        if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return float(parse_big_decimal(value))
    except (ValueError, OverflowError):
        pass  # fall back to the long conversion, which explains the failure
    return float(_as_long(value, schema))


# --- structured and logical conversions ---------------------------------------------------------


def _convert_to_bytes(to_schema: Schema, value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, decimal.Decimal):
        return Decimal.from_logical(to_schema, value)
    raise _cannot(value, to_schema)


def _convert_to_decimal(to_schema: Schema, value: Any) -> decimal.Decimal:
    if isinstance(value, (bytes, bytearray)):
        return Decimal.to_logical(to_schema, bytes(value))
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Kafka goes through the double and BigDecimal.valueOf(double), i.e. Double.toString.
        return decimal.Decimal(java_double_str(float(value)))
    if isinstance(value, str):
        try:
            return parse_big_decimal(value)
        except ValueError as e:
            raise _cannot(value, to_schema) from e
    raise _cannot(value, to_schema)


def _parsed_if_string(value: Any) -> Any:
    return Values.parse_string(value).value if isinstance(value, str) else value


def _convert_to_date(to_schema: Schema, from_schema: Schema | None, value: Any) -> datetime.date:
    value = _parsed_if_string(value)
    if isinstance(value, _TEMPORAL):
        if from_schema is None:
            return _as_date(value)
        if from_schema.name == Date.LOGICAL_NAME:
            return _as_date(value)
        if from_schema.name == Timestamp.LOGICAL_NAME:
            millis = Timestamp.from_logical(from_schema, value)  # type: ignore[arg-type]
            return Date.to_logical(to_schema, int(millis / MILLIS_PER_DAY))
    return Date.to_logical(to_schema, wrap_int(_as_long(value, from_schema), 32))


def _convert_to_time(to_schema: Schema, from_schema: Schema | None, value: Any) -> datetime.time:
    value = _parsed_if_string(value)
    if isinstance(value, _TEMPORAL):
        if from_schema is None or from_schema.name in (Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
            millis = logical_to_millis(value)
            assert millis is not None
            return Time.to_logical(to_schema, millis % MILLIS_PER_DAY)
    return Time.to_logical(to_schema, wrap_int(_as_long(value, from_schema), 32))


def _convert_to_timestamp(to_schema: Schema, from_schema: Schema | None, value: Any) -> datetime.datetime:
    value = _parsed_if_string(value)
    if isinstance(value, _TEMPORAL):
        if from_schema is None or from_schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
            millis = logical_to_millis(value)
            assert millis is not None
            return Timestamp.to_logical(to_schema, millis)
    return Timestamp.to_logical(to_schema, _as_long(value, from_schema))


def _as_date(value: datetime.date | datetime.time) -> datetime.date:
    millis = logical_to_millis(value)
    assert millis is not None
    return Date.to_logical(Date.SCHEMA, millis // MILLIS_PER_DAY)


def _convert_to_array(to_schema: Schema, value: Any) -> list[Any]:
    _require_value(value)
    value = _parsed_if_string(value)
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    raise _cannot(value, to_schema)


def _convert_to_map(to_schema: Schema, value: Any) -> dict[Any, Any]:
    _require_value(value)
    value = _parsed_if_string(value)
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise _cannot(value, to_schema)


def _convert_to_struct(to_schema: Schema, value: Any) -> Struct:
    _require_value(value)
    if isinstance(value, Struct):
        return value
    raise _cannot(value, to_schema)


# --- rendering ----------------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _append(out: list[str], value: Any, embedded: bool, schema: Schema | None = None) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        is_float32 = schema is not None and schema.type is Type.FLOAT32
        out.append(java_float_str(value) if is_float32 else java_double_str(value))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, (bytes, bytearray)):
        encoded = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{encoded}"' if embedded else encoded)
    elif isinstance(value, (list, tuple)):
        element_schema = _child_schema(schema, Type.ARRAY)
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _append(out, element, True, element_schema)
        out.append("]")
    elif isinstance(value, Mapping):
        key_schema = schema.key_schema if schema is not None and schema.type is Type.MAP else None
        item_schema = _child_schema(schema, Type.MAP)
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, k, True, key_schema)
            out.append(":")
            _append(out, v, True, item_schema)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, field in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, field.name, True)
            out.append(":")
            _append(out, value.get(field), True, field.schema)
        out.append("}")
    elif isinstance(value, _TEMPORAL):
        out.append(Values.format_temporal(value))
    else:
        raise DataException(f"Failed to serialize unexpected value type {type(value).__name__}: {value}")


def _child_schema(schema: Schema | None, expected: Type) -> Schema | None:
    if schema is None or schema.type is not expected:
        return None
    return schema.value_schema


# --- schema inference helpers -------------------------------------------------------------------


class _SchemaDetector:
    """Finds the single type shared by a collection's elements (Kafka's ``SchemaDetector``)."""

    def __init__(self) -> None:
        self.known_type: Type | None = None
        self.optional = False

    def can_detect(self, value: Any) -> bool:
        if value is None:
            self.optional = True
            return True
        schema = Values.infer_schema(value)
        if schema is None:
            return False
        if self.known_type is None:
            self.known_type = schema.type
        elif self.known_type is not schema.type:
            return False
        return True

    def schema(self) -> Schema:
        builder = SchemaBuilder(self.known_type)  # type: ignore[arg-type]
        if self.optional:
            builder.optional()
        return builder.build()


class _SchemaMerger:
    """Merges the schemas of parsed elements into one common schema (Kafka's ``SchemaMerger``)."""

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is not None and latest.schema is not None and self.compatible:
            if self.common is None:
                self.common = latest.schema
            else:
                self.common = _merge_schemas(self.common, latest.schema)
                self.compatible = self.common is not None

    def has_common_schema(self) -> bool:
        return self.common is not None


_NUMERIC_RANK = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3, Type.FLOAT32: 4, Type.FLOAT64: 5}


def _merge_schemas(previous: Schema, new: Schema) -> Schema | None:
    if previous.type is not new.type:
        if previous.type in _NUMERIC_RANK and new.type in _NUMERIC_RANK:
            return previous if _NUMERIC_RANK[previous.type] > _NUMERIC_RANK[new.type] else new
        return None
    if previous.is_optional == new.is_optional:
        return previous if previous.is_optional else new
    if previous != new:
        return None
    return previous


def _align_list(schema: Schema, values: list[Any]) -> list[Any]:
    element_schema = schema.value_schema
    assert element_schema is not None
    return [Values.convert_to(element_schema, None, v) for v in values]


def _align_map(schema: Schema, values: dict[Any, Any], keys_only: bool) -> dict[Any, Any]:
    key_schema, value_schema = schema.key_schema, schema.value_schema
    assert key_schema is not None
    result = {}
    for k, v in values.items():
        new_key = Values.convert_to(key_schema, None, k)
        result[new_key] = v if keys_only else Values.convert_to(value_schema, None, v)  # type: ignore[arg-type]
    return result


# --- the parser (a port of Kafka's Values.Parser / ValueParser state machine) -------------------

_DELIMITERS = frozenset(':,{}[]"')


class ValueTokenizer:
    """Splits a string into tokens at ``: , { } [ ] "`` (unless escaped by a backslash)."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.pos = 0
        self.end = len(original)
        self.next_token: str | None = None
        self.previous_token: str | None = None

    def position(self) -> int:
        return self.pos

    def mark(self) -> int:
        return self.pos - (len(self.next_token) if self.next_token is not None else 0)

    def rewind_to(self, position: int) -> None:
        self.pos = position
        self.next_token = None
        self.previous_token = None

    def has_next(self) -> bool:
        return self.next_token is not None or self.pos < self.end

    def next(self) -> str:
        if self.next_token is not None:
            self.previous_token = self.next_token
            self.next_token = None
        else:
            self.previous_token = self._consume_next_token()
        return self.previous_token

    def next_n(self, count: int) -> str | None:
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start : self.position()]

    def _consume_next_token(self) -> str:
        escaped = False
        start = self.pos
        text = self.original
        while self.pos < self.end:
            char = text[self.pos]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS:
                if not escaped:
                    if start < self.pos:
                        return text[start : self.pos]
                    self.pos += 1
                    return text[start : start + 1]
                escaped = False
            else:
                escaped = False
            self.pos += 1
        return text[start : self.pos]

    def can_consume(self, expected: str) -> bool:
        if self._is_next(expected):
            self.next_token = None
            return True
        return False

    def _is_next(self, expected: str) -> bool:
        if self.next_token is None:
            if not self.has_next():
                return False
            self.next_token = self._consume_next_token()
        while is_blank(self.next_token) and self.pos < self.end:
            self.next_token = self._consume_next_token()
        return java_trim(self.next_token) == expected


class _ValueParser:
    def __init__(self, parser: ValueTokenizer) -> None:
        self.parser = parser

    def _can_parse_single_token_literal(self, embedded: bool, literal: str) -> bool:
        start = self.parser.mark()
        if self.parser.can_consume(literal):
            # A top-level literal must be the whole string: "true}" is a string, not true.
            if embedded or not self.parser.has_next():
                return True
        self.parser.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        parser = self.parser
        if not parser.has_next():
            return None
        if embedded and parser.can_consume('"'):
            return self._parse_quoted_string()
        if self._can_parse_single_token_literal(embedded, "null"):
            return None
        if self._can_parse_single_token_literal(embedded, "true"):
            return _TRUE
        if self._can_parse_single_token_literal(embedded, "false"):
            return _FALSE

        start = parser.mark()
        try:
            if parser.can_consume("["):
                return self._parse_array()
            if parser.can_consume("{"):
                return self._parse_map()
        except DataException:
            log.debug("Unable to parse the value as a map or an array; reverting to string", exc_info=True)
            parser.rewind_to(start)

        token = parser.next()
        if is_blank(token):
            return SchemaAndValue(Schema.STRING_SCHEMA, token)
        return self._parse_next_token(embedded, java_trim(token))

    def _parse_next_token(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        first_is_digit = first.isdecimal()
        if first_is_digit:
            temporal = self._parse_multiple_tokens_as_temporal(token)
            if temporal is not None:
                return temporal
        if first_is_digit or first in "+-":
            number = _parse_as_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataException("Failed to parse embedded value")
        return SchemaAndValue(Schema.STRING_SCHEMA, self.parser.original)

    def _parse_quoted_string(self) -> SchemaAndValue:
        parts = []
        while self.parser.has_next():
            if self.parser.can_consume('"'):
                break
            parts.append(self.parser.next())
        content = "".join(parts)
        temporal = _parse_as_temporal(content)
        if temporal is not None:
            return temporal
        return SchemaAndValue(Schema.STRING_SCHEMA, content)

    def _parse_array(self) -> SchemaAndValue:
        parser = self.parser
        result: list[Any] = []
        element_schema = _SchemaMerger()
        while parser.has_next():
            if parser.can_consume("]"):
                if element_schema.has_common_schema():
                    list_schema: Schema = SchemaBuilder.array(element_schema.common).build()  # type: ignore[arg-type]
                    result = _align_list(list_schema, result)
                else:
                    list_schema = ConnectSchema(Type.ARRAY)  # every element is null
                return SchemaAndValue(list_schema, result)
            if parser.can_consume(","):
                raise DataException(f"Unable to parse an empty array element: {parser.original}")
            element = self.parse(True)
            element_schema.merge(element)
            result.append(None if element is None else element.value)
            position = parser.mark()
            if parser.can_consume("]"):
                parser.rewind_to(position)
            elif not parser.can_consume(","):
                raise DataException("Array elements missing ',' delimiter")
        if parser.previous_token == ",":
            raise DataException(f"Array is missing element after ',': {parser.original}")
        raise DataException(f"Array is missing terminating ']': {parser.original}")

    def _parse_map(self) -> SchemaAndValue:
        parser = self.parser
        result: dict[Any, Any] = {}
        key_schema = _SchemaMerger()
        value_schema = _SchemaMerger()
        while parser.has_next():
            if parser.can_consume("}"):
                if key_schema.has_common_schema() and value_schema.has_common_schema():
                    map_schema: Schema = SchemaBuilder.map(
                        key_schema.common, value_schema.common  # type: ignore[arg-type]
                    ).build()
                    result = _align_map(map_schema, result, keys_only=False)
                elif key_schema.has_common_schema():
                    map_schema = ConnectSchema(Type.MAP, key_schema=key_schema.common)
                    result = _align_map(map_schema, result, keys_only=True)
                else:
                    map_schema = ConnectSchema(Type.MAP)
                return SchemaAndValue(map_schema, result)
            if parser.can_consume(","):
                raise DataException(f"Unable to parse a map entry with no key or value: {parser.original}")
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataException(f"Map entry may not have a null key: {parser.original}")
            if not parser.can_consume(":"):
                raise DataException(f"Map entry is missing ':' at {parser.position()} in {parser.original}")
            value = self.parse(True)
            try:
                result[key.value] = None if value is None else value.value
            except TypeError as e:  # an unhashable key (a list or a map)
                raise DataException(f"Map keys must be hashable: {parser.original}") from e
            parser.can_consume(",")
            key_schema.merge(key)
            value_schema.merge(value)
        if parser.previous_token == ",":
            raise DataException(f"Map is missing element after ',': {parser.original}")
        raise DataException(f"Map is missing terminating '}}': {parser.original}")

    def _parse_multiple_tokens_as_temporal(self, token: str) -> SchemaAndValue | None:
        # Times and timestamps are split into 5 tokens at their unescaped colons.
        position = self.parser.mark()
        remainder = self.parser.next_n(4)
        if remainder is not None:
            temporal = _parse_as_temporal(token + remainder)
            if temporal is not None:
                return temporal
        self.parser.rewind_to(position)
        return _parse_as_temporal(token)


def _parse_as_number(token: str) -> SchemaAndValue | None:
    try:
        number = parse_big_decimal(token)
    except ValueError:
        return None
    exact = _parse_as_exact_decimal(number)
    if exact is not None:
        return exact
    scale = -int(number.as_tuple().exponent)
    double = float(number)
    single = to_float32(double)
    if scale != 0 and single not in (float("inf"), float("-inf")):
        return SchemaAndValue(Schema.FLOAT32_SCHEMA, single)
    if scale != 0 and double not in (float("inf"), float("-inf")):
        return SchemaAndValue(Schema.FLOAT64_SCHEMA, double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _parse_as_exact_decimal(number: decimal.Decimal) -> SchemaAndValue | None:
    magnitude = abs(number)
    if magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and magnitude != 0):
        return None
    if number != number.to_integral_value():
        return None
    integral = int(number)
    if not _LONG_MIN <= integral <= _LONG_MAX:
        return None
    if -(2**7) <= integral < 2**7:
        return SchemaAndValue(Schema.INT8_SCHEMA, integral)
    if -(2**15) <= integral < 2**15:
        return SchemaAndValue(Schema.INT16_SCHEMA, integral)
    if -(2**31) <= integral < 2**31:
        return SchemaAndValue(Schema.INT32_SCHEMA, integral)
    return SchemaAndValue(Schema.INT64_SCHEMA, integral)


def _lenient_millis(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
                    millis: int = 0) -> int | None:
    """Epoch millis of possibly out-of-range fields, rolled over the way a lenient Java calendar does."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    try:
        first = datetime.date(year, month, 1)
    except ValueError:
        return None
    days = (first - datetime.date(1970, 1, 1)).days + day - 1
    return (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millis


def _parse_as_temporal(token: str | None) -> SchemaAndValue | None:
    if token is None:
        return None
    token = token.replace("\\:", ":")
    length = len(token)
    try:
        if length == _ISO_TIME_LENGTH:
            match = _TIME_RE.match(token)
            if match:
                hour, minute, second, millis = (int(g) for g in match.groups())
                total = _lenient_millis(1970, 1, 1, hour, minute, second, millis)
                if total is not None and 0 <= total < MILLIS_PER_DAY:
                    return SchemaAndValue(Time.SCHEMA, Time.to_logical(Time.SCHEMA, total))
        elif length == _ISO_TIMESTAMP_LENGTH:
            match = _TIMESTAMP_RE.match(token)
            if match:
                total = _lenient_millis(*(int(g) for g in match.groups()))
                if total is not None:
                    return SchemaAndValue(Timestamp.SCHEMA, Timestamp.to_logical(Timestamp.SCHEMA, total))
        elif length == _ISO_DATE_LENGTH:
            match = _DATE_RE.match(token)
            if match:
                total = _lenient_millis(*(int(g) for g in match.groups()))
                if total is not None:
                    return SchemaAndValue(Date.SCHEMA, Date.to_logical(Date.SCHEMA, total // MILLIS_PER_DAY))
    except DataException:
        return None
    return None
