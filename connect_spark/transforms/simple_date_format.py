"""Java ``SimpleDateFormat`` patterns, formatted and parsed in UTC (used by TimestampConverter and TimestampRouter).

Kafka's timestamp transforms take a ``java.text.SimpleDateFormat`` pattern (``yyyy-MM-dd'T'HH:mm:ss.SSSZ``,
``yyyyMMdd``...) and always use the UTC time zone. This module reads the same patterns and gives the
same text, with English month and day names (the default locale of a Connect worker):

=======  =============================  =============================================
Letter   Meaning                        Example
=======  =============================  =============================================
G        era                            ``AD``
y        year (``yy``: two digits)      ``2024``, ``24``
Y        week year                      ``2025`` (for 2024-12-31)
M / L    month (``MMM`` short name,     ``07``, ``Jul``, ``July``
         ``MMMM`` full name)
w / W    week in year / in month        ``27``
D        day in year                    ``189``
d        day in month                   ``10``
F        day of week in month           ``2``
E        day name (``EEEE`` full)       ``Tue``, ``Tuesday``
u        day number of week (1=Monday)  ``2``
a        AM/PM marker                   ``PM``
H / k    hour 0-23 / 1-24               ``0`` / ``24``
K / h    hour in am/pm 0-11 / 1-12      ``0`` / ``12``
m, s     minute, second                 ``30``
S        millisecond                    ``978``
z        time zone name                 ``UTC``
Z        RFC 822 offset                 ``+0000``
X        ISO 8601 offset                ``Z``
=======  =============================  =============================================

Text in single quotes is literal (``''`` is a quote). Parsing is lenient like Java's: numbers
may overflow into the next field (``2024-13-01`` is 2025-01-01), abutting numeric fields
(``yyyyMMdd``) use the pattern widths, and text after the pattern is ignored.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

__all__ = ["SimpleDateFormat"]

_PATTERN_LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")
_NUMERIC_LETTERS = frozenset("yYwWDdFuHkKhmsS") | frozenset("M")  # M/L are numeric when count <= 2
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MILLIS_PER_DAY = 86_400_000
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_OFFSET = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?")


class SimpleDateFormat:
    """A compiled ``SimpleDateFormat`` pattern in UTC.

    Args:
        pattern: the Java pattern.

    Raises:
        ValueError: for an unknown pattern letter or an unterminated quote, with Java's message.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _compile(pattern)

    def to_pattern(self) -> str:
        return self.pattern

    @property
    def tokens(self) -> list[Any]:
        """The compiled pattern: literal strings and ``(letter, count)`` fields, in order (read by the
        column compiler, :mod:`connect_spark.columnar.transforms`)."""
        return list(self._tokens)

    # -- formatting --

    def format(self, millis: int) -> str:
        """The text for an instant given as milliseconds since the epoch."""
        days, millis_of_day = divmod(millis, _MILLIS_PER_DAY)
        try:
            date = datetime.date.fromordinal(_EPOCH_ORDINAL + days)
        except (ValueError, OverflowError) as e:
            raise ValueError(f"Timestamp {millis} is outside the years 1 to 9999") from e
        hour, rest = divmod(millis_of_day, 3_600_000)
        minute, rest = divmod(rest, 60_000)
        second, milli = divmod(rest, 1000)
        out = []
        for token in self._tokens:
            if isinstance(token, str):
                out.append(token)
            else:
                letter, count = token
                out.append(_format_field(letter, count, date, hour, minute, second, milli))
        return "".join(out)

    # -- parsing --

    def parse(self, text: str) -> int:
        """Milliseconds since the epoch of ``text``.

        Raises:
            ValueError: ``Unparseable date`` when the text does not match from its start.
        """
        fields: dict[str, Any] = {}
        position = 0
        tokens = self._tokens
        for i, token in enumerate(tokens):
            if isinstance(token, str):
                if not text.startswith(token, position):
                    raise ValueError(f'Unparseable date: "{text}"')
                position += len(token)
                continue
            letter, count = token
            while position < len(text) and text[position] in " \t":
                position += 1
            next_token = tokens[i + 1] if i + 1 < len(tokens) else None
            abutting = (not isinstance(next_token, str) and next_token is not None and _is_numeric(*next_token))
            position = _parse_field(text, position, letter, count, abutting, fields)
        return _resolve(fields)


