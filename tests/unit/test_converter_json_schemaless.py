"""JSON without schemas read with orjson (connect_spark.converters.json_fast.read_schemaless) gives exactly what the
standard library's general path gives: values, types, negative zero, 64-bit wrapping, and errors.

Each message is read by a ``schemas.enable=false`` converter twice — as it runs, and with orjson hidden from the
fast path (the general path) — and the results are compared, type for type.
"""

from __future__ import annotations

import math
import random

import pytest

from connect_spark.api.errors import DataException
from connect_spark.converters import json_fast
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.json_fast import NOT_READ, read_schemaless

MESSAGES = [
    b'{"id":1,"user":"user-00001","amount":12.5,"ok":true,"note":null}', b"-0.0", b'{"a":-0.0,"b":[-0.0,0.0]}',
    b"9223372036854775807", b"9223372036854775808", b"18446744073709551615", b"18446744073709551616",
    b"-9223372036854775808", b"-9223372036854775809", b"123456789012345678901234567890", b"1e19", b"-1e19",
    b"9.3e18", b"1e400", b"-1e400", b"1e-400", b"4.9e-324", b"0.1", b"1E2", b"1.0", b"-0", b'"\\ud800"',
    b'"\\u00e9\\n"', '"é"'.encode(), b"\xef\xbb\xbf{\"a\":1}", b"NaN", b"Infinity", b"[1,2,]", b'{"a":1}x', b'"\xff"',
    b'{"a":1,"b":2,"a":3}', b' {"nested":{"deep":[1,{"x":18446744073709551615}],"f":2.50}} ', b"[]", b"{}",
    b"true", b"null", b'"text"', b'{"a":"\x01"}', b"[" * 3000 + b"]" * 3000,
]


def _converter() -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    return converter


def _read(converter: JsonConverter, message: bytes):
    try:
        return "value", converter.to_connect_data("t", message).value
    except DataException as e:
        return "error", str(e)


def _typed(value):
    """The value with every leaf's type and float sign, for an exact comparison."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return (float, value, math.copysign(1.0, value))
    return (type(value), value)


def _both(message: bytes, monkeypatch):
    fast = _read(_converter(), message)
    with monkeypatch.context() as patch:
        patch.setattr(json_fast, "orjson", None)
        general = _read(_converter(), message)
    return fast, general


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_schemaless_messages_read_as_the_general_path_reads_them(message, monkeypatch):
    fast, general = _both(message, monkeypatch)
    assert fast[0] == general[0]
    if fast[0] == "value":
        assert _typed(fast[1]) == _typed(general[1])
    else:
        assert fast[1] == general[1]


def test_random_numbers_read_as_the_general_path_reads_them(monkeypatch):
    rnd = random.Random(7)
    for _ in range(3000):
        digits = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 24)))
        sign = "-" if rnd.random() < 0.5 else ""
        if rnd.random() < 0.3:
            message = f"{sign}{digits}".encode()  # integers up to 24 digits: wrapped to 64 bits
        else:
            message = f"{sign}{digits[0]}.{digits[1:] or '0'}e{rnd.randint(-330, 310)}".encode()
        fast, general = _both(b'{"n":' + message + b"}", monkeypatch)
        assert _typed(fast) == _typed(general), message


def test_orjson_reads_plain_messages_and_leaves_huge_integers_and_refusals_to_the_general_path():
    assert read_schemaless(b'{"id":7,"amount":-0.0}') == {"id": 7, "amount": 0.0}
    assert read_schemaless(b"18446744073709551615") == -1  # a uint64 orjson keeps whole, wrapped as Java's long
    for message in (b"18446744073709551616", b'{"a":[1e19]}', b"NaN", b'"\\ud800"', b"1e400"):
        assert read_schemaless(message) is NOT_READ, message
