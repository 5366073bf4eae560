"""Logical types: Decimal, Date, Time, Timestamp (Kafka's DecimalTest, DateTest, TimeTest, TimestampTest)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connect_spark.api.data import Date, Decimal, Schema, Time, Timestamp
from connect_spark.api.errors import DataException

UTC = datetime.timezone.utc


def test_decimal_schema():
    schema = Decimal.schema(2)
    assert schema.name == "org.apache.kafka.connect.data.Decimal"
    assert dict(schema.parameters) == {"scale": "2"}
    assert schema.version == 1
    assert Decimal.builder(2).optional().build().is_optional


@pytest.mark.parametrize(
    "value, encoded",
    [
        ("1.56", b"\x00\x9c"),  # Kafka's JsonConverterTest: 156 is [0, -100]
        ("0.00", b"\x00"),
        ("-0.01", b"\xff"),
        ("-1.28", b"\x80"),
        ("1.28", b"\x00\x80"),
        ("12345678901234567890123456789012.34", None),
    ],
)
def test_decimal_round_trip(value, encoded):
    schema = Decimal.schema(2)
    number = decimal.Decimal(value)
    data = Decimal.from_logical(schema, number)
    if encoded is not None:
        assert data == encoded
    back = Decimal.to_logical(schema, data)
    assert back == number and back.as_tuple().exponent == -2


def test_decimal_scale_mismatch():
    with pytest.raises(DataException, match="Schema has scale 2, value has scale 1"):
        Decimal.from_logical(Decimal.schema(2), decimal.Decimal("1.5"))
    with pytest.raises(DataException, match="scale parameter not found"):
        Decimal.from_logical(Schema.BYTES_SCHEMA, decimal.Decimal("1"))


def test_date():
    assert Date.SCHEMA.name == "org.apache.kafka.connect.data.Date"
    assert Date.from_logical(Date.SCHEMA, datetime.date(1970, 1, 1)) == 0
    assert Date.to_logical(Date.SCHEMA, 10000) == datetime.date(1997, 5, 19)
    assert Date.from_logical(Date.SCHEMA, datetime.date(1997, 5, 19)) == 10000
    assert Date.to_logical(Date.SCHEMA, -1) == datetime.date(1969, 12, 31)
    assert Date.from_logical(Date.SCHEMA, datetime.datetime(1970, 1, 2, tzinfo=UTC)) == 1
    with pytest.raises(DataException, match="should not have any time fields"):
        Date.from_logical(Date.SCHEMA, datetime.datetime(1970, 1, 2, 1, tzinfo=UTC))
    with pytest.raises(DataException, match="schema does not match"):
        Date.from_logical(Schema.INT32_SCHEMA, datetime.date(1970, 1, 1))


def test_time():
    assert Time.from_logical(Time.SCHEMA, datetime.time(4, 0)) == 14_400_000
    assert Time.to_logical(Time.SCHEMA, 14_400_000) == datetime.time(4, 0)
    assert Time.to_logical(Time.SCHEMA, 1) == datetime.time(0, 0, 0, 1000)
    assert Time.from_logical(Time.SCHEMA, datetime.time(0, 0, 0, 1999)) == 1  # microseconds dropped
    assert Time.from_logical(Time.SCHEMA, datetime.datetime(1970, 1, 1, 1, tzinfo=UTC)) == 3_600_000
    with pytest.raises(DataException, match="should not have any date fields"):
        Time.from_logical(Time.SCHEMA, datetime.datetime(1970, 1, 2, 1, tzinfo=UTC))
    with pytest.raises(DataException, match="less than 86400000"):
        Time.to_logical(Time.SCHEMA, 86_400_000)


def test_timestamp():
    moment = Timestamp.to_logical(Timestamp.SCHEMA, 4_000_000_000)
    assert moment == datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC)
    assert moment.tzinfo is not None
    assert Timestamp.from_logical(Timestamp.SCHEMA, moment) == 4_000_000_000
    naive = datetime.datetime(1970, 1, 1, 0, 0, 1)
    assert Timestamp.from_logical(Timestamp.SCHEMA, naive) == 1000
    assert Timestamp.from_logical(Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)) == -1
    other_zone = datetime.datetime(1970, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    assert Timestamp.from_logical(Timestamp.SCHEMA, other_zone) == 0