def _is_numeric(letter: str, count: int) -> bool:
    if letter in "ML":
        return count <= 2
    return letter in _NUMERIC_LETTERS


def _compile(pattern: str) -> list[Any]:
    tokens: list[Any] = []
    literal: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if char == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                literal.append("'")
                i += 2
                continue
            end = i + 1
            quoted: list[str] = []
            while True:
                if end >= n:
                    raise ValueError("Unterminated quote")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        quoted.append("'")
                        end += 2
                        continue
                    break
                quoted.append(pattern[end])
                end += 1
            literal.extend(quoted)
            i = end + 1
        elif ("a" <= char <= "z") or ("A" <= char <= "Z"):
            if char not in _PATTERN_LETTERS:
                raise ValueError(f"Illegal pattern character '{char}'")
            count = 1
            while i + count < n and pattern[i + count] == char:
                count += 1
            if literal:
                tokens.append("".join(literal))
                literal = []
            tokens.append((char, count))
            i += count
        else:
            literal.append(char)
            i += 1
    if literal:
        tokens.append("".join(literal))
    return tokens


def _pad(value: int, count: int) -> str:
    return str(value).zfill(count) if value >= 0 else "-" + str(-value).zfill(count)


def _week_fields(date: datetime.date) -> tuple[int, int]:
    """Week year and week of year with US rules (weeks start on Sunday; week 1 holds January 1st)."""
    sunday = date - datetime.timedelta(days=(date.weekday() + 1) % 7)
    saturday = sunday + datetime.timedelta(days=6)
    if date.month == 12 and date.year < 9999 and saturday >= datetime.date(date.year + 1, 1, 1):
        return date.year + 1, 1
    first = datetime.date(date.year, 1, 1)
    first_sunday = first - datetime.timedelta(days=(first.weekday() + 1) % 7)
    return date.year, (sunday - first_sunday).days // 7 + 1


