"""The text proofs' regular expressions (connect_spark.columnar.exact_text), read with Python's re module.

Java's and Python's syntax agree on everything the expressions use but the end anchor (``\\z``).
"""

import json
import re

import pytest

from connect_spark.columnar.exact_text import (
    COLON,
    QUOTE,
    payload_fields_regex,
    payload_regex,
    piece_count,
    shape_regex,
    value_positions,
)
from connect_spark.columnar.json_columns import ordered_like, proof_delimiter
from connect_spark.columnar.variant_schema import parse, to_spark
from connect_spark.converters.json import JsonConverter


def _matcher(shape_text: str, integral_doubles: bool = False):
    shape = parse(shape_text)
    regex = shape_regex(to_spark(shape), shape, integral_doubles)
    assert regex is not None
    return re.compile(regex.replace(r"\z", r"\Z")).search


FLAT = "OBJECT<id: BIGINT, name: STRING, price: FRACTION, ok: BOOLEAN, gone: VOID>"


@pytest.mark.parametrize("text", [
    '{"id":1,"name":"a","price":1.5,"ok":true,"gone":null}',
    '{"id":-0,"name":"","price":12.40,"ok":false,"gone":null}',
    '{"id":-123456789012345678,"name":"é€ x","price":-0.5,"ok":true,"gone":null}',
    '{"id":0,"name":"a","price":0.0,"ok":true,"gone":null}',
    '{"id":1,"name":"a","price":-0.0,"ok":true,"gone":null}',      # negative zero: the plan reads 0.0, as per record
    '{"id":1,"name":"a","price":-0.00,"ok":true,"gone":null}',
])
def test_exact_texts_match(text):
    assert _matcher(FLAT)(text)


@pytest.mark.parametrize("price, integral", [
    ("1", True), ("0", True), ("-0", True), ("-12", True), ("999999999999999", True),  # 15 digits: exact doubles
    ("1234567890123456", False), ("01", False), ("-", False), ("1.", False), ("1e5", False),
])
def test_integers_where_the_shape_has_a_fraction_match_only_for_frame_tasks(price, integral):
    text = '{"id":1,"name":"a","price":%s,"ok":true,"gone":null}' % price
    assert bool(_matcher(FLAT, integral_doubles=True)(text)) is integral
    assert not _matcher(FLAT)(text)


@pytest.mark.parametrize("text", [
    '{"id":1,"name":"a","price":-0.0.0,"ok":true,"gone":null}',    # not a number
    '{"id":1,"name":"a","price":-00.0,"ok":true,"gone":null}',
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



# --- the envelope payload's expression (payload_regex), from a Connect schema ---------------------

ENVELOPE_SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "n", "type": "int32", "optional": True},
    {"field": "s", "type": "int8", "optional": True},
    {"field": "x", "type": "double", "optional": True},
    {"field": "t", "type": "string", "optional": True},
    {"field": "b", "type": "boolean", "optional": True},
    {"field": "in", "type": "struct", "optional": True, "fields": [{"field": "q", "type": "int16", "optional": True}]},
]}


def _payload_matcher(schema_json):
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    regex = payload_regex(converter.as_connect_schema(schema_json))
    assert regex is not None
    return re.compile(regex.replace(r"\z", r"\Z")).search


@pytest.mark.parametrize("text", [
    '{"id":1,"n":2,"s":-99,"x":0.37,"t":"a","b":true,"in":{"q":9999}}',
    '{"id":-123456789012345678,"n":999999999,"s":0,"x":5,"t":"é€","b":false,"in":null}',
    '{"id":1,"n":null,"s":null,"x":null,"t":null,"b":null,"in":{"q":null}}',
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a\\"b\\\\c\\/d\\n\\t\\r\\b\\f","b":true,"in":null}',  # escapes read alike
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"[\\"40000696\\",\\"40000696\\"]","b":true,"in":null}',  # Debezium's sequence
    '{"id":null,"n":2,"s":1,"x":12.40,"t":"","b":true,"in":{"q":1}}',
    ' {"id": 1, "n": 2, "s": 3,\n "x": 1.5, "t": "a", "b": true, "in": {"q": 1}} ',   # JSON spacing
    '{\t"id"\r:1,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":{ "q" : 1 }}',
    'null',
])
def test_payloads_both_readers_read_alike_match(text):
    assert _payload_matcher(ENVELOPE_SCHEMA)(text)


