"""Debezium's semantic types: which column each one becomes, and its values' conversions both ways.

Debezium's change events carry primitive Connect schemas whose *name* says what the primitive means (an
``io.debezium.time.MicroTimestamp`` is an INT64 of microseconds). Kafka Connect itself does not know these
names; this module is the one place connect_spark declares them. It is consulted wherever a Connect schema
becomes a column: :mod:`connect_spark.columnar.types` (Spark and Arrow types, so Delta, Iceberg and the
Parquet files), :mod:`connect_spark.columnar.record_column` (records → Arrow), the vectorized plan
(:mod:`connect_spark.columnar.semantic_columns`), :mod:`connect_spark.columnar.records` (frame → records) and
the JDBC sink (:mod:`connect_spark.connectors.jdbc.postgres`, :mod:`connect_spark.connectors.jdbc.rows`).

=================================== ============================ ================= ========================
Name                                Encoding                     Column (Spark)    PostgreSQL (JDBC sink)
=================================== ============================ ================= ========================
``io.debezium.time.Date``           INT32 days since 1970-01-01  date              date
``io.debezium.time.Time``           INT32 ms of the day          int (ms)          time
``io.debezium.time.MicroTime``      INT64 µs of the day          bigint (µs)       time
``io.debezium.time.NanoTime``       INT64 ns of the day          bigint (ns)       time
``io.debezium.time.Timestamp``      INT64 ms, local date-time    timestamp_ntz     timestamp
``io.debezium.time.MicroTimestamp`` INT64 µs, local date-time    timestamp_ntz     timestamp
``io.debezium.time.NanoTimestamp``  INT64 ns, local date-time    timestamp_ntz     timestamp
``io.debezium.time.ZonedTimestamp`` STRING ISO-8601 with offset  timestamp (UTC)   timestamptz
``io.debezium.time.ZonedTime``      STRING ISO-8601 with offset  string            timetz
``io.debezium.time.Year``           INT32                        int               integer
``io.debezium.data.VariableScale…`` STRUCT {scale, value bytes}  decimal(38,18)    numeric
``io.debezium.data.Json``           STRING                       string            json (jsonb)
``io.debezium.data.Uuid``           STRING                       string            uuid
``io.debezium.data.Enum``           STRING (``allowed``)         string            text
``io.debezium.data.Bits``           BYTES (``length``)           binary            bit(n) / bit varying
=================================== ============================ ================= ========================

A "local date-time" is the source's wall clock counted as if it were UTC (PostgreSQL ``timestamp`` without
zone): it becomes a ``timestamp_ntz``, which shows the same digits in every session time zone. A
ZonedTimestamp is an instant and becomes a ``timestamp`` (microseconds since the epoch, UTC). Spark 4.0 has
no time-of-day type, so the three times stay their encodings, as Kafka's ``Time`` does in a frame.

Conversions (all pure Python, no pyspark):

* :func:`to_column_value` — a Connect value to what the column holds, in the form Arrow builds a column from
  (days for a date, microseconds for a timestamp, a ``decimal.Decimal`` of scale 18). A value the column cannot
  hold raises :class:`SemanticValueError` (a ``DataException``): the caller reports the record under
  ``errors.*``. That is: a date or timestamp outside the years 1-9999, a ZonedTimestamp that is not an
  ISO-8601 date-time with an offset (``infinity`` included), a VariableScaleDecimal with more than 18 digits
  after the point or more than 20 before it (after dropping zeros it can lose exactly).
* :func:`from_column_value` — a column value (as Arrow's ``to_pylist`` gives it) back to the Connect value.
  Exact for every value the vectorized plan lets through (it proves the round trip per row); for a
  NanoTimestamp the nanoseconds below a microsecond are gone (floored), a ZonedTimestamp comes back in UTC
  (``Z``, fraction without trailing zeros, as Java's ``ISO_OFFSET_DATE_TIME`` writes it), a
  VariableScaleDecimal with its smallest scale.
* :func:`to_logical` — a Connect value to the Python object it means (``datetime.date``, naive or UTC
  ``datetime.datetime``, ``datetime.time``, ``decimal.Decimal``), for database drivers.
"""

from __future__ import annotations

import datetime
import decimal as _decimal
import re
from dataclasses import dataclass
from typing import Any

