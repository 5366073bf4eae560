"""TimestampConverter$Key / $Value and the SimpleDateFormat port (cases from Kafka's TimestampConverterTest)."""

from __future__ import annotations

import datetime

import pytest

from connect_spark.api import ConnectException, DataException, SinkRecord
from connect_spark.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.simple_date_format import SimpleDateFormat
from connect_spark.transforms.timestamp_converter import TimestampConverterKey, TimestampConverterValue

UTC = datetime.timezone.utc
DATE = datetime.date(1970, 1, 2)
DATE_PLUS_TIME = datetime.datetime(1970, 1, 2, 0, 0, 1, tzinfo=UTC)
DATE_PLUS_TIME_UNIX = 86_401_000
TIME = datetime.time(0, 0, 1)
FORMAT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 000 UTC"


def conv(cls=TimestampConverterValue, **props):
    t = cls()
    t.configure({k.replace("_", "."): v for k, v in props.items()})
    return t


def value_record(schema, value):
    return SinkRecord("topic", 0, None, None, schema, value, 0)


@pytest.mark.parametrize(
    "props, message",
    [
        ({}, "target.type"),
        ({"target_type": "invalid"}, "target.type"),
        ({"target_type": "unix", "unix_precision": "invalid"}, "unix.precision"),
        ({"target_type": "string"}, "requires format option"),
        ({"target_type": "string", "format": "bad-format"}, "Illegal pattern character 'b'"),
    ],
)
def test_config_errors(props, message):
    with pytest.raises(ConfigException, match=message):
        conv(**props)


def test_parsed_attributes():
    t = conv(target_type="unix", unix_precision="seconds", field="ts")
    assert (t.target_type, t.unix_precision, t.field, t.format) == ("unix", "seconds", "ts", None)


@pytest.mark.parametrize(
    "target, expected",
    [
        ("Timestamp", DATE_PLUS_TIME),
        ("Date", DATE),
        ("Time", TIME),
        ("unix", DATE_PLUS_TIME_UNIX),
        ("string", DATE_PLUS_TIME_STRING),
    ],
)
def test_schemaless_from_timestamp(target, expected):
    assert conv(target_type=target, format=FORMAT).apply(value_record(None, DATE_PLUS_TIME)).value == expected


def test_schemaless_sources():
    assert conv(target_type="Timestamp").apply(value_record(None, DATE_PLUS_TIME_UNIX)).value == DATE_PLUS_TIME
    t = conv(target_type="Timestamp", format=FORMAT)
    assert t.apply(value_record(None, DATE_PLUS_TIME_STRING)).value == DATE_PLUS_TIME
    assert conv(target_type="unix").apply(value_record(None, DATE)).value == 86_400_000
    assert conv(target_type="unix").apply(value_record(None, TIME)).value == 1000
    with pytest.raises(DataException, match="does not support class float"):
        conv(target_type="unix").apply(value_record(None, 1.5))


