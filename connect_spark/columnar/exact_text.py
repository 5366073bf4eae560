"""A regular expression per JSON shape that proves a row's text reads the same in Spark and per record.

Called by the plan's schemaless JSON converter (:mod:`connect_spark.columnar.json_columns`) once per learned
shape. A row whose text matches the expression reads in Spark (``from_json``, or each token cast from its
place in the text, :func:`value_positions`) as exactly the values the per-record
:class:`~connect_spark.converters.json.JsonConverter` builds, because the expression only lets through
text where the readers cannot differ:

* the object's keys, in the shape's order, each once, spelled without escapes; no whitespace;
* strings without escapes or control characters (their characters are the value's; UTF-8 validity is
  checked apart);
* integers of at most 18 digits where the shape has BIGINT (they fit a long either way);
* fractions without exponent where the shape has a fraction type; trailing zeros are fine (``12.40``
  reads as 12.4 in both); a negative zero (``-0.0``) reads as ``0.0`` per record, as Kafka reads numbers
  as ``BigDecimal``, and the plan reads every DOUBLE token as ``x + 0.0``, which is ``x`` except for
  ``-0.0``, where it is ``0.0``;
* integers of at most 15 digits where the shape has a fraction type, only for a plan whose task takes the
  frame as it is (``integral_doubles``): per record such a value is an INT64 which the frame's DOUBLE
  column holds exactly, as every row converted per record is cast to the frame's types;
* ``true``/``false`` where the shape has BOOLEAN, ``null`` where it has only nulls (VOID).

Rows the expression refuses are not wrong: the plan checks them the general way (their variant shape).
Checking a row's text this way costs one regular-expression match, less than re-serializing the parsed
row and comparing (``jobs/bench_exactness.py`` measures both).

:func:`payload_regex` is the same proof for the envelope converter (``schemas.enable=true``): the payload
of a declared Connect schema, its struct fields in the schema's order, with the per-type tokens above
(integers short enough for their declared width, fractions or short integers for FLOAT64; strings may hold
the escapes both readers decode alike, every one but ``\\u``) or ``null`` in any field (the plan's guard
refuses nulls the schema does not allow), and JSON whitespace (space, tab, line feed, carriage return: the
only whitespace either reader accepts) around every token. Its strings hold no U+FFFD, which is what Spark's
regular expressions read malformed UTF-8 as, so a payload it proves is valid UTF-8 too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.schema import DECIMAL_LOGICAL_NAME

__all__ = ["COLON", "QUOTE", "ValuePosition", "payload_fields_regex", "payload_regex", "piece_count", "shape_regex",
           "value_positions"]

_STRING = r'"[^"\\\x00-\x1f]*"'
#: a payload's string (the envelope converter parses it): as :data:`_STRING`, plus the escapes both readers decode
#: alike (all but ``\u``, whose lone surrogates they do not), and without U+FFFD, which is what Spark's regular
#: expressions read malformed UTF-8 as: a payload this proves is valid UTF-8 (a true U+FFFD falls back)
_PAYLOAD_STRING = r'"[^"\\\x00-\x1f\ufffd]*+(?:\\["\\/bfnrt][^"\\\x00-\x1f\ufffd]*+)*+"'
_BIGINT = r"-?(?:0|[1-9][0-9]{0,17})"
# a fraction with at most 300 integer digits (beyond, both readers overflow differently), not -0.0...
_FRACTION = r"(?:-?[1-9][0-9]{0,299}\.[0-9]+|0\.[0-9]+|-0\.[0-9]*[1-9][0-9]*)"
_BOOLEAN = "(?:true|false)"
_NULL = "null"
#: JSON's whitespace, the same four characters for Jackson (Spark) and Python's json module
_SPACE = "[ \\t\\n\\r]*"
#: integers of at most this many digits fit the Connect type whatever the reader (99, 9999, 999999999, ...)
_INTEGER_DIGITS = {"INT8": 2, "INT16": 4, "INT32": 9, "INT64": 18}
#: FLOAT64 also reads integers: up to 15 digits they are exact doubles either way (no ``-0``: reads as 0.0
#: per record, as Kafka reads numbers as BigDecimal)
_DOUBLE = f"(?:{_FRACTION}|0|-?[1-9][0-9]{{0,14}})"
#: a schemaless DOUBLE field: a fraction, or negative zero written as one (``-0.0`` reads as 0.0 per record; the
#: plan reads every DOUBLE token as ``x + 0.0``, which is 0.0 there too)
_SCHEMALESS_DOUBLE = f"(?:{_FRACTION}|-0\\.0+)"
#: the same with integers of up to 15 digits, for a plan whose frame types decide (``integral_doubles``): per
#: record such an integer is an INT64 value that the frame's DOUBLE column then holds exactly
_SCHEMALESS_DOUBLE_OR_INTEGER = f"(?:{_FRACTION}|-0(?:\\.0+)?|0|-?[1-9][0-9]{{0,14}})"


def _literal(name: str) -> str | None:
    """``name`` as a Java regex literal, or ``None`` when JSON would have to escape it or it holds U+FFFD (what
    Java reads malformed UTF-8 as: a key holding it could match a row whose bytes are not UTF-8)."""
    if any(c in '"\\\ufffd' or ord(c) < 0x20 for c in name):
        return None
    return "".join("\\" + c if c.isascii() and not c.isalnum() and c != "_" else c for c in name)


def _leaf(spark_type: Any, integral_doubles: bool) -> str | None:
    from pyspark.sql import types as T

    if isinstance(spark_type, T.LongType):
        return _BIGINT
    if isinstance(spark_type, T.DoubleType):
        return _SCHEMALESS_DOUBLE_OR_INTEGER if integral_doubles else _SCHEMALESS_DOUBLE
    if isinstance(spark_type, T.StringType):
        return _STRING
    if isinstance(spark_type, T.BooleanType):
        return _BOOLEAN
    return None  # arrays and anything else: no text proof, the caller keeps its other check


def shape_regex(spark_type: Any, shape: tuple[str, Any], integral_doubles: bool = False) -> str | None:
    """The anchored expression for compact JSON objects of ``shape`` read into ``spark_type`` (a struct
    with the fields in the order the text writes them), or ``None`` when the shape has a part the
    expression does not cover (arrays, keys that need escapes).

    ``shape`` is the parsed variant shape (:func:`connect_spark.columnar.variant_schema.parse`): it tells
    a field that is only ever null (VOID, read as a null string) from a string field. With
    ``integral_doubles`` a DOUBLE field also takes integers of up to 15 digits (exact as doubles).
    """
    from pyspark.sql import types as T

    if not isinstance(spark_type, T.StructType):
        return None
    body = _object(spark_type, shape, integral_doubles)
    return None if body is None else "^" + body + r"\z"


def _object(spark_type: Any, shape: tuple[str, Any], integral_doubles: bool) -> str | None:
    from pyspark.sql import types as T

    kind, children = shape
    if kind != "OBJECT":
        return None
    by_name = dict(children)
    parts = []
    for f in spark_type.fields:
        key = _literal(f.name)
        child = by_name.get(f.name)
        if key is None or child is None:
            return None
        if child[0] == "VOID":
            value = _NULL
        elif isinstance(f.dataType, T.StructType):
            value = _object(f.dataType, child, integral_doubles)
        else:
            value = _leaf(f.dataType, integral_doubles)
        if value is None:
            return None
        parts.append(f'"{key}":{value}')
    return r"\{" + ",".join(parts) + r"\}"


@dataclass(frozen=True)
class ValuePosition:
    """Where one leaf value of a text :func:`shape_regex` proved sits in the text split at a delimiter
    (``text.split('"')`` or ``text.split(':')``, see :func:`value_positions`).

    Attributes:
        index: the piece holding it (split at quotes, a string's piece is its characters and a number's or
            boolean's piece the token between the key's ``:`` and the ``,`` or ``}`` that follow; split at
            colons, every leaf's piece starts with its token, a string's with its opening quote).
        lead: UTF-8 bytes of the piece before the token (split at colons, a string's opening quote).
        trail: UTF-8 bytes of the piece after the token (the bytes, not the characters: Spark cuts bytes
            from a binary value far cheaper than characters from a string, which it counts from the start).
        null: the shape has only ``null`` here (VOID): there is no token to read.
    """

    index: int
    lead: int
    trail: int
    null: bool


#: the delimiters :func:`value_positions` splits a proved text at
QUOTE, COLON = '"', ":"

_MARK = "\x01"  # stands for a token in the layout's template: no key can hold a control character


def _template(spark_type: Any, shape: tuple[str, Any]) -> tuple[str, list[tuple[tuple[str, ...], bool]]]:
    """The compact text of ``shape`` in ``spark_type``'s field order with :data:`_MARK` for every leaf's
    token (inside quotes for a string), and the leaves (field path, only-null) in text order."""
    from pyspark.sql import types as T

    leaves: list[tuple[tuple[str, ...], bool]] = []

    def template(struct: Any, object_shape: tuple[str, Any], path: tuple[str, ...]) -> str:
        by_name = dict(object_shape[1])
        parts = []
        for f in struct.fields:
            child, at = by_name[f.name], path + (f.name,)
            if child[0] != "VOID" and isinstance(f.dataType, T.StructType):
                value = template(f.dataType, child, at)
            else:
                value = f'"{_MARK}"' if child[0] != "VOID" and isinstance(f.dataType, T.StringType) else _MARK
                leaves.append((at, child[0] == "VOID"))
            parts.append(f'"{f.name}":{value}')
        return "{" + ",".join(parts) + "}"

    return template(spark_type, shape, ()), leaves


def value_positions(spark_type: Any, shape: tuple[str, Any],
                    delimiter: str = QUOTE) -> dict[tuple[str, ...], ValuePosition] | None:
    """The position of every leaf value (by field path) in the texts :func:`shape_regex` proves for the
    same arguments, split at ``delimiter``, or ``None`` where it proves none.

    A proved text has no escapes, so every double quote in it opens or closes a key or a string: split
    at them, the text falls into pieces at the same places in every row of the shape, and each value can be
    read from its piece without a JSON parser (the token's lexical form is what the expression allowed).
    Split at colons (:data:`COLON`), it falls into fewer pieces (one more than it has keys), at the same
    places only in the rows whose strings hold no colon: exactly the proved rows that split into
    :func:`piece_count` pieces (every colon of a proved text is a key's separator, part of a key, or a
    character of a string).
    """
    if shape_regex(spark_type, shape) is None:
        return None
    text, leaves = _template(spark_type, shape)
    pieces = text.split(delimiter)
    marked = [(i, len(piece[:piece.index(_MARK)].encode()), len(piece[piece.index(_MARK) + 1:].encode()))
              for i, piece in enumerate(pieces) if _MARK in piece]
    assert len(marked) == len(leaves)  # one token per piece: a key's quotes and colon stand between any two
    return {path: ValuePosition(index, lead, trail, null)
            for (path, null), (index, lead, trail) in zip(leaves, marked)}


def piece_count(spark_type: Any, shape: tuple[str, Any], delimiter: str = QUOTE) -> int | None:
    """How many pieces a text :func:`shape_regex` proves splits into at ``delimiter`` when none of its string
    values holds that character (every proved text, split at quotes), or ``None`` where it proves none."""
    if shape_regex(spark_type, shape) is None:
        return None
    return _template(spark_type, shape)[0].count(delimiter) + 1


def payload_regex(schema: Schema) -> str | None:
    """The anchored expression for JSON payloads of ``schema`` (a Connect STRUCT schema) as the envelope
    converter reads them, or ``None`` when the schema has a part it does not cover (arrays, maps, FLOAT32,
    field names that JSON escapes). A Decimal is covered as base64 text only: one written as a number
    (``decimal.format=NUMERIC``) is left to the re-serialization check, which refuses it."""
    if schema.type is not Type.STRUCT:
        return None
    body = _payload_value(schema)
    return None if body is None else "^" + _SPACE + body + _SPACE + r"\z"


def payload_fields_regex(schema: Schema) -> str | None:
    """For a STRUCT schema of integer and boolean fields only: the anchored expression of its non-null
    payloads (an object, never ``null``) with one capturing group per field, in field order, holding the
    field's token (empty for ``null``): the values read without a JSON parser (a key's ``{"id":1}``).
    ``None`` for any other schema."""
    if schema.type is not Type.STRUCT or not schema.fields:
        return None
    parts = []
    for f in schema.fields:
        key = _literal(f.name)
        if key is None or f.schema.name == DECIMAL_LOGICAL_NAME or f.schema.type.name not in (*_INTEGER_DIGITS, "BOOLEAN"):
            return None
        parts.append(f'"{key}"{_SPACE}:{_SPACE}(?:{_NULL}|({_token(f.schema)}))')
    inside = f"{_SPACE},{_SPACE}".join(parts) + _SPACE if parts else ""
    return "^" + _SPACE + r"\{" + _SPACE + inside + r"\}" + _SPACE + r"\z"


def _payload_value(schema: Schema) -> str | None:
    """One value of ``schema`` (or ``null``) as a JSON token, without the whitespace around it."""
    token = _token(schema)
    return None if token is None else f"(?:{_NULL}|{token})"


def _token(schema: Schema) -> str | None:
    """One non-null value of ``schema`` as JSON text, or ``None`` when not covered."""
    kind = schema.type.name
    if kind in _INTEGER_DIGITS:
        token = f"-?(?:0|[1-9][0-9]{{0,{_INTEGER_DIGITS[kind] - 1}}})"
    elif schema.type is Type.FLOAT64:
        token = _DOUBLE
    elif schema.type in (Type.STRING, Type.BYTES):  # bytes and Decimals: base64 text, checked canonical by the guard
        token = _PAYLOAD_STRING
    elif schema.type is Type.BOOLEAN:
        token = _BOOLEAN
    elif schema.type is Type.STRUCT:
        parts = []
        for f in schema.fields:
            key = _literal(f.name)
            value = _payload_value(f.schema)
            if key is None or value is None:
                return None
            parts.append(f'"{key}"{_SPACE}:{_SPACE}{value}')
        inside = f"{_SPACE},{_SPACE}".join(parts) + _SPACE if parts else ""
        token = r"\{" + _SPACE + inside + r"\}"
    else:
        return None
    return token
