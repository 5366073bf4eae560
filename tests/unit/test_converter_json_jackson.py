"""JsonConverter reads what a strict JSON parser refuses as Kafka's JsonConverter (Jackson) reads it.

The expected values are what Apache Kafka 4.1.1's ``JsonConverter`` gives for the same bytes (its
``toString``, written here as Python values); ``tests/integration/test_file_sink_map_order.py`` compares the
two on a real topic.
"""

from __future__ import annotations

import decimal

import pytest

from connect_spark.api import DataException
from connect_spark.converters.json import JsonConverter

ENVELOPE = b'{"schema":{"type":"int32","optional":false},"payload":'

READ = [
    (b'{"a":1} x', {"a": 1}),
    (b'{"a":1}}', {"a": 1}),
    (b"[1] , [2", [1]),
    (b'{"a":1}\n{"b":2}', {"a": 1}),
    (b'{"a":01}{"b":2}', {"a": 1}),
    (b'{"a":1}]]]', {"a": 1}),
    (b'{"a":1}\x00', {"a": 1}),
    (b"{}\xff", {}),
    (b"\xef\xbb\xbf{\"a\":1}", {"a": 1}),
    (b"007", 7),
    (b"-007", -7),
    (b"-00", 0),
    (b"00000000000000000000001", 1),
    (b"00.5", 0.5),
    (b"-01.5", -1.5),
    (b"007.50", 7.5),
    (b"01e2", 100.0),
    (b"[00, 01]", [0, 1]),
    (b'{"01":02}', {"01": 2}),
    (b'"01"', "01"),
    (b"1e+007", 1e7),
    (b"1 2", 1),
    (b"1 x", 1),
    (b"1\t", 1),
    (b"1\r", 1),
    (b"1e5 x", 1e5),
    (b"true false", True),
    (b"true]", True),
    (b"true,", True),
    (b"null x", None),
    (b'"a"x', "a"),
    (b"[1]x", [1]),
    (b"   ", None),
]

REFUSED = [b"1x", b"1]", b"1}", b"1:", b"0x1", b"-", b"1\xc2\xa0", b"truex", b"true1", b"true\xc2\xa0", b"tru",
           b"nul", b"x", b'{"a":1', b"[1,2,]", b"NaN", b'{"a":"x\xffy"}', b'"\xff"']


def _converter(schemas: bool) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": str(schemas).lower()}, False)
    return converter


@pytest.mark.parametrize(("message", "expected"), READ, ids=[repr(m) for m, _ in READ])
def test_messages_kafka_reads_past_strict_json_are_read_as_kafka_reads_them(message, expected):
    value = _converter(False).to_connect_data("t", message).value
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("message", REFUSED, ids=[repr(m) for m in REFUSED])
def test_messages_kafka_refuses_stay_refused_with_the_strict_parsers_error(message):
    with pytest.raises(DataException, match="serialization error"):
        _converter(False).to_connect_data("t", message)


def test_an_envelope_followed_by_text_or_with_a_leading_zero_reads_its_payload():
    converter = _converter(True)
    assert converter.to_connect_data("t", ENVELOPE + b"5} x").value == 5
    assert converter.to_connect_data("t", ENVELOPE + b"05}").value == 5
    assert converter.to_connect_data("t", ENVELOPE + b"7}{").value == 7
    for no_envelope in (b"   ", b'{"a":1} x'):
        with pytest.raises(DataException, match='requires "schema" and "payload" fields'):
            converter.to_connect_data("t", no_envelope)


def test_a_decimal_payload_after_a_leading_zero_keeps_its_digits():
    schema = b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",' \
             b'"parameters":{"scale":"2"}},"payload":'
    converter = _converter(True)
    converter.configure({"schemas.enable": "true", "decimal.format": "NUMERIC"}, False)
    assert converter.to_connect_data("t", schema + b"0012.50} trailing").value == decimal.Decimal("12.50")
