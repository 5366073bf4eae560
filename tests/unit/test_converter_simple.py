"""StringConverter, ByteArrayConverter, the numeric converters and SimpleHeaderConverter."""

from __future__ import annotations

import datetime
import struct

import pytest

from connect_spark.api import DataException, SchemaAndValue
from connect_spark.api.data import Schema, SchemaBuilder, Time
from connect_spark.api.errors import ConfigException
from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.header import SimpleHeaderConverter
from connect_spark.converters.numeric import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from connect_spark.converters.string import StringConverter

TOPIC = "topic"


class TestStringConverter:
    def test_round_trip(self):
        c = StringConverter()
        c.configure({}, False)
        assert c.to_connect_data(TOPIC, "héllo".encode()) == (Schema.OPTIONAL_STRING_SCHEMA, "héllo")
        assert c.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "héllo") == "héllo".encode()

    def test_null(self):
        c = StringConverter()
        c.configure({}, True)
        assert c.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        assert c.from_connect_data(TOPIC, Schema.OPTIONAL_STRING_SCHEMA, None) is None

    def test_non_string_values_use_their_string_form(self):
        c = StringConverter()
        c.configure({}, False)
        assert c.from_connect_data(TOPIC, Schema.INT32_SCHEMA, 12) == b"12"
        assert c.from_connect_data(TOPIC, Schema.BOOLEAN_SCHEMA, True) == b"true"

    def test_encoding(self):
        c = StringConverter()
        c.configure({"converter.encoding": "UTF-16"}, False)
        data = c.from_connect_data(TOPIC, None, "abc")
        assert data == "abc".encode("utf-16")
        assert c.to_connect_data(TOPIC, data).value == "abc"
        latin = StringConverter()
        latin.configure({"converter.encoding": "ISO-8859-1"}, False)
        assert latin.to_connect_data(TOPIC, b"\xe9").value == "é"

    def test_invalid_bytes_raise(self):
        c = StringConverter()
        c.configure({}, False)
        with pytest.raises(DataException, match="Failed to deserialize string"):
            c.to_connect_data(TOPIC, b"\xff\xfe\xfa")

    def test_unknown_encoding(self):
        with pytest.raises(ConfigException, match="converter.encoding"):
            StringConverter().configure({"converter.encoding": "NOPE-8"}, False)

    def test_as_header_converter(self):
        c = StringConverter()
        c.configure({})
        assert c.to_connect_header(TOPIC, "h", b"v") == (Schema.OPTIONAL_STRING_SCHEMA, "v")
        assert c.from_connect_header(TOPIC, "h", None, "v") == b"v"
        assert StringConverter.kafka_class_name == "org.apache.kafka.connect.storage.StringConverter"


class TestByteArrayConverter:
    def test_round_trip_and_null(self):
        c = ByteArrayConverter()
        c.configure({}, False)
        assert c.to_connect_data(TOPIC, b"\x00\x01") == (Schema.OPTIONAL_BYTES_SCHEMA, b"\x00\x01")
        assert c.to_connect_data(TOPIC, None) == (Schema.OPTIONAL_BYTES_SCHEMA, None)
        assert c.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, b"x") == b"x"
        assert c.from_connect_data(TOPIC, None, bytearray(b"y")) == b"y"
        assert c.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, None) is None

    def test_errors(self):
        c = ByteArrayConverter()
        with pytest.raises(DataException, match="Invalid schema type for ByteArrayConverter: INT32"):
            c.from_connect_data(TOPIC, Schema.INT32_SCHEMA, 12)
        with pytest.raises(DataException, match="not compatible with objects of type class str"):
            c.from_connect_data(TOPIC, None, "string")