from connect_spark.api.data.logical import decimal_from_unscaled, unscaled_to_bytes
from connect_spark.api.data.schema import Schema, Type
from connect_spark.api.errors import DataException

__all__ = [
    "DATE", "TIME", "MICRO_TIME", "NANO_TIME", "TIMESTAMP", "MICRO_TIMESTAMP", "NANO_TIMESTAMP", "ZONED_TIMESTAMP",
    "ZONED_TIME", "YEAR", "VARIABLE_SCALE_DECIMAL", "JSON", "UUID", "ENUM", "BITS",
    "SemanticType", "SemanticValueError", "SEMANTIC_TYPES", "semantic_type", "has_semantic_types",
    "to_column_value", "from_column_value", "to_logical", "parse_zoned_timestamp", "format_zoned_timestamp",
    "CANONICAL_ZONED_TIMESTAMP", "DECIMAL_PRECISION", "DECIMAL_SCALE", "MIN_MICROS", "MAX_MICROS", "MIN_DAY",
    "MAX_DAY", "MICROS_PER_DAY", "bits_text", "SOURCE_COLUMN_TYPE",
]

DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
NANO_TIME = "io.debezium.time.NanoTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
YEAR = "io.debezium.time.Year"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
JSON = "io.debezium.data.Json"
UUID = "io.debezium.data.Uuid"
ENUM = "io.debezium.data.Enum"
BITS = "io.debezium.data.Bits"

#: The schema parameter Debezium sets with ``column.propagate.source.type`` (e.g. ``JSONB``, ``VARBIT``).
SOURCE_COLUMN_TYPE = "__debezium.source.column.type"

#: The decimal column a VariableScaleDecimal becomes: 20 digits before the point, 18 after.
DECIMAL_PRECISION, DECIMAL_SCALE = 38, 18

MICROS_PER_DAY = 86_400_000_000
#: Days since 1970-01-01 of 0001-01-01 and 9999-12-31: the dates a date column holds (Spark's, Python's).
MIN_DAY, MAX_DAY = -719_162, 2_932_896
#: Microseconds since the epoch of 0001-01-01T00:00 and 9999-12-31T23:59:59.999999: a timestamp column's range.
MIN_MICROS, MAX_MICROS = MIN_DAY * MICROS_PER_DAY, (MAX_DAY + 1) * MICROS_PER_DAY - 1

#: A ZonedTimestamp exactly as :func:`format_zoned_timestamp` writes it (and so as Java's
#: ``ISO_OFFSET_DATE_TIME`` writes a UTC instant): the plan converts these strings in Spark and sends the
#: others to the per-record path. Valid in Python's and Java's regular expressions.
CANONICAL_ZONED_TIMESTAMP = (r"^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3])"
                             r":[0-5][0-9]:[0-5][0-9](\.[0-9]{0,5}[1-9])?Z$")


class SemanticValueError(DataException):
    """A value of a semantic type that its column cannot hold (the record goes where ``errors.*`` says)."""


@dataclass(frozen=True)
class SemanticType:
    """One Debezium name: its Connect encoding, its column and its PostgreSQL type.

    Attributes:
        name: the schema name.
        encoding: the Connect type of its values.
        column: the column kind, one of ``date``, ``int``, ``bigint``, ``timestamp_ntz``, ``timestamp``,
            ``string``, ``binary``, ``decimal`` (``decimal(38,18)``); :mod:`connect_spark.columnar.types`
            turns it into Spark and Arrow types.
        postgres: the PostgreSQL column type the JDBC sink creates (Bits and Json refine it per schema:
            :func:`postgres_type`).
        unit: for times and timestamps, how many of the encoding's units make one microsecond (``1``),
            or how many microseconds one unit is (negative: ``-1000`` for milliseconds).
    """

    name: str
    encoding: Type
    column: str
    postgres: str
    unit: int = 1