@pytest.mark.parametrize("text", [
    '{"id":1.0,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null}',            # a fraction where int64 is declared
    '{"id":1e2,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null}',            # exponent
    '{"id":1,"n":2,"s":3,"x":1e2,"t":"a","b":true,"in":null}',
    '{"id":1,"n":2,"s":3,"x":-0.0,"t":"a","b":true,"in":null}',             # negative zero
    '{"id":1,"n":2,"s":3,"x":-0,"t":"a","b":true,"in":null}',
    '{"id":1,"n":2,"s":3,"x":1234567890123456,"t":"a","b":true,"in":null}',  # 16-digit integer for a double
    '{"id":1,"n":1234567890,"s":3,"x":1.5,"t":"a","b":true,"in":null}',     # 10 digits for int32
    '{"id":1,"n":2,"s":100,"x":1.5,"t":"a","b":true,"in":null}',            # 3 digits for int8
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"\\u00e9","b":true,"in":null}',        # \\u: lone surrogates read apart
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a\\x","b":true,"in":null}',           # not an escape
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a\\","b":true,"in":null}',            # the quote escaped: no string end
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a\ufffd","b":true,"in":null}',        # what Spark reads malformed UTF-8 as
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a\u0001","b":true,"in":null}',        # raw control character
    '{"id":1,"id":2,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null}',       # duplicate key
    '{"n":2,"id":1,"s":3,"x":1.5,"t":"a","b":true,"in":null}',              # key order
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":true}',                        # missing key
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null,"z":1}',        # extra key
    '{"id":1,"n":2,"s":3,"x":1.5,"t":5,"b":true,"in":null}',                # a number for a string
    '{"id":1,"n":"2","s":3,"x":1.5,"t":"a","b":true,"in":null}',            # a string for an int
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":"true","in":null}',
    '{"id":1,"n":2,"s":3,"x":NaN,"t":"a","b":true,"in":null}',
    '{"id":1,"n":2,"s":3,"x":1.5,"t":\'a\',"b":true,"in":null}',
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":{"q":1,"q":2}}',
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":[1]}',
    '{"id":1,"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null}}',
    '{"id":1,\u00a0"n":2,"s":3,"x":1.5,"t":"a","b":true,"in":null}',        # not JSON whitespace
])
def test_payloads_the_readers_may_read_apart_do_not_match(text):
    assert not _payload_matcher(ENVELOPE_SCHEMA)(text)


@pytest.mark.parametrize("field", [
    {"field": "a", "type": "array", "items": {"type": "int64"}, "optional": True},
    {"field": "m", "type": "map", "keys": {"type": "string"}, "values": {"type": "int64"}, "optional": True},
    {"field": "f", "type": "float", "optional": True},
    {"field": 'q"', "type": "int64", "optional": True},
])
def test_payload_schemas_without_a_text_proof(field):
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    schema = converter.as_connect_schema({"type": "struct", "optional": False, "fields": [field]})
    assert payload_regex(schema) is None


def test_a_decimal_is_proved_as_base64_text_only():
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    schema = converter.as_connect_schema({"type": "struct", "optional": False, "fields": [
        {"field": "d", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "optional": True,
         "parameters": {"scale": "2"}}]})
    regex = re.compile(payload_regex(schema).replace(r"\z", r"\Z"))
    assert regex.match('{"d":"AN4="}') and regex.match('{"d":null}')
    assert not regex.match('{"d":2.22}')  # decimal.format=NUMERIC: left to the re-serialization check


def test_small_number_structs_have_one_group_per_field():
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    schema = converter.as_connect_schema({"type": "struct", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False}, {"field": "on", "type": "boolean", "optional": True}]})
    match = re.compile(payload_fields_regex(schema).replace(r"\z", r"\Z")).search
    assert match('{"id":-12,"on":true}').groups() == ("-12", "true")
    assert match(' { "id" : 7 ,\n"on":null } ').groups() == ("7", None)
    for text in ["null", '{"id":1.0,"on":true}', '{"id":1,"on":1}', '{"on":true,"id":1}', '{"id":1}',
                 '{"id":1,"on":true,"x":1}', '{"id":1234567890123456789,"on":true}']:
        assert match(text) is None, text
    with_text = converter.as_connect_schema({"type": "struct", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False}, {"field": "s", "type": "string", "optional": True}]})
    assert payload_fields_regex(with_text) is None