@pytest.mark.parametrize(
    "schema, value, target, expected_schema, expected",
    [
        (Timestamp.SCHEMA, DATE_PLUS_TIME, "Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        (Timestamp.SCHEMA, DATE_PLUS_TIME, "Date", Date.SCHEMA, DATE),
        (Timestamp.SCHEMA, DATE_PLUS_TIME, "Time", Time.SCHEMA, TIME),
        (Timestamp.SCHEMA, DATE_PLUS_TIME, "unix", Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX),
        (Timestamp.SCHEMA, DATE_PLUS_TIME, "string", Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING),
        (Date.SCHEMA, DATE, "Timestamp", Timestamp.SCHEMA, datetime.datetime(1970, 1, 2, tzinfo=UTC)),
        (Time.SCHEMA, TIME, "Timestamp", Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
        (Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX, "Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        (Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING, "Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        (Timestamp.builder().optional().build(), None, "unix", Schema.OPTIONAL_INT64_SCHEMA, None),
    ],
)
def test_with_schema(schema, value, target, expected_schema, expected):
    out = conv(target_type=target, format=FORMAT).apply(value_record(schema, value))
    assert out.value_schema == expected_schema
    assert out.value == expected


def test_unknown_schema_type():
    with pytest.raises(ConnectException, match="does not correspond to a known timestamp type"):
        conv(target_type="unix").apply(value_record(Schema.INT32_SCHEMA, 1))


@pytest.mark.parametrize(
    "precision, unix, millis",
    [
        ("seconds", 86_401, 86_401_000),
        ("milliseconds", 86_401_234, 86_401_234),
        ("microseconds", 86_401_234_567, 86_401_234),
        ("nanoseconds", 86_401_234_567_891, 86_401_234),
        ("microseconds", -1_500, -1),  # Java truncates toward zero
    ],
)
def test_unix_precision_in(precision, unix, millis):
    out = conv(target_type="unix", unix_precision="milliseconds").apply(value_record(None, unix))
    assert out.value == unix
    t = conv(target_type="Timestamp", unix_precision=precision)
    expected = datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=millis)
    assert t.apply(value_record(Schema.INT64_SCHEMA, unix)).value == expected


@pytest.mark.parametrize(
    "precision, expected",
    [("seconds", 86_401), ("milliseconds", 86_401_234), ("microseconds", 86_401_234_000),
     ("nanoseconds", 86_401_234_000_000)],
)
def test_unix_precision_out(precision, expected):
    moment = datetime.datetime(1970, 1, 2, 0, 0, 1, 234_567, tzinfo=UTC)  # microseconds are dropped
    assert conv(target_type="unix", unix_precision=precision).apply(value_record(None, moment)).value == expected


def test_struct_field():
    schema = SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).field("other", Schema.STRING_SCHEMA).build()
    value = Struct(schema).put("ts", DATE_PLUS_TIME).put("other", "test")
    out = conv(target_type="unix", field="ts").apply(value_record(schema, value))
    assert out.value_schema.field("ts").schema == Schema.INT64_SCHEMA
    assert out.value_schema.field("other").schema == Schema.STRING_SCHEMA
    assert out.value.get("ts") == DATE_PLUS_TIME_UNIX and out.value.get("other") == "test"


def test_struct_field_null_and_optional():
    schema = (SchemaBuilder.struct().field("ts", Timestamp.builder().optional().build())
              .field("other", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    out = conv(target_type="unix", field="ts").apply(value_record(schema, Struct(schema)))
    assert out.value_schema.field("ts").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert out.value.get("ts") is None
    out = conv(target_type="unix", field="ts").apply(value_record(schema, None))
    assert out.value is None and out.value_schema.is_optional


def test_struct_field_default_and_replace_null():
    default = datetime.datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC)
    schema = SchemaBuilder.struct().field("ts", Timestamp.builder().optional().default_value(default).build()).build()
    assert conv(target_type="unix", field="ts").apply(value_record(schema, Struct(schema))).value.get("ts") == 2000
    t = conv(target_type="unix", field="ts", replace_null_with_default="false")
    assert t.apply(value_record(schema, Struct(schema))).value.get("ts") is None


def test_schemaless_field():
    out = conv(target_type="Date", field="ts").apply(value_record(None, {"ts": DATE_PLUS_TIME, "other": "x"}))
    assert out.value == {"ts": DATE, "other": "x"}
    assert conv(target_type="Date", field="ts").apply(value_record(None, {"other": 1})).value == {"other": 1, "ts": None}
    assert conv(target_type="Date", field="ts").apply(value_record(None, None)).value is None


def test_unparseable_string():
    with pytest.raises(DataException, match=r"Could not parse timestamp: value \(nope\) does not match pattern"):
        conv(target_type="unix", format="yyyy-MM-dd").apply(value_record(None, "nope"))


def test_key_variant():
    t = conv(TimestampConverterKey, target_type="Timestamp")
    out = t.apply(SinkRecord("t", 0, Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX, None, "v", 0))
    assert out.key == DATE_PLUS_TIME and out.key_schema == Timestamp.SCHEMA and out.value == "v"


# --- SimpleDateFormat ----------------------------------------------------------------------------

MOMENT = int(datetime.datetime(2024, 7, 9, 13, 5, 7, 978000, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "pattern, text",
    [
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2024-07-09T13:05:07.978+0000"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-07-09T13:05:07.978Z"),
        ("yyyyMMdd", "20240709"),
        ("yy/M/d h:mm a", "24/7/9 1:05 PM"),
        ("EEEE, MMMM d, yyyy", "Tuesday, July 9, 2024"),
        ("EEE MMM dd HH:mm:ss zzz yyyy", "Tue Jul 09 13:05:07 UTC 2024"),
        ("D w W F u k K", "191 28 2 2 2 13 1"),
        ("'it''s' yyyy", "it's 2024"),
        ("S SSSS", "978 0978"),
    ],
)
def test_simple_date_format_formats(pattern, text):
    assert SimpleDateFormat(pattern).format(MOMENT) == text


@pytest.mark.parametrize(
    "pattern, text, expected",
    [
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2024-07-09T13:05:07.978+0000", MOMENT),
        ("yyyy-MM-dd HH:mm:ss.SSSXXX", "2024-07-09 15:05:07.978+02:00", MOMENT),
        ("yyyyMMddHHmmss", "20240709130507", MOMENT - 978),
        ("yyyy-MM-dd", "2024-07-09T12:00 trailing text is ignored", MOMENT - 47_107_978),
        ("yyyy-MM-dd", "2024-13-01", 1735689600000),  # lenient: month 13 is January next year
        ("dd MMM yyyy hh:mm a", "09 jul 2024 01:05 pm", MOMENT - 7_978),
    ],
)
def test_simple_date_format_parses(pattern, text, expected):
    assert SimpleDateFormat(pattern).parse(text) == expected


def test_simple_date_format_errors():
    with pytest.raises(ValueError, match="Unterminated quote"):
        SimpleDateFormat("yyyy'")
    with pytest.raises(ValueError, match="Illegal pattern character 'q'"):
        SimpleDateFormat("qq")
    with pytest.raises(ValueError, match="Unparseable date"):
        SimpleDateFormat("yyyy-MM-dd").parse("July 9")


def test_week_year_at_year_end():
    dec31 = int(datetime.datetime(2024, 12, 31, tzinfo=UTC).timestamp() * 1000)
    assert SimpleDateFormat("YYYY-ww yyyy").format(dec31) == "2025-01 2024"
