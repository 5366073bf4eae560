"""Logical types: Decimal, Date, Time and Timestamp (Kafka's classes of the same names).

A logical type is a primitive schema with a well-known ``name``; its Python value is richer than
the primitive one. ``from_logical`` turns the Python value into the primitive encoding and
``to_logical`` turns it back, as Kafka's ``fromLogical``/``toLogical`` do:

=========== ======== ====================== ===============================================
Logical     Schema   Python value           Encoded as
=========== ======== ====================== ===============================================
Decimal     BYTES    ``decimal.Decimal``    big-endian two's complement unscaled value; the
                                            ``scale`` parameter gives the scale
Date        INT32    ``datetime.date``      days since 1970-01-01
Time        INT32    ``datetime.time``      milliseconds since midnight
Timestamp   INT64    ``datetime.datetime``  milliseconds since the epoch; values are UTC-aware,
                                            a naive datetime is read as UTC
=========== ======== ====================== ===============================================

Times are kept to the millisecond, like Java's ``java.util.Date``: microseconds are dropped when
encoding.
"""

from __future__ import annotations

import datetime
import decimal as _decimal
from typing import Any

from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
)
from connect_spark.api.errors import DataException

__all__ = ["Decimal", "Date", "Time", "Timestamp", "EPOCH", "MILLIS_PER_DAY", "millis_of", "to_utc_datetime"]

MILLIS_PER_DAY = 24 * 60 * 60 * 1000
#: 1970-01-01T00:00:00Z
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_ONE_MS = datetime.timedelta(milliseconds=1)


class Decimal:
    """Arbitrary-precision decimal numbers (``org.apache.kafka.connect.data.Decimal``)."""

    LOGICAL_NAME = DECIMAL_LOGICAL_NAME
    SCALE_FIELD = "scale"
    #: The parameter some producers (Debezium, Confluent's Avro converter) put the precision in.
    PRECISION_FIELD = "connect.decimal.precision"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        """A BYTES builder named as a Decimal with ``scale``, version 1."""
        return SchemaBuilder.bytes().name(DECIMAL_LOGICAL_NAME).parameter(Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int) -> Schema:
        """A required Decimal schema with ``scale``."""
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The ``scale`` parameter of a Decimal schema.

        Raises:
            DataException: when it is missing or not an integer.
        """
        parameters = schema.parameters
        text = None if parameters is None else parameters.get(Decimal.SCALE_FIELD)
        if text is None:
            raise DataException("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(text)
        except ValueError as e:
            raise DataException(f"Invalid scale parameter found in Decimal schema: {text}") from e

    @staticmethod
    def unscaled(value: _decimal.Decimal) -> tuple[int, int]:
        """``(unscaled integer, scale)`` of a finite decimal: ``Decimal('1.50')`` → ``(150, 2)``."""
        if not value.is_finite():
            raise DataException(f"Decimal value must be finite, got {value}")
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0")
        return (-unscaled if sign else unscaled), -int(exponent)

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        """Encode ``value`` as the two's complement bytes of its unscaled value.

        Raises:
            DataException: when the value's scale differs from the schema's.
        """
        schema_scale = Decimal.scale(schema)
        unscaled, scale = Decimal.unscaled(value)
        if scale != schema_scale:
            raise DataException(
                "Decimal value has mismatching scale for given Decimal schema. "
                f"Schema has scale {schema_scale}, value has scale {scale}."
            )
        return unscaled_to_bytes(unscaled)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        """Decode two's complement bytes into a decimal with the schema's scale."""
        unscaled = int.from_bytes(value, "big", signed=True)
        return decimal_from_unscaled(unscaled, Decimal.scale(schema))


def unscaled_to_bytes(unscaled: int) -> bytes:
    """The shortest big-endian two's complement bytes of ``unscaled`` (``BigInteger.toByteArray``)."""
    length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
    return unscaled.to_bytes(length, "big", signed=True)


def decimal_from_unscaled(unscaled: int, scale: int) -> _decimal.Decimal:
    """``unscaled × 10^-scale`` exactly (no rounding to the decimal context's precision)."""
    sign = 1 if unscaled < 0 else 0
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return _decimal.Decimal((sign, digits, -scale))


def _check_name(schema: Schema, logical_name: str, what: str) -> None:
    if schema.name != logical_name:
        raise DataException(f"Requested conversion of {what} object but the schema does not match.")


