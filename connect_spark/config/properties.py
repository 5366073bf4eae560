"""Java ``.properties`` files, read with the semantics of ``java.util.Properties.load``.

Worker and connector configurations are written as ``.properties`` files, as for Kafka Connect's
``connect-standalone``; the CLI reads them with :func:`load_properties` and config providers read
referenced files with it too (``${file:/path:key}``).

The rules, as in Java:

* A *natural line* ends with ``\\n``, ``\\r`` or ``\\r\\n``. Blank lines are skipped; a line whose first
  non-blank character is ``#`` or ``!`` is a comment (a backslash at its end does not continue it).
* A *logical line* continues on the next natural line when it ends with an odd number of backslashes;
  the backslash and the line end are dropped, and so is the leading whitespace of the next line.
  A ``#`` at the start of a continuation line is not a comment.
* The key ends at the first unescaped ``=``, ``:`` or whitespace (space, tab, form feed). Whitespace
  around the separator is skipped, and one ``=``/``:`` after whitespace is part of the separator. The
  value is the rest of the line, trailing whitespace included. A line with only a key has value ``""``.
* In keys and values ``\\t \\n \\r \\f`` and ``\\uXXXX`` are escapes; a backslash before any other
  character gives that character (``\\:`` is ``:``, ``\\b`` is ``b``, ``\\\\`` is ``\\``).
* A later duplicate key wins.

One difference from ``Properties.load(InputStream)``, which reads ISO-8859-1: files are read as
UTF-8 (falling back to ISO-8859-1 when they are not valid UTF-8), and a leading byte-order mark is
ignored.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Iterator, Mapping

from connect_spark.api.errors import ConfigException

__all__ = ["load_properties", "parse_properties", "format_properties"]

log = logging.getLogger(__name__)

_WHITESPACE = " \t\f"
_LINE_END = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a ``.properties`` file into a dict of strings.

    Called by the CLI for worker and connector files, and by the ``file`` config provider.

    Raises:
        ConfigException: naming the path when the file is missing or unreadable, or when it holds a
            malformed ``\\uXXXX`` escape (with the line number).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ConfigException(f"Properties file not found: {os.fspath(path)}") from None
    except OSError as e:
        raise ConfigException(f"Cannot read properties file {os.fspath(path)}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        log.debug("%s is not valid UTF-8; reading it as ISO-8859-1", os.fspath(path))
        text = data.decode("iso-8859-1")
    return parse_properties(text, source=os.fspath(path))


def parse_properties(text: str, source: str | None = None) -> dict[str, str]:
    """Parse the text of a ``.properties`` file into a dict of strings (insertion order = file order).

    Args:
        text: the file content.
        source: where the text came from, for error messages.

    Raises:
        ConfigException: when a ``\\uXXXX`` escape is malformed.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    result: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        key, value = _split(line)
        try:
            result[_unescape(key)] = _unescape(value)
        except ValueError as e:
            where = f"{source}:{lineno}" if source else f"line {lineno}"
            raise ConfigException(f"{where}: {e}") from None
    return result


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first natural line number, logical line)`` with comments, blanks and continuations handled."""
    parts: list[str] = []
    start = 0
    continuing = False
    for lineno, natural in enumerate(_LINE_END.split(text), start=1):
        stripped = natural.lstrip(_WHITESPACE)
        if not continuing:
            if not stripped or stripped[0] in "#!":
                continue
            start = lineno
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            parts.append(stripped[:-1])
            continuing = True
            continue
        parts.append(stripped)
        yield start, "".join(parts)
        parts = []
        continuing = False
    if continuing:
        yield start, "".join(parts)


def _split(line: str) -> tuple[str, str]:
    """Split a logical line into its raw (still escaped) key and value."""
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for i, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and char in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        escaped = (not escaped) if char == "\\" else False
    while value_start < len(line):
        char = line[value_start]
        if char not in _WHITESPACE:
            if not has_separator and char in "=:":
                has_separator = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(raw: str) -> str:
    """Apply the escapes of a key or value. Raises ValueError on a malformed ``\\uXXXX``."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        char = raw[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        if i >= n:  # cannot happen for lines from _logical_lines; be lenient anyway
            break
        char = raw[i]
        i += 1
        if char == "u":
            digits = raw[i : i + 4]
            if len(digits) < 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"Malformed \\uxxxx encoding: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


def format_properties(props: Mapping[str, str], header: str | None = None) -> str:
    """Write ``props`` as ``.properties`` text that :func:`parse_properties` reads back unchanged.

    Used where connect_spark writes configurations to a file (the standalone config store). Keys and
    values are escaped like ``Properties.store`` does, except that non-ASCII characters are kept as they
    are (the file is UTF-8).

    Args:
        props: the keys and values (both strings).
        header: an optional comment written as ``# header`` on the first lines.
    """
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    for key, value in props.items():
        lines.append(f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}")
    return "\n".join(lines) + "\n"


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif char == " " and (is_key or i == 0):
            out.append("\\ ")
        elif char in "=:#!":
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
