"""How Debezium's transforms read their keys: the raw string of each, split the way Java splits.

Kafka Connect hands a transform its keys as the user wrote them, and Debezium's transforms read those
strings themselves (``io.debezium.config.Configuration``): a string is not trimmed (``add.fields.prefix=" "``
is a space), and a list is ``String.split(",")`` with every item trimmed, where Java drops the empty
strings at the end before trimming (``h1,`` is one item; ``h1, `` is two, the second empty). The
transforms parse their keys with their ``ConfigDef`` (types and allowed values, reported before the
connector starts) and read the values they act on with the functions here, so both agree with Debezium.
"""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data.java_semantics import java_trim
from connect_spark.api.errors import ConfigException

__all__ = ["raw_string", "java_split", "java_list", "NoEmptyOrSpacedItems"]


def raw_string(configs: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    """The value of ``key`` as the string Debezium reads, or ``default`` when it is not set.

    A value given already typed (a list, a boolean) is turned back into its configuration string.
    """
    value = configs.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def java_split(text: str, separator: str) -> list[str]:
    """Java's ``text.split(separator)`` for a literal, one-character separator.

    Trailing empty strings are dropped (``"a,b,"`` is ``["a", "b"]``, ``",,"`` is ``[]``); a text without
    the separator is itself (``""`` is ``[""]``).
    """
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_list(text: str | None) -> list[str]:
    """Debezium's ``getList``: split on commas, then trim every item (``None`` is the empty list)."""
    if text is None:
        return []
    return [java_trim(item) for item in java_split(text, ",")]


class NoEmptyOrSpacedItems:
    """A list key whose items are neither empty nor contain a space (HeaderToValue's ``fields``/``headers``).

    Checks the parsed list, leaving out the empty items at its end, which Debezium's own split drops
    (its exact reading is checked again when the transform is configured).
    """

    def __call__(self, name: str, value: Any) -> None:
        items = list(value)
        while items and items[-1] == "":
            items.pop()
        if not items:
            raise ConfigException("A value is required", name, value)
        if "" in items:
            raise ConfigException("Empty string element(s) not permitted", name, value)
        if any(" " in item for item in items):
            raise ConfigException("Element(s) containing space not permitted", name, value)

    def __str__(self) -> str:
        return "non-empty list of names without spaces"
