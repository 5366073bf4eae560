"""The envelope converter's text proof (schemas.enable=true, payload_regex) gives the per-record records.

Rows are written as Kafka's JsonConverter writes them (compact) or with Python's spacing, with payload
texts crafted to sit on the edges of what the proof lets through: a fraction or an exponent where an
integer is declared, integers one digit too long for their width, escapes, duplicate or reordered keys,
negative zero, non-JSON whitespace, a schema one byte apart; the same in the key, a small struct of numbers
read by regular expression without a JSON parser. Every row must convert as the per-record
path converts it (``run_both`` compares record by record), and the plain rows must take the vectorized path.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.frame_batches import RAW_DDL, plan_connector, raw_row
from tests.integration.test_columnar_equivalence import run_both

JSON = "org.apache.kafka.connect.json.JsonConverter"
CONVERTERS = {"key.converter": JSON, "key.converter.schemas.enable": "true",
              "value.converter": JSON, "value.converter.schemas.enable": "true"}
KEY_SCHEMA = {"type": "struct", "optional": False, "fields": [  # read without a JSON parser (payload_fields_regex)
    {"field": "id", "type": "int64", "optional": False}, {"field": "p", "type": "int16", "optional": True},
    {"field": "hot", "type": "boolean", "optional": True}]}
KEY_PLAIN = '"id":{i},"p":-12,"hot":false'
KEY_EDGES = [
    KEY_PLAIN.replace('"id":{i}', '"id":{i}.0'), KEY_PLAIN.replace('"id":{i}', '"id":1e1'),
    KEY_PLAIN.replace('"id":{i}', '"id":null'), KEY_PLAIN.replace('"id":{i}', '"id":"{i}"'),
    KEY_PLAIN.replace('"id":{i}', '"id":0{i}'), KEY_PLAIN.replace('"id":{i}', '"id":12345678901234567890'),
    KEY_PLAIN.replace('"id":{i}', '"id":-0'), KEY_PLAIN.replace('"p":-12', '"p":32768'),
    KEY_PLAIN.replace('"p":-12', '"p":null'), KEY_PLAIN.replace('"hot":false', '"hot":null'),
    KEY_PLAIN.replace('"hot":false', '"hot":0'), KEY_PLAIN.replace('"hot":false', '"hot":true,"hot":false'),
    KEY_PLAIN.replace('"id":{i},"p":-12', '"p":-12,"id":{i}'), KEY_PLAIN + ',"x":1',
    KEY_PLAIN.replace('"id":{i},', ' "id" :\t{i} ,\n'),
]
VALUE_SCHEMA = {"type": "struct", "name": "com.example.Row", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "n", "type": "int32", "optional": True},
    {"field": "s", "type": "int8", "optional": True},
    {"field": "x", "type": "double", "optional": True},
    {"field": "t", "type": "string", "optional": True},
    {"field": "b", "type": "boolean", "optional": True},
    {"field": "blob", "type": "bytes", "optional": True},
    {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
     "optional": True},
    {"field": "day", "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "optional": True},
    {"field": "in", "type": "struct", "optional": True, "fields": [
        {"field": "q", "type": "int16", "optional": False}, {"field": "r", "type": "double", "optional": True}]},
]}
PLAIN = ('"id":{i},"n":{i},"s":-7,"x":0.37,"t":"user-é","b":true,"blob":"AAFoaQ==","at":1700000000123,'
         '"day":19000,"in":{{"q":3,"r":0.5}}')
#: payload texts either reader might read otherwise, or the per-record path refuses; {i} is the row's id
EDGES = [
    PLAIN.replace('"id":{i}', '"id":{i}.0'),                 # a fraction where int64 is declared
    PLAIN.replace('"n":{i}', '"n":1e2'),                      # exponent
    PLAIN.replace('"x":0.37', '"x":1E2'),
    PLAIN.replace('"x":0.37', '"x":-0.0'),                    # negative zero
    PLAIN.replace('"x":0.37', '"x":-0'),
    PLAIN.replace('"x":0.37', '"x":12'),                      # an integer for a double
    PLAIN.replace('"x":0.37', '"x":12345678901234567'),       # too long to be exact
    PLAIN.replace('"x":0.37', '"x":12.50'),                   # trailing zero
    PLAIN.replace('"n":{i}', '"n":2147483648'),              # beyond int32
    PLAIN.replace('"n":{i}', '"n":999999999'),
    PLAIN.replace('"s":-7', '"s":200'),                       # beyond int8
    PLAIN.replace('"s":-7', '"s":-99'),
    PLAIN.replace('"id":{i}', '"id":12345678901234567890'),  # beyond int64
    PLAIN.replace('"t":"user-é"', '"t":"a\\"b"'),             # escapes
    PLAIN.replace('"t":"user-é"', '"t":"\\u00e9\\n"'),
    PLAIN.replace('"t":"user-é"', '"t":"tab\there"'),         # a raw control character
    PLAIN.replace('"t":"user-é"', '"t":5'),                   # a number for a string
    PLAIN.replace('"b":true', '"b":"true"'),
    PLAIN.replace('"b":true', '"b":1'),
    PLAIN.replace('"id":{i}', '"id":{i},"id":7'),            # duplicate key
    PLAIN.replace('"in":{{"q":3', '"in":{{"q":3,"q":4'),
    PLAIN.replace('"id":{i},"n":{i}', '"n":{i},"id":{i}'),  # key order
    PLAIN.replace(',"s":-7', ''),                             # missing key
    PLAIN + ',"extra":1',                                     # extra key
    PLAIN.replace('"id":{i}', '"id":null'),                   # null where required
    PLAIN.replace('"in":{{"q":3', '"in":{{"q":null'),
    PLAIN.replace('"in":{{"q":3,"r":0.5}}', '"in":null'),      # null where optional
    PLAIN.replace('"blob":"AAFoaQ=="', '"blob":"AAFoaQ"'),      # base64 not canonical
    PLAIN.replace('"at":1700000000123', '"at":253402300800000'),  # beyond year 9999
    PLAIN.replace('"day":19000', '"day":-719163'),
    PLAIN.replace('"x":0.37', '"x":NaN'),
    PLAIN.replace('"id":{i},', '"id":{i},\u00a0'),             # not JSON whitespace
    PLAIN.replace('"id":{i},', '"id" : {i} ,\n\t'),            # JSON whitespace
    PLAIN.replace('"t":"user-é"', '"t":"a\\/b"'),             # an escaped slash (written back unescaped)
    PLAIN.replace('"t":"user-é"', '"t":"[\\"1\\",\\"2\\"]"'),  # escaped quotes, as in Debezium's source.sequence
    PLAIN.replace('"t":"user-é"', '"t":"back\\\\slash"'),
    PLAIN.replace('"t":"user-é"', '"t":"\ufffd"'),           # a true U+FFFD
]


def _key(i: int, separators=(",", ":")) -> bytes:
    return _value("{" + KEY_PLAIN.format(i=i) + "}", KEY_SCHEMA, separators)


def _value(payload: str, schema=VALUE_SCHEMA, separators=(",", ":")) -> bytes:
    prefix = json.dumps({"schema": schema}, separators=separators)[:-1] + separators[0] + '"payload"' + separators[1]
    return (prefix + payload + "}").encode()


def _batch(separators) -> list[tuple]:
    rows = []
    for i in range(len(EDGES) * 2):
        text = "{" + (PLAIN if i % 2 == 0 else EDGES[i // 2]).format(i=i) + "}"
        key = _key(i, separators) if i % 3 else _value("{" + KEY_EDGES[i // 3 % len(KEY_EDGES)].format(i=i) + "}",
                                                       KEY_SCHEMA, separators)
        rows.append(raw_row(i, _value(text, separators=separators), key=key))
    rows.append(raw_row(len(rows), _value("{" + PLAIN.format(i=0) + "}"), key=_value("null", KEY_SCHEMA)))
    n = len(rows)
    other = {**VALUE_SCHEMA, "name": "com.example.Rox"}  # one byte apart
    rows.append(raw_row(n, _value("{" + PLAIN.format(i=n) + "}", other, separators), key=_key(n, separators)))
    spaced = (", ", ": ") if separators == (",", ":") else (",", ":")  # the other writer's spacing
    rows.append(raw_row(n + 1, _value("{" + PLAIN.format(i=n + 1) + "}", separators=spaced), key=_key(n + 1, spaced)))
    rows.append(raw_row(n + 2, _value("{" + PLAIN.format(i=n + 2) + "}", separators=separators)[:-1] + b" }",
                     key=_value('{"id":1.5,"p":1,"hot":true}', KEY_SCHEMA)))
    malformed = _value("{" + PLAIN.format(i=n + 3) + "}", separators=separators).replace("user-é".encode(), b"user-\xe9")
    rows.append(raw_row(n + 3, malformed, key=_key(n + 3, separators)))  # not UTF-8 (Latin-1's é)
    return rows


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")], ids=["compact", "spaced"])
def test_envelope_text_proof_matches_per_record(spark, tmp_path, separators):
    counts = run_both(spark, tmp_path, _batch(separators), **CONVERTERS)
    # the plain rows (half the batch, a third of them with an edge in the key) and the edges read alike take
    # the vectorized path
    assert counts["good"] >= len(EDGES)
    assert counts["fallback"] >= 30


def test_split_frame_keeps_headers_only_where_rows_fall_back(spark, tmp_path):
    """Converted rows carry their headers in ``frame_headers``; the raw ``headers`` column is an empty list
    for them (not null: Spark's Arrow writer is slow on null lists) and the raw headers where rows fall back."""
    from connect_spark.columnar.plan import compile_plan

    headers = [{"key": "h", "value": b"v"}]
    rows = [raw_row(0, _value("{" + PLAIN.format(i=0) + "}"), key=_key(0), headers=headers),
            raw_row(1, b"{not json", key=_key(1), headers=headers),
            raw_row(2, _value("{" + PLAIN.format(i=2) + "}"), key=_key(2))]
    connector, worker = plan_connector(tmp_path, **CONVERTERS)
    raw = spark.createDataFrame(rows, RAW_DDL)
    split = compile_plan(connector, worker).apply(raw).split()
    assert split.schema["headers"].dataType == raw.schema["headers"].dataType
    got = {r["offset"]: (r["row_kind"], r["headers"], r["frame_headers"]) for r in split.collect()}
    as_pairs = lambda hs: [(h["key"], bytes(h["value"])) for h in hs]  # noqa: E731
    assert got[0][0] == 1 and got[0][1] == [] and as_pairs(got[0][2]) == [("h", b"v")]
    assert got[1][0] == 0 and as_pairs(got[1][1]) == [("h", b"v")]
    assert got[2][0] == 1 and got[2][1] == [] and got[2][2] == []
