"""Values: string parsing and rendering, conversions (cases from Kafka's ValuesTest)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type, Values
from connect_spark.api.data.java_semantics import java_double_str, java_float_str
from connect_spark.api.data.values import ValueTokenizer
from connect_spark.api.errors import DataException

UTC = datetime.timezone.utc
WHITESPACE = "\n \t \t\n"


def parsed(text):
    return Values.parse_string(text)


@pytest.mark.parametrize(
    "text",
    ["{foo: 3}", "{3: foo}", "[foo]", "null=", "true}", "false]", "{6:9 4:20}", "[0 1 2]", "{null: 3}",
     "[1, 2, 3,,,]", "simple string", "[1, null]"],
)
def test_unparseable_structures_are_strings(text):
    result = parsed(text)
    assert result.schema.type is Type.STRING
    assert result.value == text


def test_literals_with_whitespace():
    assert parsed(WHITESPACE + "true" + WHITESPACE).value is True
    assert parsed(WHITESPACE + "false" + WHITESPACE).value is False
    assert parsed(WHITESPACE + "null" + WHITESPACE) == (None, None)
    assert parsed("null") == (None, None)
    assert parsed(None) == (None, None)
    assert parsed("") == (Schema.STRING_SCHEMA, "")


def test_embedded_literals():
    result = parsed("[true, false]")
    assert result.schema.value_schema.type is Type.BOOLEAN
    assert result.value == [True, False]
    result = parsed("{true: false, false: true}")
    assert result.schema.key_schema.type is Type.BOOLEAN
    assert result.value == {True: False, False: True}


def test_empty_and_null_collections():
    assert parsed("{}").schema.type is Type.MAP and parsed("{}").value == {}
    assert parsed("[]").schema.type is Type.ARRAY and parsed("[]").value == []
    result = parsed("{3: null}")
    assert result.schema.key_schema.type is Type.INT8 and result.value == {3: None}
    result = parsed("[null]")
    assert result.schema.type is Type.ARRAY and result.value == [None]


@pytest.mark.parametrize(
    "text, schema, value",
    [
        ("127", Schema.INT8_SCHEMA, 127),
        ("-128", Schema.INT8_SCHEMA, -128),
        ("32767", Schema.INT16_SCHEMA, 32767),
        ("2147483647", Schema.INT32_SCHEMA, 2147483647),
        ("-9223372036854775808", Schema.INT64_SCHEMA, -(2**63)),
        ("3.4028235E38", Schema.FLOAT32_SCHEMA, 3.4028234663852886e38),
        ("1.7976931348623157E308", Schema.FLOAT64_SCHEMA, 1.7976931348623157e308),
        ("9223372036854775808", Decimal.schema(0), decimal.Decimal("9223372036854775808")),
        ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
    ],
)
def test_numbers(text, schema, value):
    assert parsed(text) == (schema, value)


def test_leading_number_quirk():
    # Kafka 4.0 parses a top-level number and ignores what follows it.
    assert parsed("1,2") == (Schema.INT8_SCHEMA, 1)


def test_mixed_arrays():
    result = parsed("[1, 2, 32768]")
    assert result.schema.value_schema.type is Type.INT32
    assert result.value == [1, 2, 32768]
    result = parsed('[1, 2, 3, "four"]')
    assert result.schema.type is Type.ARRAY and result.schema.value_schema is None
    assert result.value == [1, 2, 3, "four"]


def test_maps_with_whitespace():
    result = parsed(' { "foo" :  12345 , "bar" : 0,  "baz" : -4321 }  ')
    assert result.schema == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT16_SCHEMA).build()
    assert result.value == {"foo": 12345, "bar": 0, "baz": -4321}


def test_temporal_strings():
    assert parsed("2019-08-23T14:34:54.346Z") == (
        Timestamp.SCHEMA, datetime.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=UTC))
    assert parsed("2019-08-23") == (Date.SCHEMA, datetime.date(2019, 8, 23))
    assert parsed("14:34:54.346Z") == (Time.SCHEMA, datetime.time(14, 34, 54, 346000))
    assert parsed("2019-08-23T14\\:34\\:54.346Z").schema == Timestamp.SCHEMA
    assert parsed("14\\:34\\:54.346Z").schema == Time.SCHEMA
    result = parsed("[2019-08-23T14:34:54.346Z,2019-01-23T15:12:34.567Z,   2019-04-23T19:12:34.567Z]")
    assert result.schema.value_schema == Timestamp.SCHEMA and len(result.value) == 3
    result = parsed('{"k1":"14:34:54.346Z"}')
    assert result.schema.value_schema == Time.SCHEMA
    assert result.value == {"k1": datetime.time(14, 34, 54, 346000)}


def test_parse_does_not_loop_on_odd_characters():
    text = "\uffff"
    assert parsed(text) == (Schema.STRING_SCHEMA, text)


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("a{b", ["a", "{", "b"]),
        ("a\"b", ["a", '"', "b"]),
        ("si\\{mple", ["si\\{mple"]),
        ("a { b c } d", ["a ", "{", " b c ", "}", " d"]),
    ],
)
def test_tokenizer(text, tokens):
    parser = ValueTokenizer(text)
    found = []
    while parser.has_next():
        found.append(parser.next())
    assert found == tokens


def test_tokenizer_next_n():
    parser = ValueTokenizer("a:b:c:d:e:f:g:h")
    assert parser.next_n(5) == "a:b:c"
    assert parser.next() == ":"
    assert parser.next() == "d"
    assert parser.next() == ":"
    assert parser.next_n(8) is None
    assert parser.next() == "e"


def test_convert_to_string():
    assert Values.convert_to_string(None, None) is None
    assert Values.convert_to_string(None, True) == "true"
    assert Values.convert_to_string(None, 1.0) == "1.0"
    assert Values.convert_to_string(Schema.FLOAT32_SCHEMA, 1.100000023841858) == "1.1"
    assert Values.convert_to_string(None, "plain") == "plain"
    assert Values.convert_to_string(None, b"ab") == "YWI="
    assert Values.convert_to_string(None, ["a", 1, None]) == '["a",1,null]'
    assert Values.convert_to_string(None, {"foo": "123", "bar": "baz"}) == '{"foo":"123","bar":"baz"}'
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.STRING_SCHEMA).build()
    assert Values.convert_to_string(schema, Struct(schema).put("a", 1).put("b", 'q"')) == '{"a":1,"b":"q\\""}'
    assert Values.convert_to_string(None, decimal.Decimal("1E+3")) == "1E+3"


def test_temporal_rendering_follows_kafka_date_format_for():
    assert Values.convert_to_string(Date.SCHEMA, datetime.date(2019, 8, 23)) == "2019-08-23"
    assert Values.convert_to_string(Time.SCHEMA, datetime.time(14, 34, 54, 346000)) == "14:34:54.346Z"
    moment = datetime.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=UTC)
    assert Values.convert_to_string(Timestamp.SCHEMA, moment) == "2019-08-23T14:34:54.346Z"
    # Kafka sees only the instant: a midnight timestamp prints as a date
    assert Values.convert_to_string(None, datetime.datetime(2019, 8, 23, tzinfo=UTC)) == "2019-08-23"


def test_escape_round_trip():
    original = 'three"blind\\"mice'
    text = Values.convert_to_string(None, [original])
    assert text == '["three\\"blind\\\\\\"mice"]'


@pytest.mark.parametrize(
    "value",
    [
        {"foo": "123", "bar": "baz"},
        {"foo": 12345, "bar": 0, "baz": -4321},
        ["foo", "bar"],
        [1234567890, -987654321],
    ],
)
def test_round_trip_through_strings(value):
    text = Values.convert_to_string(None, value)
    back = Values.convert_to_map(None, text) if isinstance(value, dict) else Values.convert_to_list(None, text)
    assert back == value


def test_numeric_conversions():
    assert Values.convert_to_byte(None, 300) == 44  # Java's (byte) narrowing
    assert Values.convert_to_short(Schema.STRING_SCHEMA, "12345") == 12345
    assert Values.convert_to_integer(None, 2.9) == 2
    assert Values.convert_to_long(None, decimal.Decimal("12.7")) == 12
    assert Values.convert_to_double(None, "1.5") == 1.5
    assert Values.convert_to_float(None, 1.1) == pytest.approx(1.1, rel=1e-7)
    assert Values.convert_to_boolean(None, "true") is True
    assert Values.convert_to_boolean(None, 0) is False
    assert Values.convert_to_long(None, None) is None
    with pytest.raises(DataException, match="to a number"):
        Values.convert_to_long(None, "abc")
    with pytest.raises(DataException):
        Values.convert_to_boolean(Schema.STRING_SCHEMA, '"green"')


def test_failures_of_structured_conversions():
    with pytest.raises(DataException):
        Values.convert_to_list(Schema.STRING_SCHEMA, "[1, 2, 3,,,]")
    with pytest.raises(DataException):
        Values.convert_to_map(Schema.STRING_SCHEMA, ' { "foo" :  1234567890 ,, "bar" : 0 }  ')
    with pytest.raises(DataException):
        Values.convert_to_map(Schema.STRING_SCHEMA, " { ,,  , , }  ")
    with pytest.raises(DataException):
        Values.convert_to_struct(None, "x")


def test_temporal_conversions():
    now = datetime.datetime(2024, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)
    millis = Timestamp.from_logical(Timestamp.SCHEMA, now)
    of_day = millis % 86_400_000
    assert Values.convert_to_time(Timestamp.SCHEMA, now) == datetime.time(5, 6, 7, 123000)
    assert Values.convert_to_time(Time.SCHEMA, str(of_day)) == datetime.time(5, 6, 7, 123000)
    assert Values.convert_to_time(Time.SCHEMA, of_day) == datetime.time(5, 6, 7, 123000)
    assert Values.convert_to_date(Timestamp.SCHEMA, now) == datetime.date(2024, 3, 4)
    assert Values.convert_to_date(Date.SCHEMA, millis // 86_400_000) == datetime.date(2024, 3, 4)
    assert Values.convert_to_timestamp(Timestamp.SCHEMA, str(millis)) == now
    assert Values.convert_to_timestamp(Date.SCHEMA, datetime.date(2024, 3, 4)) == datetime.datetime(2024, 3, 4, tzinfo=UTC)
    assert Values.convert_to_timestamp(Time.SCHEMA, of_day) == datetime.datetime(1970, 1, 1, 5, 6, 7, 123000, tzinfo=UTC)
    with pytest.raises(DataException, match="null value"):
        Values.convert_to_time(None, None)


def test_decimal_conversion():
    assert Values.convert_to_decimal(None, 5, 1) == decimal.Decimal("5.0")
    assert Values.convert_to_decimal(None, "1.23", 2) == decimal.Decimal("1.23")
    assert Values.convert_to_decimal(None, b"\x00\x9c", 2) == decimal.Decimal("1.56")


def test_infer_schema():
    assert Values.infer_schema("x") == Schema.STRING_SCHEMA
    assert Values.infer_schema([1, None]) == SchemaBuilder.array(Schema.OPTIONAL_INT64_SCHEMA).build()
    assert Values.infer_schema({"a": True}) == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.BOOLEAN_SCHEMA).build()
    assert Values.infer_schema([]) is None
    assert Values.infer_schema([1, "x"]) is None
    assert Values.infer_schema(decimal.Decimal(1)) is None


@pytest.mark.parametrize(
    "value, text",
    [(1.0, "1.0"), (1.5e10, "1.5E10"), (1e-5, "1.0E-5"), (0.001, "0.001"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
     (-0.0, "-0.0"), (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (5e-324, "4.9E-324"), (123456789.0, "1.23456789E8")],
)
def test_java_double_to_string(value, text):
    assert java_double_str(value) == text


@pytest.mark.parametrize("value, text", [(1.1, "1.1"), (12.34, "12.34"), (1e10, "1.0E10"), (1.4e-45, "1.4E-45")])
def test_java_float_to_string(value, text):
    assert java_float_str(value) == text