SEMANTIC_TYPES: dict[str, SemanticType] = {t.name: t for t in (
    SemanticType(DATE, Type.INT32, "date", "date"),
    SemanticType(TIME, Type.INT32, "int", "time", -1000),
    SemanticType(MICRO_TIME, Type.INT64, "bigint", "time", 1),
    SemanticType(NANO_TIME, Type.INT64, "bigint", "time", 1000),
    SemanticType(TIMESTAMP, Type.INT64, "timestamp_ntz", "timestamp", -1000),
    SemanticType(MICRO_TIMESTAMP, Type.INT64, "timestamp_ntz", "timestamp", 1),
    SemanticType(NANO_TIMESTAMP, Type.INT64, "timestamp_ntz", "timestamp", 1000),
    SemanticType(ZONED_TIMESTAMP, Type.STRING, "timestamp", "timestamptz"),
    SemanticType(ZONED_TIME, Type.STRING, "string", "timetz"),
    SemanticType(YEAR, Type.INT32, "int", "integer"),
    SemanticType(VARIABLE_SCALE_DECIMAL, Type.STRUCT, "decimal", "numeric"),
    SemanticType(JSON, Type.STRING, "string", "json"),
    SemanticType(UUID, Type.STRING, "string", "uuid"),
    SemanticType(ENUM, Type.STRING, "string", "text"),
    SemanticType(BITS, Type.BYTES, "binary", "bit varying"),
)}


def semantic_type(schema: Schema | None) -> SemanticType | None:
    """The semantic type ``schema`` carries, or ``None``: a known name on its encoding's type (a
    VariableScaleDecimal also needs its ``scale`` INT32 and ``value`` BYTES fields). A schema that borrows
    a name on another type is a plain schema."""
    if schema is None or schema.name is None:
        return None
    found = SEMANTIC_TYPES.get(schema.name)
    if found is None or schema.type is not found.encoding:
        return None
    if found.name == VARIABLE_SCALE_DECIMAL:
        scale, value = schema.field("scale"), schema.field("value")
        if scale is None or value is None or scale.schema.type is not Type.INT32 or value.schema.type is not Type.BYTES:
            return None
    return found


def has_semantic_types(schema: Schema | None) -> bool:
    """Whether ``schema`` or anything inside it (fields, elements, keys, values) is a semantic type."""
    if schema is None:
        return False
    if semantic_type(schema) is not None:
        return True
    if schema.type is Type.STRUCT:
        return any(has_semantic_types(f.schema) for f in schema.fields)
    if schema.type is Type.ARRAY:
        return has_semantic_types(schema.value_schema)
    if schema.type is Type.MAP:
        return has_semantic_types(schema.key_schema) or has_semantic_types(schema.value_schema)
    return False


def postgres_type(semantic: SemanticType, schema: Schema) -> str:
    """The PostgreSQL column type for a value of ``schema`` (whose semantic type is ``semantic``).

    As Debezium's JDBC sink: Json is ``json``, or ``jsonb`` when the source column was (Debezium's
    ``column.propagate.source.type``); Bits is ``bit(n)``, ``bit varying(n)`` for a source ``VARBIT``, ``bit
    varying`` without a length. Where Debezium's sink creates ``double precision`` for a VariableScaleDecimal
    (it lacks a fixed scale), PostgreSQL's unconstrained ``numeric`` holds every value exactly.
    """
    source = ((schema.parameters or {}).get(SOURCE_COLUMN_TYPE) or "").upper()
    if semantic.name == JSON:
        return "jsonb" if source == "JSONB" else "json"
    if semantic.name == BITS:
        length = _bits_length(schema)
        if length is None:
            return "bit varying"
        return f"bit varying({length})" if source == "VARBIT" else f"bit({length})"
    return semantic.postgres


def _bits_length(schema: Schema) -> int | None:
    text = (schema.parameters or {}).get("length")
    try:
        length = int(text) if text is not None else None
    except ValueError:
        return None
    return None if length is None or length <= 0 or length >= 2**31 - 1 else length


# --- ZonedTimestamp text ----------------------------------------------------------------------------

_ZONED = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?"
                    r"(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2})(?::?([0-9]{2}))?)?)")
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_ONE_MICRO = datetime.timedelta(microseconds=1)