def millis_of(value: datetime.datetime) -> int:
    """Milliseconds since the epoch of a datetime (naive = UTC), rounded down like Java's ``getTime``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return (value - EPOCH) // _ONE_MS


def to_utc_datetime(millis: int) -> datetime.datetime:
    """The UTC-aware datetime ``millis`` milliseconds after the epoch.

    Raises:
        DataException: when the instant is outside the years 1..9999 Python can represent.
    """
    try:
        return EPOCH + datetime.timedelta(milliseconds=millis)
    except OverflowError as e:
        raise DataException(f"Timestamp {millis} ms is outside the range of datetime") from e


class Date:
    """A calendar date without time of day (``org.apache.kafka.connect.data.Date``)."""

    LOGICAL_NAME = DATE_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        """An INT32 builder named as a Date, version 1."""
        return SchemaBuilder.int32().name(DATE_LOGICAL_NAME).version(1)

    SCHEMA: Schema  # assigned below

    @staticmethod
    def from_logical(schema: Schema, value: datetime.date) -> int:
        """Days since the epoch.

        A ``datetime`` is accepted if it is exactly midnight UTC, as Kafka requires of a Date.

        Raises:
            DataException: for a schema that is not a Date, or a datetime with a time of day.
        """
        _check_name(schema, DATE_LOGICAL_NAME, "Date")
        if isinstance(value, datetime.datetime):
            millis = millis_of(value)
            if millis % MILLIS_PER_DAY != 0:
                raise DataException("Kafka Connect Date type should not have any time fields set to non-zero values.")
            return millis // MILLIS_PER_DAY
        if not isinstance(value, datetime.date):
            raise DataException(f"Invalid type for Date, expected date but was {type(value).__name__}")
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.date:
        """The date ``value`` days after 1970-01-01."""
        _check_name(schema, DATE_LOGICAL_NAME, "Date")
        try:
            return _EPOCH_DATE + datetime.timedelta(days=value)
        except OverflowError as e:
            raise DataException(f"Date {value} days is outside the range of date") from e


class Time:
    """A time of day without date (``org.apache.kafka.connect.data.Time``)."""

    LOGICAL_NAME = TIME_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        """An INT32 builder named as a Time, version 1."""
        return SchemaBuilder.int32().name(TIME_LOGICAL_NAME).version(1)

    SCHEMA: Schema  # assigned below

    @staticmethod
    def from_logical(schema: Schema, value: datetime.time) -> int:
        """Milliseconds since midnight.

        A ``datetime`` is accepted if it falls on 1970-01-01 (UTC), as Kafka requires of a Time.

        Raises:
            DataException: for a schema that is not a Time, or a datetime on another day.
        """
        _check_name(schema, TIME_LOGICAL_NAME, "Time")
        if isinstance(value, datetime.datetime):
            millis = millis_of(value)
            if not 0 <= millis < MILLIS_PER_DAY:
                raise DataException("Kafka Connect Time type should not have any date fields set to non-zero values.")
            return millis
        if not isinstance(value, datetime.time):
            raise DataException(f"Invalid type for Time, expected time but was {type(value).__name__}")
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        offset = value.utcoffset()
        if offset:
            millis = (millis - offset // _ONE_MS) % MILLIS_PER_DAY
        return millis

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.time:
        """The time of day ``value`` milliseconds after midnight.

        Raises:
            DataException: when ``value`` is not within one day.
        """
        _check_name(schema, TIME_LOGICAL_NAME, "Time")
        if not 0 <= value < MILLIS_PER_DAY:
            raise DataException("Time values must use number of milliseconds greater than 0 and less than 86400000")
        seconds, millis = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, millis * 1000)


class Timestamp:
    """An instant with millisecond precision (``org.apache.kafka.connect.data.Timestamp``)."""

    LOGICAL_NAME = TIMESTAMP_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        """An INT64 builder named as a Timestamp, version 1."""
        return SchemaBuilder.int64().name(TIMESTAMP_LOGICAL_NAME).version(1)

    SCHEMA: Schema  # assigned below

    @staticmethod
    def from_logical(schema: Schema, value: datetime.datetime) -> int:
        """Milliseconds since the epoch (a naive datetime is read as UTC)."""
        _check_name(schema, TIMESTAMP_LOGICAL_NAME, "Timestamp")
        if not isinstance(value, datetime.datetime):
            raise DataException(f"Invalid type for Timestamp, expected datetime but was {type(value).__name__}")
        return millis_of(value)

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.datetime:
        """The UTC-aware datetime ``value`` milliseconds after the epoch."""
        _check_name(schema, TIMESTAMP_LOGICAL_NAME, "Timestamp")
        return to_utc_datetime(value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()


def logical_to_millis(value: Any) -> int | None:
    """Epoch milliseconds of a Date/Time/Timestamp value, the way Java sees it as a ``java.util.Date``.

    A Date is midnight of its day, a Time is that time on 1970-01-01. Returns ``None`` for values
    that are not dates or times.
    """
    if isinstance(value, datetime.datetime):
        return millis_of(value)
    if isinstance(value, datetime.date):
        return (value - _EPOCH_DATE).days * MILLIS_PER_DAY
    if isinstance(value, datetime.time):
        return Time.from_logical(Time.SCHEMA, value)
    return None
