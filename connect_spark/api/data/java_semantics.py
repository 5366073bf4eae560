"""Java numeric semantics that Connect's behaviour depends on (shared by the converters, Values and the transforms).

Kafka Connect narrows numbers with Java casts (``(byte) 300 == 44``), prints floats with
``Double.toString``/``Float.toString`` and parses numbers with ``BigDecimal``/``Long.parseLong``. The
converters, ``Values`` and the transforms reproduce those rules through the helpers here, so that a
record transformed by connect_spark looks like one transformed by Kafka Connect.
"""

from __future__ import annotations

import decimal
import math
import re
import struct

__all__ = [
    "INT_BOUNDS",
    "wrap_int",
    "double_to_long",
    "double_to_int",
    "to_float32",
    "java_double_str",
    "java_float_str",
    "parse_java_integer",
    "parse_java_double",
    "parse_big_decimal",
    "decimal_long_value",
    "java_trim",
    "is_blank",
    "float32_shortest",
]

#: Inclusive bounds of Java's byte, short, int and long, by width in bits.
INT_BOUNDS = {
    8: (-(2**7), 2**7 - 1),
    16: (-(2**15), 2**15 - 1),
    32: (-(2**31), 2**31 - 1),
    64: (-(2**63), 2**63 - 1),
}

_FLOAT32_MAX = struct.unpack(">f", b"\x7f\x7f\xff\xff")[0]


def wrap_int(value: int, bits: int) -> int:
    """Keep the low ``bits`` bits of ``value`` as a signed number, as a Java narrowing cast does."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def double_to_long(value: float) -> int:
    """Java's ``(long) d``: truncation toward zero, saturating at the long range, NaN → 0."""
    if math.isnan(value):
        return 0
    low, high = INT_BOUNDS[64]
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def double_to_int(value: float) -> int:
    """Java's ``(int) d``: truncation toward zero, saturating at the int range, NaN → 0."""
    if math.isnan(value):
        return 0
    low, high = INT_BOUNDS[32]
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def to_float32(value: float) -> float:
    """Round a double to the nearest float32 (what Java's ``(float) d`` does), overflowing to ±inf."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack(">f", struct.pack(">f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest_digits(value: float, float32: bool) -> tuple[str, int]:
    """The shortest decimal digits that read back as ``value`` (> 0) and the exponent of the first digit."""
    if float32:
        for precision in range(0, 9):
            text = f"{value:.{precision}e}"
            if to_float32(float(text)) == value:
                break
        mantissa, exponent_text = text.split("e")
        digits = mantissa.replace(".", "").rstrip("0") or "0"
        return digits, int(exponent_text)
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0") or "0"
    return stripped, int(exponent) + len(digits) - 1


def _java_format(value: float, float32: bool) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value), float32)
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            integer = digits[: exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1 :] or "0"
        else:
            integer = "0"
            fraction = "0" * (-exponent - 1) + digits
        return f"{sign}{integer}.{fraction}"
    if len(digits) == 1:
        # Java always prints two significant digits in this form, and picks the closest pair.
        mantissa, exponent_text = f"{abs(value):.1e}".split("e")
        digits, exponent = mantissa.replace(".", ""), int(exponent_text)
    fraction = digits[1:].rstrip("0") or "0"
    return f"{sign}{digits[0]}.{fraction}E{exponent}"


def java_double_str(value: float) -> str:
    """``Double.toString(value)``: ``1.0``, ``1.5E10``, ``1.0E-5``, ``NaN``, ``Infinity``."""
    return _java_format(float(value), float32=False)


def java_float_str(value: float) -> str:
    """``Float.toString((float) value)``: the shortest digits that identify the float32."""
    return _java_format(to_float32(float(value)), float32=True)


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)")
_BIG_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse_java_integer(text: str, bits: int) -> int:
    """``Byte/Short/Integer/Long.parseX(text)``: optional sign and digits, in range, no whitespace.

    Raises:
        ValueError: like Java's ``NumberFormatException``.
    """
    if not _JAVA_INTEGER.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    number = int(text)
    low, high = INT_BOUNDS[bits]
    if not low <= number <= high:
        raise ValueError(f'Value out of range. Value:"{text}"')
    return number


def parse_java_double(text: str) -> float:
    """``Double.parseDouble(text)`` (decimal forms, ``NaN``, ``Infinity``, surrounding whitespace).

    Raises:
        ValueError: like Java's ``NumberFormatException``.
    """
    trimmed = java_trim(text)
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise ValueError(f'For input string: "{text}"')
    if trimmed[-1] in "fFdD" and not trimmed.endswith("Infinity"):
        trimmed = trimmed[:-1]
    return float(trimmed)


def parse_big_decimal(text: str) -> decimal.Decimal:
    """``new BigDecimal(text)``: sign, digits, optional point and exponent; nothing else.

    Raises:
        ValueError: like Java's ``NumberFormatException``.
    """
    if not _BIG_DECIMAL.fullmatch(text):
        raise ValueError(f"Character array is missing \"exponent\" mark 'e' or 'E'. ({text})")
    return decimal.Decimal(text)


def decimal_long_value(value: decimal.Decimal) -> int:
    """``BigDecimal.longValue()``: drop the fraction, keep the low 64 bits."""
    if not value.is_finite():
        raise ValueError(f"{value} is not a finite number")
    return wrap_int(int(value), 64)


def java_trim(text: str) -> str:
    """``String.trim()``: strip characters up to and including the space (U+0020)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def is_blank(text: str | None) -> bool:
    """Kafka's ``Utils.isBlank``: ``None`` or only characters up to the space."""
    return text is None or not java_trim(text)


def float32_shortest(value: float) -> float:
    """The double closest to the shortest decimal that identifies ``value`` as a float32.

    ``to_float32(12.34)`` is ``12.340000152587891``; this gives back ``12.34``, which prints (in JSON
    or with ``repr``) the way Java prints the float.
    """
    single = to_float32(float(value))
    if math.isnan(single) or math.isinf(single) or single == 0:
        return single
    for precision in range(1, 10):
        candidate = float(f"{single:.{precision}g}")
        if to_float32(candidate) == single:
            return candidate
    return single
