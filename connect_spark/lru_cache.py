"""A small thread-safe least-recently-used map, Kafka's ``SynchronizedCache(LRUCache(n))``.

Used where Kafka keeps one: the JsonConverter's schema caches (``schemas.cache.size``) and each built-in
transform's cache of schemas derived from an input schema (16 entries, as Kafka's transforms keep).
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable

__all__ = ["LruCache"]


class LruCache:
    """At most ``size`` entries, the least recently read or written dropped first; ``size`` 0 caches nothing.

    ``None`` is not a cacheable value (``get`` answers ``None`` for a miss). A cache is pickled empty, so a
    converter or transform shipped to an executor rebuilds its own.
    """

    def __init__(self, size: int = 16) -> None:
        self.size = max(size, 0)
        self._data: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        """The value cached for ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        """Cache ``value`` for ``key``, dropping the least recently used entries beyond ``size``."""
        if self.size == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def get_or_compute(self, key: Any, compute: Callable[[Any], Any]) -> Any:
        """The cached value for ``key``, computing and caching it with ``compute(key)`` on a miss."""
        value = self.get(key)
        if value is None:
            value = compute(key)
            self.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LruCache, (self.size,))
