"""The JsonConverter's fast path (connect_spark.converters.json_fast) gives exactly what the general path gives.

Compiled payload converters are compared with ``JsonConverter.to_connect_value`` on many schema shapes and
JSON values (right and wrong types, nulls, missing fields, defaults, range limits, nesting); whole messages
read by a converter that remembers envelope openings are compared with a converter that remembers none
(``schemas.cache.size=0``), errors included, message by message.
"""

from __future__ import annotations

import decimal
import json
import pickle

import pytest

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.json_fast import EnvelopeCache, compile_payload_converter

D = decimal.Decimal
ABSENT = object()  # the field is left out of the payload

#: JSON values as the converter's parser produces them (fractions as Decimal).
VALUES = [
    None, True, False, 0, 1, -1, 127, 128, -129, 2**15, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63,
    -(2**63) - 1, 10**400, 86_400_000, 1_700_000_000_000, D("1.5"), D("-0.0"), D("3.7"), D("1e400"), D("-2.5e-3"),
    "", "abc", "dGVzdA==", "***", " AQI= ", [], [1, 2], [None], ["a", None], [[1, "a"]], [["k", 1]], [[1]], {},
    {"a": 1}, {"x": "y", "n": None}, {"f": 1, "g": "s"},
]


def _primitive_schemas():
    makers = {"boolean": SchemaBuilder.bool, "int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16,
              "int32": SchemaBuilder.int32, "int64": SchemaBuilder.int64, "float": SchemaBuilder.float32,
              "double": SchemaBuilder.float64, "string": SchemaBuilder.string, "bytes": SchemaBuilder.bytes}
    defaults = {"boolean": True, "int8": 7, "int16": -7, "int32": 70000, "int64": 2**40, "float": 1.5,
                "double": -2.25, "string": "dflt", "bytes": b"\x01"}
    for type_name, make in makers.items():
        yield make().build()
        yield make().optional().build()
        yield make().default_value(defaults[type_name]).build()
        yield make().optional().default_value(defaults[type_name]).build()
        yield make().name("com.example.Named").build()


def _logical_schemas():
    for builder, default in ((Decimal.builder(2), D("1.25")), (Date.builder(), datetime_date()),
                             (Time.builder(), None), (Timestamp.builder(), None)):
        yield builder.build()
        yield builder.optional().build()
        if default is not None:
            yield builder.default_value(default).build()
    # A logical name on a type it is not defined on: left to the general path, validated as put does.
    yield SchemaBuilder.string().name(Timestamp.LOGICAL_NAME).optional().build()
    yield SchemaBuilder.int64().name(Date.LOGICAL_NAME).build()


def datetime_date():
    import datetime

    return datetime.date(2024, 2, 29)


def _container_schemas():
    inner = (SchemaBuilder.struct().name("inner")
             .field("f", Schema.INT32_SCHEMA).field("g", Schema.OPTIONAL_STRING_SCHEMA).build())
    optional_inner = (SchemaBuilder.struct().optional()
                      .field("f", Schema.OPTIONAL_INT64_SCHEMA).field("g", Schema.STRING_SCHEMA).build())
    yield inner
    yield optional_inner
    yield SchemaBuilder.array(Schema.INT32_SCHEMA).build()
    yield SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build()
    yield SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).build()
    yield SchemaBuilder.array(inner).optional().build()
    yield SchemaBuilder.array(SchemaBuilder.array(Schema.OPTIONAL_FLOAT64_SCHEMA).build()).build()
    yield SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build()
    yield SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).optional().build()
    yield SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build()
    yield SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build()
    yield SchemaBuilder.map(Schema.STRING_SCHEMA, inner).optional().build()
    yield JsonConverter().as_connect_schema(  # a struct with a default, as JSON declares it
        {"type": "struct", "optional": True, "default": {"f": 3}, "fields": [
            {"field": "f", "type": "int32"}, {"field": "g", "type": "string", "optional": True}]})


SCHEMAS = [*_primitive_schemas(), *_logical_schemas(), *_container_schemas()]