def _format_field(letter: str, count: int, date: datetime.date, hour: int, minute: int, second: int,
                  milli: int) -> str:
    if letter == "G":
        return "AD"
    if letter == "y":
        return _pad(date.year % 100, 2) if count == 2 else _pad(date.year, count)
    if letter == "Y":
        week_year = _week_fields(date)[0]
        return _pad(week_year % 100, 2) if count == 2 else _pad(week_year, count)
    if letter in "ML":
        if count >= 4:
            return _MONTHS[date.month - 1]
        if count == 3:
            return _MONTHS[date.month - 1][:3]
        return _pad(date.month, count)
    if letter == "w":
        return _pad(_week_fields(date)[1], count)
    if letter == "W":
        first = date.replace(day=1)
        offset = (first.weekday() + 1) % 7
        return _pad((date.day - 1 + offset) // 7 + 1, count)
    if letter == "D":
        return _pad(date.timetuple().tm_yday, count)
    if letter == "d":
        return _pad(date.day, count)
    if letter == "F":
        return _pad((date.day - 1) // 7 + 1, count)
    if letter == "E":
        name = _DAYS[date.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "u":
        return _pad(date.isoweekday(), count)
    if letter == "a":
        return "AM" if hour < 12 else "PM"
    if letter == "H":
        return _pad(hour, count)
    if letter == "k":
        return _pad(hour or 24, count)
    if letter == "K":
        return _pad(hour % 12, count)
    if letter == "h":
        return _pad(hour % 12 or 12, count)
    if letter == "m":
        return _pad(minute, count)
    if letter == "s":
        return _pad(second, count)
    if letter == "S":
        return _pad(milli, count)
    if letter == "z":
        return "Coordinated Universal Time" if count >= 4 else "UTC"
    if letter == "Z":
        return "+0000"
    return "Z"  # X: ISO 8601 offset, zero in UTC


def _parse_number(text: str, position: int, width: int | None) -> tuple[int, int]:
    end = position
    negative = end < len(text) and text[end] == "-" and width is None
    if negative:
        end += 1
    start_digits = end
    limit = len(text) if width is None else min(len(text), position + width)
    while end < limit and text[end].isdigit():
        end += 1
    if end == start_digits:
        raise ValueError(f'Unparseable date: "{text}"')
    value = int(text[start_digits:end])
    return (-value if negative else value), end


def _parse_name(text: str, position: int, names: list[str]) -> tuple[int, int]:
    lowered = text[position:].lower()
    for candidates in (names, [n[:3] for n in names]):
        for index, name in enumerate(candidates):
            if lowered.startswith(name.lower()):
                return index, position + len(name)
    raise ValueError(f'Unparseable date: "{text}"')


def _parse_field(text: str, position: int, letter: str, count: int, abutting: bool, fields: dict[str, Any]) -> int:
    width = count if abutting else None
    if letter in "ML" and count >= 3:
        index, position = _parse_name(text, position, _MONTHS)
        fields["month"] = index + 1
        return position
    if letter == "E":
        _, position = _parse_name(text, position, _DAYS)
        return position
    if letter == "a":
        index, position = _parse_name(text, position, ["AM", "PM"])
        fields["pm"] = index == 1
        return position
    if letter == "G":
        index, position = _parse_name(text, position, ["BC", "AD"])
        fields["bc"] = index == 0
        return position
    if letter in "zZX":
        if text.startswith("Z", position) and letter == "X":
            fields["offset"] = 0
            return position + 1
        match = _OFFSET.match(text, position)
        if match:
            sign = -1 if match.group(1) == "-" else 1
            fields["offset"] = sign * (int(match.group(2)) * 60 + int(match.group(3) or 0)) * 60_000
            return match.end()
        for zone in ("Coordinated Universal Time", "UTC", "GMT", "Z"):
            if text.startswith(zone, position):
                fields["offset"] = 0
                return position + len(zone)
        raise ValueError(f'Unparseable date: "{text}"')
    start = position
    value, position = _parse_number(text, position, width)
    if letter in "yY":
        digits = position - start
        if count <= 2 and digits == 2 and text[start:position].isdigit():
            value = _two_digit_year(value)
        fields["year" if letter == "y" else "week_year"] = value
    elif letter in "ML":
        fields["month"] = value
    elif letter == "d":
        fields["day"] = value
    elif letter == "D":
        fields["day_of_year"] = value
    elif letter in "Hk":
        fields["hour"] = 0 if (letter == "k" and value == 24) else value
    elif letter in "Kh":
        fields["hour12"] = 0 if (letter == "h" and value == 12) else value
    elif letter == "m":
        fields["minute"] = value
    elif letter == "s":
        fields["second"] = value
    elif letter == "S":
        fields["milli"] = value
    # w, W, F, u are read but, as a lenient Java calendar mostly does here, do not move the date
    return position


def _two_digit_year(value: int) -> int:
    """A two-digit year in the 100 years starting 80 years ago (Java's default century)."""
    start = datetime.date.today().year - 80
    year = (start // 100) * 100 + value
    if year < start:
        year += 100
    return year


def _resolve(fields: dict[str, Any]) -> int:
    year = fields.get("year", fields.get("week_year", 1970))
    if fields.get("bc"):
        year = 1 - year
    if "day_of_year" in fields and "month" not in fields and "day" not in fields:
        month, day = 1, fields["day_of_year"]
    else:
        month, day = fields.get("month", 1), fields.get("day", 1)
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    try:
        first = datetime.date(year, month, 1)
    except ValueError as e:
        raise ValueError(f"Year {year} is outside the years 1 to 9999") from e
    days = first.toordinal() - _EPOCH_ORDINAL + day - 1
    if "hour" in fields:
        hour = fields["hour"]
    else:
        hour = fields.get("hour12", 0) + (12 if fields.get("pm") else 0)
    millis = (((days * 24 + hour) * 60 + fields.get("minute", 0)) * 60 + fields.get("second", 0)) * 1000
    millis += fields.get("milli", 0)
    return millis - fields.get("offset", 0)
