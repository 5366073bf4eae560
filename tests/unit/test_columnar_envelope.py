"""envelope_prefix: the exact text before a schema-first envelope's payload (no JVM)."""

from __future__ import annotations

import json

from connect_spark.columnar.plan import envelope_prefix

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