def _strict(value):
    """A comparable form of a Connect value that tells apart types, -0.0 and 0.0, and key order."""
    if isinstance(value, Struct):
        return ("Struct", repr(value.schema), tuple(_strict(value.get_without_default(f)) for f in value.schema.fields))
    if isinstance(value, list):
        return ("list", tuple(_strict(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((_strict(k), _strict(v)) for k, v in value.items()))
    return (type(value).__name__, repr(value))


def _outcome(call):
    try:
        return ("value", _strict(call()))
    except Exception as e:  # the same exception class and text is what must match
        return ("raised", type(e).__name__, str(e))


def _general_converter(replace_null_with_default: bool) -> JsonConverter:
    c = JsonConverter()
    c.configure({"replace.null.with.default": replace_null_with_default}, False)
    return c


@pytest.mark.parametrize("replace", [True, False])
def test_compiled_converters_agree_with_the_general_conversion(replace):
    general = _general_converter(replace)
    checked = 0
    for schema in SCHEMAS:
        compiled = compile_payload_converter(schema, general.to_connect_value, replace)
        holder = SchemaBuilder.struct().field("a", Schema.OPTIONAL_INT32_SCHEMA).field("v", schema).build()
        compiled_holder = compile_payload_converter(holder, general.to_connect_value, replace)
        for value in [*VALUES, ABSENT]:
            if value is not ABSENT:
                expected = _outcome(lambda: general.to_connect_value(schema, value))
                assert _outcome(lambda: compiled(value)) == expected, (schema, value)
            payload = {"a": 5} if value is ABSENT else {"a": 5, "v": value}
            expected = _outcome(lambda: general.to_connect_value(holder, payload))
            assert _outcome(lambda: compiled_holder(payload)) == expected, (schema, value)
            checked += 1
    assert checked == len(SCHEMAS) * (len(VALUES) + 1)


def test_compiled_struct_is_equal_to_one_built_with_put():
    general = _general_converter(True)
    inner = SchemaBuilder.struct().field("n", Schema.INT64_SCHEMA).build()
    schema = (SchemaBuilder.struct().field("s", Schema.OPTIONAL_STRING_SCHEMA).field("i", inner)
              .field("t", Timestamp.builder().optional().build()).build())
    compiled = compile_payload_converter(schema, general.to_connect_value, True)
    value = compiled({"s": "x", "i": {"n": 4}, "t": 1_700_000_000_000})
    built = (Struct(schema).put("s", "x").put("i", Struct(inner).put("n", 4))
             .put("t", Timestamp.to_logical(Timestamp.SCHEMA, 1_700_000_000_000)))
    assert value == built
    value.validate()
    assert value.get("i").get_int64("n") == 4


def test_a_required_string_given_a_number_fails_as_put_fails():
    general = _general_converter(True)
    schema = SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).build()
    compiled = compile_payload_converter(schema, general.to_connect_value, True)
    with pytest.raises(Exception) as caught:
        compiled({"name": 5})
    assert str(caught.value) == 'Invalid value: null used for required field: "name", schema type: STRING'


# -- whole messages --------------------------------------------------------------------------------------

ROW = {"type": "struct", "optional": False, "name": "row", "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "user", "type": "string", "optional": True},
    {"field": "qty", "type": "int32", "optional": True, "default": 1},
    {"field": "amount", "type": "double", "optional": True},
    {"field": "ts", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
    {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "2"}},
    {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": True},
    {"field": "attrs", "type": "map", "keys": {"type": "string"}, "values": {"type": "int32", "optional": True},
     "optional": True},
    {"field": "inner", "type": "struct", "optional": True, "fields": [
        {"field": "k", "type": "string", "optional": False, "doc": "clé ünïcode"}]},
]}
OTHER = {"type": "struct", "fields": [{"field": "id", "type": "int32"}], "optional": False}

PAYLOADS = [
    {"id": 1, "user": "u", "qty": 2, "amount": 0.5, "ts": 1_700_000_000_000, "price": 12.34, "tags": ["a"],
     "attrs": {"x": 1, "y": None}, "inner": {"k": "é"}},
    {"id": 2, "user": None, "qty": None, "amount": -0.0, "ts": None, "price": "BNI=", "tags": [], "attrs": {},
     "inner": None},
    {"id": 3},
    {"id": 4, "amount": 1e300, "qty": 2**31, "user": 7, "tags": ["a", None], "inner": {"k": 1}},
    {"id": None},
    {"id": "x", "amount": "y"},
    {"id": 5, "ts": 1.5, "price": [1]},
    {"id": 6, "attrs": [["x", 1]], "inner": [1]},
    {"id": 7, "extra": {"ignored": True}},
    [1, 2],
    None,
]


def _messages():
    compact = {"separators": (",", ":")}
    messages = []
    for payload in PAYLOADS:
        messages.append(json.dumps({"schema": ROW, "payload": payload}, **compact).encode())
        messages.append(json.dumps({"schema": ROW, "payload": payload}).encode())  # spaces after , and :
    first = json.dumps({"schema": ROW, "payload": PAYLOADS[0]}, **compact)
    opening, _, rest = first.partition('"payload":')
    messages += [
        json.dumps({"schema": ROW, "payload": PAYLOADS[0]}, indent=2).encode(),
        json.dumps({"schema": ROW, "payload": PAYLOADS[0]}, ensure_ascii=False).encode(),
        (opening + '"payload":' + rest).encode(),
        (opening + '"payload" :\n\t' + rest[:-1] + " \r\n} \n").encode(),
        (opening + '"payload":' + rest + "x").encode(),  # extra data
        (opening + '"payload":' + rest[:-1] + ',"payload":{"id":9}}').encode(),  # a third key
        (opening + '"payload":' + rest[:-1] + ',"other":1}').encode(),
        (opening + '"payload":' + rest[:-2]).encode(),  # truncated
        (opening + '"payload":{"id":1,"amount":NaN}}').encode(),
        (opening + '"payload":{"id":1,"amount":1.0e5,"user":"\\ud800"}}').encode(),
        (opening + '"payload":{"id":1,"user":"\xff"}}').encode("latin-1"),  # not UTF-8
        (opening + '"payload":').encode(),
        json.dumps({"payload": PAYLOADS[0], "schema": ROW}).encode(),  # keys the other way round
        b"\xef\xbb\xbf" + first.encode(),  # a byte order mark
        ("  " + first).encode(),
        first.encode("utf-16"),
        json.dumps({"schema": OTHER, "payload": {"id": 1}}).encode(),  # the schema changes ...
        first.encode(),  # ... and back
        json.dumps({"schema": OTHER, "payload": {"id": 2**40}}).encode(),
        json.dumps({"schema": None, "payload": {"a": [1, 2.5]}}).encode(),
        json.dumps({"schema": None, "payload": {"a": [1, 2.5]}}).encode(),
        json.dumps({"schema": {"type": "string"}, "payload": 5}).encode(),
        json.dumps({"schema": {"type": "string"}, "payload": 5}).encode(),
        b'{"schema":{"type":"int32"},"payload":1}',
        b'{"schema":{"type":"int32"},"payload":1} ',
        b'{"schema":{"type":"int32"},"payload":1,"payload":2}',
        b'{"schema":{"type":"int32"},"payload":}',
        b'{"schema":{"type":"int32"},"payload":[]}',
        b'{"schema":{"type":"int32"},"payload":"1"}',
    ]
    return messages


@pytest.mark.parametrize("replace", [True, False])
def test_messages_read_through_remembered_openings_match_the_general_path(replace):
    fast = JsonConverter()
    fast.configure({"replace.null.with.default": replace}, False)
    reference = JsonConverter()
    reference.configure({"replace.null.with.default": replace, "schemas.cache.size": 0}, False)
    messages = _messages()
    for round_ in range(2):  # the second round finds every opening already remembered
        for data in messages:
            expected = _outcome(lambda: reference.to_connect_data("t", data))
            assert _outcome(lambda: fast.to_connect_data("t", data)) == expected, (round_, data)


def test_an_opening_seen_before_reads_only_the_payload():
    general = _general_converter(True)
    schema = general.as_connect_schema(ROW)
    cache = EnvelopeCache(4, json_constant)
    convert = compile_payload_converter(schema, general.to_connect_value, True)
    first = json.dumps({"schema": ROW, "payload": PAYLOADS[0]}).encode()
    assert cache.convert(first) is None
    cache.register(first, schema, lambda: convert)
    second = json.dumps({"schema": ROW, "payload": PAYLOADS[1]}).encode()
    read = cache.convert(second)
    assert read is not None and read.schema is schema
    assert read.value == general.to_connect_data("t", second).value
    # Not this schema, not this spelling, or something after the payload: the general path reads it.
    assert cache.convert(json.dumps({"schema": OTHER, "payload": {"id": 1}}).encode()) is None
    assert cache.convert(second[:-1] + b', "x": 1}') is None
    assert cache.convert(json.dumps({"payload": PAYLOADS[1], "schema": ROW}).encode()) is None
    # Only well-formed openings are remembered; the cache keeps at most its size, most recent first.
    cache.register(json.dumps({"payload": 1, "schema": {"type": "int32"}}).encode(), None, lambda: convert)
    for i in range(6):
        cache.register(json.dumps({"schema": {"type": "int32", "doc": str(i)}, "payload": 1}).encode(), None, lambda: convert)
    assert len(cache) == 4
    assert cache.convert(second) is None
    assert len(pickle.loads(pickle.dumps(cache))) == 0


def test_no_openings_are_remembered_with_a_schema_cache_of_zero():
    cache = EnvelopeCache(0, json_constant)
    data = json.dumps({"schema": {"type": "int32"}, "payload": 1}).encode()
    cache.register(data, Schema.INT32_SCHEMA, lambda: lambda payload: payload)
    assert len(cache) == 0 and cache.convert(data) is None


def json_constant(name):
    raise ValueError(f"constant {name}")
