"""``GET /health``: is this worker ready to serve, with Kafka Connect's answer shape (KIP-1017).

Called by the REST route for each request (orchestrators' liveness and readiness probes). The worker
is healthy when its herder has finished starting, its supervisor loop has turned recently, and its
config store can be read to its end (a round trip to the config topic) within a timeout; otherwise the answer is 503 with
the reason (``status`` ``starting`` while the herder starts, ``unhealthy`` after that).
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connect_spark.herder.herder import Herder

__all__ = ["worker_health", "STALE_LOOP_S", "STORE_READ_TIMEOUT_S"]

STALE_LOOP_S = 60.0
"""A supervisor loop older than this makes the worker unhealthy (a connector step is stuck)."""

STORE_READ_TIMEOUT_S = 10.0
"""How long reading the config store to their end may take."""

_READER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="health-read")


def _answer(code: int, status: str, message: str) -> tuple[int, dict[str, Any]]:
    return code, {"status": status, "message": message}


def worker_health(herder: "Herder") -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of ``GET /health`` for ``herder``."""
    if not herder.started.is_set():
        return _answer(503, "starting", "Worker is still starting up.")
    if herder.stopped.is_set():
        return _answer(503, "unhealthy", "Worker is shutting down: its herder has stopped.")
    last_loop = getattr(herder, "last_loop", None)
    if last_loop is not None and time.monotonic() - last_loop > STALE_LOOP_S:
        return _answer(503, "unhealthy", f"The herder's supervisor has not completed a loop for "
                                         f"{time.monotonic() - last_loop:.0f} s (a connector operation is stuck).")
    future = _READER.submit(_read_stores, herder)
    try:
        future.result(timeout=STORE_READ_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        return _answer(503, "unhealthy", f"Reading the config store took longer than "
                                         f"{STORE_READ_TIMEOUT_S:.0f} s.")
    except Exception as e:
        return _answer(503, "unhealthy", f"The config store cannot be read: {type(e).__name__}: {e}")
    return _answer(200, "healthy", "Worker has completed startup and is ready to handle requests.")


def _read_stores(herder: "Herder") -> None:
    herder.config_store.refresh()  # reads the config topic to its end: the broker answers and the topic is readable
