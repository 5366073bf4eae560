"""Column expressions built once per JVM and reused by every micro-batch.

Each PySpark ``Column`` call is a round trip to the JVM. The per-batch code of the frame path (the plan's
record frame, a sink's table columns) builds the same expressions for every batch from the same inputs
(constants, or a frame schema that stays the same batch after batch), so it asks :func:`reused_columns`
for them instead: built on the first batch, returned as they are afterwards. A ``Column`` is an
expression, bound to no DataFrame, so one object serves any frame with those columns.

Entries are kept per Py4J gateway (a new JVM builds them again) and at most :data:`MAX_ENTRIES` in all,
the least recently used dropped first. Under Spark Connect there is no gateway; expressions are plain
client-side objects there and are cached the same way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

__all__ = ["reused_columns", "MAX_ENTRIES"]

T = TypeVar("T")

#: Cached entries across all callers (each one a few expressions: a schema's table columns, a frame's select).
MAX_ENTRIES = 256

_lock = threading.Lock()
_entries: "OrderedDict[tuple[int, Hashable], tuple[Any, Any]]" = OrderedDict()


def reused_columns(key: Hashable, build: Callable[[], T]) -> T:
    """What ``build()`` returned the first time it was asked for ``key`` on this JVM, else ``build()`` now.

    ``key`` must name everything the expressions depend on (e.g. the caller's name, the frame schema's
    JSON, the settings read); ``build`` must only build expressions, never run a Spark action.
    """
    gateway = _gateway()
    entry_key = (id(gateway), key)
    with _lock:
        found = _entries.get(entry_key)
        if found is not None and found[0] is gateway:
            _entries.move_to_end(entry_key)
            return found[1]
    built = build()
    with _lock:
        _entries[entry_key] = (gateway, built)  # the gateway is held, so its id is not reused meanwhile
        _entries.move_to_end(entry_key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return built


def _gateway() -> Any:
    from pyspark import SparkContext

    return SparkContext._gateway
