"""What a Python worker keeps between Spark tasks for one run of a connector: started tasks, converters.

Spark reuses a Python worker process for many tasks (``spark.python.worker.reuse``), so the executor side of
the runtime keeps what is costly to build — a started task instance (executor mode's generations, real-time
mode's partition tasks) or a connector's converters and error reporters (odd rows converted inside a write) —
keyed by the connector's run id and a key of its own. A run id is new at every start of the connector, so
an entry of another run is stopped as soon as the worker serves the new one, and every entry is stopped when
the process exits.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from typing import Callable, Generic, Hashable, TypeVar

__all__ = ["RunCache"]

log = logging.getLogger(__name__)

V = TypeVar("V")

_caches: "weakref.WeakSet[RunCache]" = weakref.WeakSet()


class RunCache(Generic[V]):
    """Entries by ``(run id, key)``, each stopped with ``stop`` when evicted (best effort: a failure is logged).

    Args:
        what: names the entries in log lines.
        stop: ends an entry (its task's ``stop``, its reporters' ``close``).
    """

    def __init__(self, what: str, stop: Callable[[V], None]) -> None:
        self.what = what
        self._stop = stop
        self._entries: dict[tuple[str, Hashable], V] = {}
        self.lock = threading.RLock()
        _caches.add(self)

    def get(self, run_id: str, key: Hashable, build: Callable[[], V]) -> V:
        """The entry of ``(run_id, key)``, built on first use; entries of other runs are stopped first."""
        with self.lock:
            for other in [k for k in self._entries if k[0] != run_id]:
                self.evict(*other)
            entry = self._entries.get((run_id, key))
            if entry is None:
                entry = self._entries[(run_id, key)] = build()
            return entry

    def peek(self, run_id: str, key: Hashable) -> V | None:
        """The entry of ``(run_id, key)`` if one was built, else ``None`` (nothing is built or stopped)."""
        with self.lock:
            return self._entries.get((run_id, key))

    def evict(self, run_id: str, key: Hashable) -> None:
        """Stop and forget the entry of ``(run_id, key)``, if any."""
        with self.lock:
            entry = self._entries.pop((run_id, key), None)
        if entry is not None:
            try:
                self._stop(entry)
            except Exception as e:  # stopping is best effort, as in Connect
                log.warning("Could not stop the %s of %s: %r", self.what, key, e)

    def clear(self) -> None:
        """Stop every entry (at process exit)."""
        with self.lock:
            keys = list(self._entries)
        for key in keys:
            self.evict(*key)


@atexit.register
def _stop_every_entry() -> None:
    for cache in list(_caches):
        cache.clear()
