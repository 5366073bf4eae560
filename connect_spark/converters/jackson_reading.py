"""What Kafka's ``JsonDeserializer`` reads that a strict JSON parser refuses.

Kafka's JsonConverter parses a message with Jackson's ``ObjectMapper.readTree``, configured to accept leading
zeros in numbers (``007`` is 7, ``-01.5`` is -1.5) and, like every ``ObjectMapper`` by default, to stop after
the first value: what follows a complete object, array or string is never read (``{"a":1} x``, two
documents in one message, a trailing NUL byte, even bytes that are not UTF-8). Whitespace alone is no value
(null without schemas). Python's ``json`` module refuses all of these.

:func:`read_leniently` is what :class:`connect_spark.converters.json.JsonConverter` calls after the strict
parse refused a message: it gives Jackson's value or raises :class:`ValueError` when Jackson refuses too. A
root number must then end the message or be followed by JSON whitespace, and a root ``true``, ``false`` or
``null`` must not run into a letter, digit, ``_``, ``$`` or a non-ASCII character (``1x``, ``1]`` and
``truex`` stay errors, ``true]`` is true), as in Jackson's byte parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["read_leniently", "MISSING"]

#: The value of a message holding only whitespace (Jackson's ``MissingNode``, read as null without schemas).
MISSING = None

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# a string (kept as it is) or a number's leading zeros (dropped, its sign kept): ``-007`` → ``-7``; digits after
# a letter, a digit, a point or a sign belong to another token (``100``, ``1.005``, ``1e-007``)
_STRING_OR_LEADING_ZEROS = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])(-?)0+(?=\d)')
_AFTER_ROOT_NUMBER = frozenset(" \t\n\r")


def read_leniently(data: bytes, decoder: json.JSONDecoder) -> Any:
    """The value Kafka's ``JsonDeserializer`` reads from ``data``, which a strict parse refused.

    Raises:
        ValueError: Jackson refuses ``data`` too (the caller reports its own strict parse's error).
    """
    text = _decoded_prefix(data)
    start = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if start == len(text):
        return MISSING
    if "0" in text:
        text = _STRING_OR_LEADING_ZEROS.sub(lambda m: m.group(0) if m.group(1) is None else m.group(1), text)
        start = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    value, end = decoder.raw_decode(text, start)
    if end < len(text):
        _check_root_token_end(text[start], text[end])
    return value


def _decoded_prefix(data: bytes) -> str:
    """``data`` decoded as ``json.loads`` decodes bytes, up to the first byte that does not decode (Jackson
    never reads past the first value, so bytes after it may be anything)."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding, "surrogatepass")
    except UnicodeDecodeError as e:
        return data[:e.start].decode(encoding, "surrogatepass")


def _check_root_token_end(first: str, following: str) -> None:
    """Refuse a root number or literal that runs into the next character, as Jackson does."""
    if first in "-0123456789":
        if following not in _AFTER_ROOT_NUMBER:
            raise ValueError(f"Expected space separating root-level values, got {following!r}")
    elif first in "tfn" and following >= "0" and following not in "]}":
        if following >= "\x7f" or following.isalnum() or following in "_$":
            raise ValueError(f"Unrecognized token: a literal followed by {following!r}")
