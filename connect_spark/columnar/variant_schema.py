"""Parse Spark's ``schema_of_variant`` strings and map the shapes schemaless JSON can take exactly.

Called by the plan's schemaless JSON converter with the batch's most frequent shape, e.g.
``OBJECT<a: BIGINT, b: ARRAY<STRING>, c: DECIMAL(2,1)>``. A shape is a nested tuple:
``("OBJECT", [(name, shape), ...])``, ``("ARRAY", shape)``, ``("DECIMAL", (p, s))`` or ``(NAME, None)``.
"""

from __future__ import annotations

import re
from typing import Any

from connect_spark.api.errors import ConnectException

__all__ = ["parse", "to_spark", "fewer_fields_regex", "NotVectorizable", "ShapeError"]

_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>:,()])")


class NotVectorizable(ConnectException):
    """A piece of the conversion chain has no column-expression form (for a connector, or one batch)."""


class ShapeError(NotVectorizable):
    """A shape string that does not parse, or a shape whose JSON values cannot be recovered exactly."""


def normalized(shape: Any) -> Any:
    """A Spark column: the shape string with every JSON fraction type spelled ``FRACTION``.

    ``schema_of_variant`` gives each decimal literal its own precision (``DECIMAL(2,1)``,
    ``DECIMAL(3,2)``) and exponent literals ``DOUBLE``; the per-record converter reads them all as
    FLOAT64, so they are one shape. Integers too wide for 64 bits (``DECIMAL(p,0)``, p > 18) stay.
    """
    from pyspark.sql import functions as F

    # one pass: a replacement never creates another match
    return F.regexp_replace(shape, r"DECIMAL\(\d+,[1-9]\d*\)|DECIMAL\((?:[0-9]|1[0-8]),0\)|\bDOUBLE\b", "FRACTION")


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ShapeError(f"Cannot read variant shape at {pos}: {text!r}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def parse(text: str) -> tuple[str, Any]:
    """The nested-tuple form of a ``schema_of_variant`` string.

    Raises:
        ShapeError: for text that is not a shape.
    """
    tokens = _tokens(text)
    shape, end = _parse(tokens, 0)
    if end != len(tokens):
        raise ShapeError(f"Trailing text in variant shape: {text!r}")
    return shape


def _expect(tokens: list[str], i: int, token: str) -> int:
    if i >= len(tokens) or tokens[i] != token:
        raise ShapeError(f"Expected {token!r} in variant shape")
    return i + 1


def _name(token: str) -> str:
    return token[1:-1].replace("``", "`") if token.startswith("`") else token


def _parse(tokens: list[str], i: int) -> tuple[tuple[str, Any], int]:
    if i >= len(tokens):
        raise ShapeError("Unexpected end of variant shape")
    head = tokens[i].upper()
    i += 1
    if head == "OBJECT":
        i = _expect(tokens, i, "<")
        fields = []
        while tokens[i] != ">":
            name = _name(tokens[i])
            i = _expect(tokens, i + 1, ":")
            child, i = _parse(tokens, i)
            fields.append((name, child))
            if tokens[i] == ",":
                i += 1
        return ("OBJECT", fields), i + 1
    if head == "ARRAY":
        i = _expect(tokens, i, "<")
        child, i = _parse(tokens, i)
        return ("ARRAY", child), _expect(tokens, i, ">")
    if head == "DECIMAL":
        i = _expect(tokens, i, "(")
        precision = int(tokens[i])
        i = _expect(tokens, i + 1, ",")
        scale = int(tokens[i])
        return ("DECIMAL", (precision, scale)), _expect(tokens, i + 1, ")")
    return (head, None), i


def _exact_in_array(shape: tuple[str, Any]) -> bool:
    """Array elements are merged into one shape, which hides int-vs-fraction and missing keys."""
    kind, arg = shape
    if kind in ("BIGINT", "STRING", "BOOLEAN", "VOID"):
        return True
    if kind == "ARRAY":
        return _exact_in_array(arg)
    return False


def to_spark(shape: tuple[str, Any]) -> Any:
    """The Spark type the values of ``shape`` are read into, exactly as the per-record converter reads them.

    BIGINT → long; FRACTION/DECIMAL/DOUBLE (JSON fractions) → double; STRING, BOOLEAN; VOID (only nulls) →
    a null string; OBJECT → struct; ARRAY → array of exact element shapes only.

    Raises:
        ShapeError: for VARIANT (mixed types), integers beyond 64 bits (DECIMAL(p, 0), p > 18) and
            arrays whose merged element shape hides differences between elements.
    """
    from pyspark.sql import types as T

    kind, arg = shape
    if kind == "BIGINT":
        return T.LongType()
    if kind == "STRING":
        return T.StringType()
    if kind == "BOOLEAN":
        return T.BooleanType()
    if kind == "VOID":
        return T.StringType()
    if kind in ("DOUBLE", "FRACTION"):
        return T.DoubleType()
    if kind == "DECIMAL":
        precision, scale = arg
        if scale == 0 and precision > 18:
            raise ShapeError("an integer beyond 64 bits")
        return T.DoubleType()
    if kind == "OBJECT":
        if not arg:
            raise ShapeError("an empty object")
        return T.StructType([T.StructField(name, to_spark(child), True) for name, child in arg])
    if kind == "ARRAY":
        if not _exact_in_array(arg):
            raise ShapeError(f"an array of {arg[0]}")
        return T.ArrayType(to_spark(arg), True)
    raise ShapeError(f"a {kind} value")


def _top_level_fields(text: str) -> list[tuple[str, str]] | None:
    """The ``(name, type)`` texts of an ``OBJECT<...>`` shape string's own fields, as the string spells them
    (a name with its backquotes, a nested type whole), or ``None`` when ``text`` is not an object."""
    if not (text.startswith("OBJECT<") and text.endswith(">")):
        return None
    body, fields, depth, start, i = text[len("OBJECT<"):-1], [], 0, 0, 0
    while i < len(body):
        c = body[i]
        if c == "`":  # a quoted name: `` stands for one backquote; nothing inside counts as structure
            i += 1
            while i < len(body) and not (body[i] == "`" and body[i + 1:i + 2] != "`"):
                i += 2 if body[i] == "`" else 1
        elif c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            fields.append(body[start:i])
            start = i + 2  # ", "
        i += 1
    if body:
        fields.append(body[start:])
    split = [field.partition(": ") for field in fields]
    if any(not sep for _, sep, _ in split):
        return None
    return [(name, type_text) for name, _, type_text in split]


def _literal(text: str) -> str:
    """``text`` as a Java regular expression that matches it literally (ASCII punctuation escaped)."""
    return "".join(f"\\{c}" if c.isascii() and not c.isalnum() and c != "_" else c for c in text)


def fewer_fields_regex(candidate: str) -> str | None:
    """A Java regular expression over normalized shape strings: the shapes of objects that hold some of
    ``candidate``'s fields, each with its type or ``VOID`` (null), and no other field (a field that holds an
    object: an object that holds some of its fields, the same way); ``None`` when ``candidate`` is not an
    object's shape.

    For a task whose rows are fitted to the frame's columns, such an object converts as ``candidate``'s
    does: a missing field and a null one are both a null column there, and the others keep their values.
    ``schema_of_variant`` lists an object's fields sorted by name, as ``candidate`` does, so the fields a
    row holds appear in the same order.
    """
    body = _fewer_fields(candidate)
    return None if body is None else f"\\A{body}\\z"


def _fewer_fields(shape: str) -> str | None:
    """:func:`fewer_fields_regex` without its anchors; a nested object's field takes fewer fields too."""
    fields = _top_level_fields(shape)
    if fields is None:
        return None
    optional = "".join(f"(?:(?:(?<=<)|, ){_literal(name)}: (?:{_fewer_fields(type_text) or _literal(type_text)}|VOID))?"
                       for name, type_text in fields)
    return f"OBJECT<{optional}>"
