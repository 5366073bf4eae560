"""The text proof's regular expressions (connect_spark.columnar.exact_text), read with Python's re module.

Java's and Python's syntax agree on everything the expressions use but the end anchor (``\\z``).
"""

import re

import pytest

from connect_spark.columnar.exact_text import shape_regex
from connect_spark.columnar.variant_schema import parse, to_spark


def _matcher(shape_text: str):
    shape = parse(shape_text)
    regex = shape_regex(to_spark(shape), shape)
    assert regex is not None
    return re.compile(regex.replace(r"\z", r"\Z")).search


FLAT = "OBJECT<id: BIGINT, name: STRING, price: FRACTION, ok: BOOLEAN, gone: VOID>"


@pytest.mark.parametrize("text", [
    '{"id":1,"name":"a","price":1.5,"ok":true,"gone":null}',
    '{"id":-0,"name":"","price":12.40,"ok":false,"gone":null}',
    '{"id":-123456789012345678,"name":"é€ x","price":-0.5,"ok":true,"gone":null}',
    '{"id":0,"name":"a","price":0.0,"ok":true,"gone":null}',
])
def test_exact_texts_match(text):
    assert _matcher(FLAT)(text)


@pytest.mark.parametrize("text", [
    '{"id":1,"name":"a","price":-0.0,"ok":true,"gone":null}',      # negative zero
    '{"id":1,"name":"a","price":-0.00,"ok":true,"gone":null}',
    '{"id":1,"name":"a","price":1e5,"ok":true,"gone":null}',        # exponent
    '{"id":1234567890123456789,"name":"a","price":1.5,"ok":true,"gone":null}',  # 19 digits
    '{"id":01,"name":"a","price":1.5,"ok":true,"gone":null}',
    '{"id":1,"name":"a\\"b","price":1.5,"ok":true,"gone":null}',    # escape
    '{"id":1,"name":"a\tb","price":1.5,"ok":true,"gone":null}',     # raw control character
    '{"id":1,"name":"a","price":1,"ok":true,"gone":null}',          # integer for a fraction
    '{"id":1.0,"name":"a","price":1.5,"ok":true,"gone":null}',
    '{"id":1, "name":"a","price":1.5,"ok":true,"gone":null}',       # whitespace
    '{"name":"a","id":1,"price":1.5,"ok":true,"gone":null}',        # key order
    '{"id":1,"name":"a","price":1.5,"ok":true,"gone":null,"x":1}',  # extra key
    '{"id":1,"name":"a","price":1.5,"ok":true}',                    # missing key
    '{"id":1,"name":null,"price":1.5,"ok":true,"gone":null}',       # null in a typed field
    '{"id":1,"name":"a","price":1.5,"ok":true,"gone":"x"}',         # a value where only nulls were
    '{"id":1,"name":"a","price":1.5,"ok":TRUE,"gone":null}',
    'x{"id":1,"name":"a","price":1.5,"ok":true,"gone":null}',
])
def test_texts_the_readers_may_read_apart_do_not_match(text):
    assert not _matcher(FLAT)(text)


def test_keys_are_literals_and_nested_objects_are_covered():
    match = _matcher("OBJECT<`a.b`: BIGINT, `in`: OBJECT<`[r]`: STRING, `x+`: BOOLEAN>>")
    assert match('{"a.b":1,"in":{"[r]":"s","x+":true}}')
    assert not match('{"axb":1,"in":{"[r]":"s","x+":true}}')
    assert not match('{"a.b":1,"in":{"r":"s","x+":true}}')
    assert not match('{"a.b":1,"in":{"[r]":"s","xx":true}}')


@pytest.mark.parametrize("shape_text", ["OBJECT<tags: ARRAY<BIGINT>, id: BIGINT>", "ARRAY<BIGINT>", "STRING"])
def test_shapes_without_a_text_proof(shape_text):
    shape = parse(shape_text)
    assert shape_regex(to_spark(shape), shape) is None


def test_keys_json_must_escape_have_no_text_proof():
    from pyspark.sql import types as T

    spark_type = T.StructType([T.StructField('a"b', T.LongType())])
    assert shape_regex(spark_type, ("OBJECT", [('a"b', ("BIGINT", None))])) is None

