"""The session's ``StreamingQueryListener``: hands each query's progress to whoever registered its name.

The connector runner registers its query name when it starts a query generation and gets every
``QueryProgressEvent`` (as Spark's ``lastProgress`` dict) on Spark's listener thread, after each
micro-batch; it keeps it for the metrics and logs the batch's progress line. One listener per
SparkSession, installed on first use.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql.streaming import StreamingQueryListener

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ProgressListener", "listener_for"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[dict[str, Any]], None]

_install_lock = threading.Lock()


class ProgressListener(StreamingQueryListener):
    """Dispatches ``onQueryProgress`` by query name to the registered callbacks."""

    def __init__(self) -> None:
        self._callbacks: dict[str, ProgressCallback] = {}
        self._lock = threading.Lock()

    def register(self, query_name: str, callback: ProgressCallback) -> None:
        with self._lock:
            self._callbacks[query_name] = callback

    def unregister(self, query_name: str) -> None:
        with self._lock:
            self._callbacks.pop(query_name, None)

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's name
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802 - Spark's name
        progress = event.progress
        with self._lock:
            callback = self._callbacks.get(progress.name)
        if callback is None:
            return
        try:
            callback(json.loads(progress.json))
        except Exception as e:  # a metrics problem must never disturb Spark's listener bus
            log.warning("progress callback for %s raised %r", progress.name, e)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802 - Spark's name
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802 - Spark's name
        pass


def listener_for(spark: "SparkSession") -> ProgressListener:
    """The session's :class:`ProgressListener`, added to ``spark.streams`` the first time."""
    with _install_lock:
        listener = getattr(spark, "_connect_spark_progress_listener", None)
        if listener is None:
            listener = ProgressListener()
            spark.streams.addListener(listener)
            setattr(spark, "_connect_spark_progress_listener", listener)
        return listener