NESTED = "OBJECT<id: BIGINT, in: OBJECT<deep: OBJECT<x: FRACTION>, s: STRING>, ok: BOOLEAN, gone: VOID, tail: STRING>"
#: keys that are not ASCII, one holding a colon: positions count bytes
WIDE = "OBJECT<`é:1`: STRING, `ü`: BIGINT, z: STRING>"


@pytest.mark.parametrize("delimiter", [QUOTE, COLON])
@pytest.mark.parametrize("shape_text, text", [
    (FLAT, '{"id":-12,"name":"a, b {c}","price":12.40,"ok":false,"gone":null}'),
    (FLAT, '{"id":0,"name":"","price":0.5,"ok":true,"gone":null}'),
    (NESTED, '{"id":7,"in":{"deep":{"x":1.25},"s":""},"ok":true,"gone":null,"tail":"é"}'),
    (NESTED, '{"id":7,"in":{"deep":{"x":-0.5},"s":"q"},"ok":false,"gone":null,"tail":"}"}'),
    (WIDE, '{"é:1":"ä€","ü":-3,"z":"x"}'),
])
def test_value_positions_read_each_value_of_a_proved_text(shape_text, text, delimiter):
    shape = parse(shape_text)
    spark_type = ordered_like(text, to_spark(shape))
    assert shape_regex(spark_type, shape) is not None
    positions = value_positions(spark_type, shape, delimiter)
    pieces = [piece.encode() for piece in text.split(delimiter)]
    assert len(pieces) == piece_count(spark_type, shape, delimiter)

    def read(struct, document, path=()):
        for f in struct.fields:
            at = path + (f.name,)
            if at not in positions:
                read(f.dataType, document[f.name], at)
                continue
            where = positions[at]
            token = pieces[where.index][where.lead:len(pieces[where.index]) - where.trail].decode()
            if where.null:
                assert document[f.name] is None and token == "null"
            elif f.dataType.typeName() == "string":
                assert token == document[f.name]
            else:
                assert json.loads(token) == document[f.name]

    read(spark_type, json.loads(text))


def test_no_positions_where_no_text_is_proved():
    shape = parse("OBJECT<id: BIGINT, tags: ARRAY<BIGINT>>")
    assert value_positions(to_spark(shape), shape) is None
    assert piece_count(to_spark(shape), shape, COLON) is None


def test_a_colon_in_a_string_adds_a_piece_split_at_colons_only():
    shape = parse(FLAT)
    spark_type = to_spark(shape)
    text = '{"gone":null,"id":1,"name":"a:b","ok":true,"price":1.5}'
    assert len(text.split(QUOTE)) == piece_count(spark_type, shape, QUOTE)
    assert len(text.split(COLON)) == piece_count(spark_type, shape, COLON) + 1


def test_keys_holding_the_replacement_character_are_not_proved():
    shape = parse("OBJECT<`a\ufffd`: BIGINT>")
    assert shape_regex(to_spark(shape), shape) is None


def test_texts_split_at_colons_unless_a_sampled_string_holds_one():
    shape = parse(FLAT)
    spark_type = to_spark(shape)
    plain = '{"id":1,"name":"a","price":1.5,"ok":true,"gone":null}'
    spaced = '{"id": 2, "name": "b", "price": 1.5, "ok": true, "gone": null}'
    assert proof_delimiter([plain, spaced], spark_type, shape) == COLON
    assert proof_delimiter([plain, plain.replace('"a"', '"10:30"')], spark_type, shape) == QUOTE
    arrays = parse("OBJECT<id: BIGINT, tags: ARRAY<BIGINT>>")
    assert proof_delimiter(['{"id":1,"tags":[]}'], to_spark(arrays), arrays) == QUOTE
