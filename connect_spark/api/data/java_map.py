"""The iteration order of the Java maps Kafka Connect builds, for schemaless map values.

Kafka Connect's schemaless values are ``java.util.HashMap``s (``JsonConverter`` builds one per JSON
object) and the transforms that rebuild them make new ones: ``ReplaceField`` a ``new HashMap<>(size)``,
``InsertField``, ``Cast``, ``MaskField`` and ``TimestampConverter`` a copy ``new HashMap<>(map)``,
``Flatten`` a ``LinkedHashMap``; each iterates its source in the source's own order. What FileStreamSink
prints is that iteration order, so connect_spark keeps enough of each map's history to reproduce it:

* a plain ``dict`` stands for ``new HashMap<>()`` filled in the dict's order;
* :class:`JavaHashMap` for a HashMap created with a given table size (:func:`hash_map_with_capacity`,
  :func:`hash_map_copy`), filled in the dict's order;
* :class:`JavaLinkedHashMap` for a LinkedHashMap: insertion order.

:func:`java_items` gives the entries in Java's order. A HashMap iterates its buckets in ascending index,
and the entries of one bucket in insertion order (a resize splits each bucket keeping relative order),
so only the final table size matters: it starts at the constructor's size (16 when none), doubles each
time the size passes 0.75 × the table size, and also when a bucket reaches 9 entries in a table smaller
than 64 (Java resizes instead of making a tree bin there). The bucket of a key is
``(h ^ (h >>> 16)) & (size - 1)`` with ``h`` its ``hashCode()`` (String: UTF-16 units, ``31*h + c``;
Integer, Long, Boolean as Java). Maps holding keys of other types keep their insertion order.
The copy constructor's table size follows Java 17 (``tableSizeFor((int)(s / 0.75f + 1.0f))``).

Used by :mod:`connect_spark.connectors.file` (printing) and by the schemaless paths of the transforms
named above (building, and iterating their source in Java's order).
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Mapping

__all__ = [
    "JavaHashMap",
    "JavaLinkedHashMap",
    "hash_map_with_capacity",
    "hash_map_copy",
    "java_items",
    "java_hash",
    "table_size_for",
]

_DEFAULT_CAPACITY = 16
_MAXIMUM_CAPACITY = 1 << 30
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


class JavaHashMap(dict):
    """A dict standing for a ``java.util.HashMap`` whose table was sized at construction.

    Attributes:
        table_size: the table size Java allocates on the first put (``None``: the default 16).
    """

    def __init__(self, *args: Any, table_size: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table_size = table_size

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_hash_map, (dict(self), self.table_size))


class JavaLinkedHashMap(dict):
    """A dict standing for a ``java.util.LinkedHashMap``: Java iterates it in insertion order."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (JavaLinkedHashMap, (dict(self),))


def _rebuild_hash_map(items: dict, table_size: int | None) -> JavaHashMap:
    return JavaHashMap(items, table_size=table_size)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two ≥ ``capacity`` (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAXIMUM_CAPACITY)


def hash_map_with_capacity(expected: int) -> JavaHashMap:
    """An empty ``new HashMap<>(expected)``."""
    return JavaHashMap(table_size=table_size_for(expected))


def hash_map_copy(source: Mapping[Any, Any]) -> JavaHashMap:
    """``new HashMap<>(source)``: the source's entries, put in the source's Java iteration order."""
    size = len(source)
    table = None
    if size > 0:
        as_float = struct.unpack("f", struct.pack("f", size / 0.75))[0] + 1.0
        table = table_size_for(int(as_float))
    return JavaHashMap(java_items(source), table_size=table)


def java_hash(key: Any) -> int | None:
    """``key.hashCode()`` for String, Integer, Long and Boolean keys; ``None`` for other types."""
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if -(2**31) <= key < 2**31:
            return key
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        return _int32((unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF)
    if isinstance(key, str):
        h = 0
        for unit in _utf16_units(key):
            h = (31 * h + unit) & 0xFFFFFFFF
        return _int32(h)
    return None


def _utf16_units(text: str) -> Iterable[int]:
    for char in text:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)
        else:
            yield code


def _int32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _spread(h: int) -> int:
    unsigned = h & 0xFFFFFFFF
    return (unsigned ^ (unsigned >> 16)) & 0xFFFFFFFF


def _final_table_size(spread_hashes: list[int], initial: int | None) -> int:
    """The table size after putting keys with these spread hashes in order (see the module docstring)."""
    capacity = initial if initial is not None else _DEFAULT_CAPACITY
    bins: dict[int, int] = {}
    for size, h in enumerate(spread_hashes, start=1):
        index = h & (capacity - 1)
        bins[index] = bins.get(index, 0) + 1
        # putVal: a 9th entry in one bin of a table under 64 resizes (treeifyBin), then the size check.
        resizes = 1 if bins[index] > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY else 0
        if size > (capacity << resizes) * 3 // 4:
            resizes += 1
        if resizes:
            capacity = min(capacity << resizes, _MAXIMUM_CAPACITY)
            bins = {}
            for earlier in spread_hashes[:size]:
                bin_index = earlier & (capacity - 1)
                bins[bin_index] = bins.get(bin_index, 0) + 1
    return capacity


def java_items(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """The entries of ``mapping`` in the order Java iterates the map it stands for."""
    items = list(mapping.items())
    if isinstance(mapping, JavaLinkedHashMap) or len(items) < 2:
        return items
    hashes = [java_hash(k) for k, _ in items]
    if any(h is None for h in hashes):
        return items
    spread = [_spread(h) for h in hashes]  # type: ignore[arg-type]
    initial = mapping.table_size if isinstance(mapping, JavaHashMap) else None
    mask = _final_table_size(spread, initial) - 1
    order = sorted(range(len(items)), key=lambda i: (spread[i] & mask, i))
    return [items[i] for i in order]
