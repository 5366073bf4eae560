"""``schema.name.adjustment.mode``: schema names made valid Avro names, as Debezium's ``SchemaNameAdjuster``.

* ``none``: names are kept;
* ``avro``: every character Avro does not allow becomes ``_`` (a name must start with ``[A-Za-z_]`` and
  go on with ``[A-Za-z0-9_.]``; a leading digit is kept after the ``_``: ``1a`` becomes ``_1a``);
* ``avro_unicode``: every such character, and ``_`` itself, becomes ``_u`` and its UTF-16 code in
  lowercase hex, padded to four digits only below ``0x100`` (``-`` is ``_u002d``).

Characters are taken as Java's UTF-16 code units, so a character outside the Basic Multilingual Plane
is replaced twice. The ``avro`` and ``avro_unicode`` adjusters are shared by the whole process, as
Debezium's are by the JVM: when two different names adjust to the same one, the second raises
:class:`~connect_spark.api.errors.ConnectException`.

Used by :class:`~connect_spark.transforms.debezium.by_logical_table_router.ByLogicalTableRouter`.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from typing import Callable

from connect_spark.api.errors import ConnectException

__all__ = ["SchemaNameAdjuster", "MODES", "adjuster_for"]

log = logging.getLogger(__name__)

MODES = ("none", "avro", "avro_unicode")


def _ascii_letter(unit: int) -> bool:
    return 0x61 <= unit <= 0x7A or 0x41 <= unit <= 0x5A


def _digit(unit: int) -> bool:
    return 0x30 <= unit <= 0x39


def _underscore_first(unit: int) -> bool:
    return _ascii_letter(unit) or unit == 0x5F


def _underscore_next(unit: int) -> bool:
    return _underscore_first(unit) or unit == 0x2E or _digit(unit)


def _unicode_next(unit: int) -> bool:
    return _ascii_letter(unit) or unit == 0x2E or _digit(unit)


def _unicode_replacement(unit: int) -> str:
    digits = format(unit, "x")
    if len(digits) <= 2:
        digits = "00" + digits
    return "_u" + digits


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _is_java_digit(unit: int) -> bool:
    """``Character.isDigit(char)``: a decimal digit of any script (a surrogate is none)."""
    return not 0xD800 <= unit <= 0xDFFF and unicodedata.category(chr(unit)) == "Nd"


class SchemaNameAdjuster:
    """Adjusts names for one mode; :func:`adjuster_for` gives the shared instance of each.

    Args:
        mode: ``none``, ``avro`` or ``avro_unicode``.
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._first: Callable[[int], bool] = _ascii_letter if mode == "avro_unicode" else _underscore_first
        self._next: Callable[[int], bool] = _unicode_next if mode == "avro_unicode" else _underscore_next
        self._replace: Callable[[int], str] = _unicode_replacement if mode == "avro_unicode" else (lambda unit: "_")
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._original_of: dict[str, str] = {}

    def adjust(self, name: str) -> str:
        """The adjusted name.

        Raises:
            ConnectException: another name already adjusted to the same one (``avro``, ``avro_unicode``).
        """
        if self.mode == "none" or not name:
            return name
        units = _utf16_units(name)
        out: list[str] = []
        changed = False
        first = units[0]
        if self._first(first):
            out.append(chr(first))
        else:
            out.append(self._replace(first))
            if self.mode == "avro" and _is_java_digit(first):
                out.append(chr(first))  # Debezium keeps the digit, so that 1a and 2a stay apart
            changed = True
        for unit in units[1:]:
            if self._next(unit):
                out.append(chr(unit))
            else:
                out.append(self._replace(unit))
                changed = True
        if not changed:
            return name
        adjusted = "".join(out)
        self._record(name, adjusted)
        return adjusted

    def __reduce__(self) -> tuple:
        return (adjuster_for, (self.mode,))  # the receiving process's shared adjuster

    def _record(self, original: str, adjusted: str) -> None:
        with self._lock:
            if original in self._seen:
                return
            self._seen.add(original)
            previous = self._original_of.get(adjusted)
            self._original_of[adjusted] = original
        if previous is None or previous == original:
            log.warning("The Kafka Connect schema name '%s' is not a valid Avro schema name, so replacing with '%s'",
                        original, adjusted)
            return
        raise ConnectException(f"The Kafka Connect schema name '{original}' is not a valid Avro schema name and its "
                               f"replacement '{adjusted}' conflicts with another different schema '{previous}'")


_ADJUSTERS = {mode: SchemaNameAdjuster(mode) for mode in MODES}


def adjuster_for(mode: str) -> SchemaNameAdjuster:
    """The process-wide adjuster of a mode (any case, surrounding blanks ignored)."""
    return _ADJUSTERS[mode.strip().lower()]