def parse_zoned_timestamp(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 date-time with an offset (what Java's
    ``ISO_OFFSET_DATE_TIME`` reads: ``2024-01-02T03:04:05.123456+02:00``, ``...Z``, seconds optional, offsets
    ``±HH``, ``±HH:MM``, ``±HH:MM:SS``), nanoseconds floored to the microsecond.

    Raises:
        SemanticValueError: for other text, a date or time that does not exist, an instant outside the years 1-9999.
    """
    m = _ZONED.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise SemanticValueError(f"{ZONED_TIMESTAMP} value {text!r} is not an ISO-8601 date-time with an offset")
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6) or 0)
    fraction = (m.group(7) or "").ljust(9, "0")
    try:
        days = (datetime.date(year, month, day) - _EPOCH_DATE).days
    except ValueError:
        raise SemanticValueError(f"{ZONED_TIMESTAMP} value {text!r} names a date that does not exist") from None
    if hour > 23 or minute > 59 or second > 59:
        raise SemanticValueError(f"{ZONED_TIMESTAMP} value {text!r} names a time that does not exist")
    offset = 0
    if m.group(9):
        hours, minutes, seconds = int(m.group(10)), int(m.group(11) or 0), int(m.group(12) or 0)
        if hours > 18 or minutes > 59 or seconds > 59 or hours * 3600 + minutes * 60 + seconds > 18 * 3600:
            raise SemanticValueError(f"{ZONED_TIMESTAMP} value {text!r} has an offset beyond ±18:00")
        offset = (hours * 3600 + minutes * 60 + seconds) * (1 if m.group(9) == "+" else -1)
    micros = (days * 86_400 + hour * 3600 + minute * 60 + second - offset) * 1_000_000 + int(fraction) // 1000
    return _in_timestamp_range(micros, ZONED_TIMESTAMP, text)


def format_zoned_timestamp(micros: int) -> str:
    """The UTC instant ``micros`` µs after the epoch as Java's ``ISO_OFFSET_DATE_TIME`` writes it
    (``2024-01-02T01:04:05.12345Z``: seconds always, the fraction without trailing zeros)."""
    value = _EPOCH_NAIVE + datetime.timedelta(microseconds=micros)
    text = value.strftime("%Y-%m-%dT%H:%M:%S") if value.year >= 1000 else (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def _in_timestamp_range(micros: int, name: str, value: Any) -> int:
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise SemanticValueError(f"{name} value {value!r} is outside the years 1-9999 a timestamp column holds")
    return micros


# --- values -----------------------------------------------------------------------------------------


def _scaled_micros(semantic: SemanticType, value: int) -> int:
    """``value`` (in the encoding's unit) in microseconds, floored."""
    unit = semantic.unit
    return value * -unit if unit < 0 else value // unit


def to_column_value(semantic: SemanticType, value: Any) -> Any:
    """What the column of ``semantic`` holds for the Connect value ``value`` (not null), as Arrow builds it:
    days for a date, microseconds for a timestamp, a ``Decimal`` of scale 18 for a VariableScaleDecimal, the
    value itself for the others.

    Raises:
        SemanticValueError: the column cannot hold it (see the module docstring).
    """
    column = semantic.column
    if column == "timestamp_ntz":
        return _in_timestamp_range(_scaled_micros(semantic, value), semantic.name, value)
    if column == "date":
        if not MIN_DAY <= value <= MAX_DAY:
            raise SemanticValueError(f"{semantic.name} value {value!r} is outside the years 1-9999 a date column holds")
        return value
    if column == "timestamp":
        return parse_zoned_timestamp(value)
    if column == "decimal":
        return _fixed_scale(value)
    return value


def _fixed_scale(value: Any) -> _decimal.Decimal:
    scale, raw = value.get("scale"), value.get("value")
    if scale is None or raw is None:
        raise SemanticValueError(f"{VARIABLE_SCALE_DECIMAL} value has no {'scale' if scale is None else 'value'}")
    unscaled = int.from_bytes(raw, "big", signed=True)
    column = f"decimal({DECIMAL_PRECISION},{DECIMAL_SCALE})"
    if scale <= DECIMAL_SCALE:
        fixed = unscaled * 10 ** (DECIMAL_SCALE - scale)
    else:
        fixed, dropped = divmod(unscaled, 10 ** (scale - DECIMAL_SCALE))
        if dropped:
            raise SemanticValueError(f"{VARIABLE_SCALE_DECIMAL} value {decimal_from_unscaled(unscaled, scale)} has "
                                     f"more than {DECIMAL_SCALE} digits after the point, which its {column} column "
                                     "cannot hold")
    if abs(fixed) >= 10 ** DECIMAL_PRECISION:
        raise SemanticValueError(f"{VARIABLE_SCALE_DECIMAL} value {decimal_from_unscaled(unscaled, scale)} has more "
                                 f"than {DECIMAL_PRECISION - DECIMAL_SCALE} digits before the point, which its "
                                 f"{column} column cannot hold")
    unscaled = fixed
    return decimal_from_unscaled(unscaled, DECIMAL_SCALE)


def _micros_of(value: Any) -> int:
    """Microseconds since the epoch of a datetime (naive: as if UTC), or the int itself."""
    if isinstance(value, datetime.datetime):
        return (value - (_EPOCH_NAIVE if value.tzinfo is None else _EPOCH_UTC)) // _ONE_MICRO
    return value


def from_column_value(semantic: SemanticType, value: Any, schema: Schema | None = None) -> Any:
    """The Connect value of a column value of ``semantic`` (not null; as Arrow's ``to_pylist`` gives it, or
    already the encoding). ``schema``: a VariableScaleDecimal's schema, for its Struct.

    A VariableScaleDecimal is returned as a dict ``{"scale", "value"}`` when no schema is given.
    """
    column = semantic.column
    if column == "timestamp_ntz":
        micros = _micros_of(value)
        unit = semantic.unit
        return micros // -unit if unit < 0 else micros * unit
    if column == "date":
        return (value - _EPOCH_DATE).days if isinstance(value, datetime.date) else value
    if column == "timestamp":
        return format_zoned_timestamp(_micros_of(value)) if isinstance(value, datetime.datetime) else value
    if column == "decimal" and isinstance(value, _decimal.Decimal):
        sign, digits, exponent = value.as_tuple()  # exactly: normalize() would round to the context's 28 digits
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        scale = -int(exponent)
        while scale > 0 and unscaled % 10 == 0:
            unscaled, scale = unscaled // 10, scale - 1
        if scale < 0:  # 1E+3: the smallest scale the encoding writes is 0
            unscaled, scale = unscaled * 10 ** -scale, 0
        parts = {"scale": scale, "value": unscaled_to_bytes(unscaled)}
        if schema is None:
            return parts
        from connect_spark.api.data.struct import Struct

        return Struct.from_valid_values(schema, [parts[f.name] if f.name in parts else None for f in schema.fields])
    return value


def to_logical(semantic: SemanticType, value: Any) -> Any:
    """The Python object a Connect value (not null) means: ``datetime.date`` for a Date, ``datetime.time`` for
    the times (floored to the microsecond), a naive ``datetime.datetime`` for a local date-time, a UTC one for a
    ZonedTimestamp, ``decimal.Decimal`` for a VariableScaleDecimal (its own scale); the value itself otherwise.

    Raises:
        SemanticValueError: a value Python cannot represent (a date outside the years 1-9999, a time of day
            outside 00:00-23:59:59.999999, a ZonedTimestamp that does not parse).
    """
    name, column = semantic.name, semantic.column
    if column == "date":
        if not MIN_DAY <= value <= MAX_DAY:
            raise SemanticValueError(f"{name} value {value!r} is outside the years 1-9999")
        return _EPOCH_DATE + datetime.timedelta(days=value)
    if name in (TIME, MICRO_TIME, NANO_TIME):
        micros = _scaled_micros(semantic, value)
        if not 0 <= micros < MICROS_PER_DAY:
            raise SemanticValueError(f"{name} value {value!r} is not a time of day")
        seconds, micro = divmod(micros, 1_000_000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, micro)
    if column == "timestamp_ntz":
        return _EPOCH_NAIVE + datetime.timedelta(microseconds=to_column_value(semantic, value))
    if column == "timestamp":
        return _EPOCH_UTC + datetime.timedelta(microseconds=parse_zoned_timestamp(value))
    if column == "decimal":
        return decimal_from_unscaled(int.from_bytes(value.get("value"), "big", signed=True), value.get("scale"))
    return value


def bits_text(value: bytes, length: int | None) -> str:
    """A Bits value (``BitSet.toByteArray``: bit ``i`` is bit ``i % 8`` of byte ``i // 8``) as SQL's bit string,
    highest bit first, ``length`` characters wide (the highest set bit's width when ``None``)."""
    number = int.from_bytes(value, "little")
    width = number.bit_length() if length is None else length
    return format(number, "b").zfill(width)[-width:] if width else ""
