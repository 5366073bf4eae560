"""envelope_prefix: the exact text before a schema-first envelope's payload (no JVM)."""

from __future__ import annotations

import json

from connect_spark.columnar.json_columns import envelope_prefix

SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "a", "type": "int64", "optional": False}]}


def test_compact_envelope_prefix_ends_where_the_payload_starts():
    text = json.dumps({"schema": SCHEMA, "payload": {"a": 1}}, separators=(",", ":"))
    prefix, schema = envelope_prefix(text)
    assert text[len(prefix):] == '{"a":1}}'
    assert schema == SCHEMA


def test_spaced_envelope_keeps_the_writers_spacing():
    text = json.dumps({"schema": SCHEMA, "payload": {"a": 1}})
    prefix, schema = envelope_prefix(text)
    assert prefix.startswith('{"schema": {"type": "struct"') and prefix.endswith('"payload": ')
    assert text[len(prefix):] == '{"a": 1}}'
    assert schema == SCHEMA


def test_schema_with_braces_inside_strings_is_skipped_as_json():
    schema = {**SCHEMA, "doc": 'has } and "payload": inside'}
    text = json.dumps({"schema": schema, "payload": 5}, separators=(",", ":"))
    prefix, found = envelope_prefix(text)
    assert text[len(prefix):] == "5}"
    assert found == schema


def test_other_layouts_have_no_prefix():
    assert envelope_prefix('{"payload":1,"schema":{"type":"int64"}}') is None
    assert envelope_prefix('{"schema":{"type":"int64"}') is None
    assert envelope_prefix('{"schema":{bad,"payload":1}') is None
    assert envelope_prefix("[1,2]") is None


def test_only_json_whitespace_and_no_constants_in_a_prefix():
    text = json.dumps({"schema": SCHEMA, "payload": {"a": 1}}, separators=(",", ":"))
    assert envelope_prefix(text.replace(',"payload"', ',\u00a0"payload"')) is None
    assert envelope_prefix(text.replace('{"schema"', '\u2028{"schema"')) is None
    assert envelope_prefix(text.replace(',"payload"', ',\r\n\t "payload"')) is not None
    with_nan = json.dumps({"schema": {**SCHEMA, "default": float("nan")}, "payload": 1}, separators=(",", ":"))
    assert "NaN" in with_nan and envelope_prefix(with_nan) is None