@pytest.mark.parametrize(
    "cls, schema, value, encoded",
    [
        (ShortConverter, Schema.OPTIONAL_INT16_SCHEMA, -2, struct.pack(">h", -2)),
        (IntegerConverter, Schema.OPTIONAL_INT32_SCHEMA, 2**31 - 1, struct.pack(">i", 2**31 - 1)),
        (LongConverter, Schema.OPTIONAL_INT64_SCHEMA, -(2**63), struct.pack(">q", -(2**63))),
        (FloatConverter, Schema.OPTIONAL_FLOAT32_SCHEMA, 1.5, struct.pack(">f", 1.5)),
        (DoubleConverter, Schema.OPTIONAL_FLOAT64_SCHEMA, 3.25, struct.pack(">d", 3.25)),
        (BooleanConverter, Schema.OPTIONAL_BOOLEAN_SCHEMA, True, b"\x01"),
        (BooleanConverter, Schema.OPTIONAL_BOOLEAN_SCHEMA, False, b"\x00"),
    ],
)
def test_numeric_converters(cls, schema, value, encoded):
    c = cls()
    c.configure({}, False)
    assert c.from_connect_data(TOPIC, schema, value) == encoded
    assert c.to_connect_data(TOPIC, encoded) == (schema, value)
    assert c.to_connect_data(TOPIC, None) == (schema, None)
    assert c.from_connect_data(TOPIC, schema, None) is None
    assert c.to_connect_header(TOPIC, "h", encoded) == (schema, value)
    assert cls.kafka_class_name == f"org.apache.kafka.connect.converters.{cls.__name__}"


@pytest.mark.parametrize("cls", [ShortConverter, IntegerConverter, LongConverter, FloatConverter, DoubleConverter,
                                 BooleanConverter])
def test_numeric_wrong_length(cls):
    with pytest.raises(DataException, match="Failed to deserialize"):
        cls().to_connect_data(TOPIC, b"\x00\x00\x00")


def test_numeric_serialize_errors():
    with pytest.raises(DataException, match="Failed to serialize to integer"):
        IntegerConverter().from_connect_data(TOPIC, None, 2**31)
    with pytest.raises(DataException, match="Failed to serialize to short"):
        ShortConverter().from_connect_data(TOPIC, None, "1")
    with pytest.raises(DataException, match="Failed to serialize to long"):
        LongConverter().from_connect_data(TOPIC, None, True)
    with pytest.raises(DataException, match="Unexpected byte received by BooleanDeserializer: 2"):
        BooleanConverter().to_connect_data(TOPIC, b"\x02")
    with pytest.raises(DataException, match="Invalid schema type for BooleanConverter"):
        BooleanConverter().from_connect_data(TOPIC, Schema.INT8_SCHEMA, True)


class TestSimpleHeaderConverter:
    def test_inference(self):
        c = SimpleHeaderConverter()
        c.configure({})
        assert c.to_connect_header(TOPIC, "h", None) == (None, None)
        assert c.to_connect_header(TOPIC, "h", b"true") == (Schema.BOOLEAN_SCHEMA, True)
        assert c.to_connect_header(TOPIC, "h", b"42") == (Schema.INT8_SCHEMA, 42)
        assert c.to_connect_header(TOPIC, "h", b"hello") == (Schema.STRING_SCHEMA, "hello")
        assert c.to_connect_header(TOPIC, "h", b"[1,2]") == (SchemaBuilder.array(Schema.INT8_SCHEMA).build(), [1, 2])
        assert c.to_connect_header(TOPIC, "h", b"10:15:30.000Z") == (Time.SCHEMA, datetime.time(10, 15, 30))

    def test_undecodable_bytes_fall_back_with_warning(self, caplog):
        c = SimpleHeaderConverter()
        with caplog.at_level("WARNING"):
            assert c.to_connect_header(TOPIC, "h", b"\xff\xfe") == (Schema.BYTES_SCHEMA, b"\xff\xfe")
        assert "Failed to deserialize value for header 'h' on topic 'topic'" in caplog.text

    def test_from_connect(self):
        c = SimpleHeaderConverter()
        assert c.from_connect_header(TOPIC, "h", None, None) is None
        assert c.from_connect_header(TOPIC, "h", Schema.BOOLEAN_SCHEMA, True) == b"true"
        assert c.from_connect_header(TOPIC, "h", None, {"a": [1, "b"]}) == b'{"a":[1,"b"]}'
        assert c.from_connect_header(TOPIC, "h", Time.SCHEMA, datetime.time(1, 2, 3)) == b"01:02:03.000Z"

    def test_round_trip(self):
        c = SimpleHeaderConverter()
        for schema, value in [(Schema.INT16_SCHEMA, 300), (Schema.STRING_SCHEMA, "plain text"),
                              (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.BOOLEAN_SCHEMA).build(), {"x": True})]:
            assert c.to_connect_header(TOPIC, "h", c.from_connect_header(TOPIC, "h", schema, value)) == (schema, value)
