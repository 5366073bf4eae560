"""Stop signals that reach Spark's driver JVM become the worker's graceful stop.

Under ``spark-submit`` the process a cluster manager signals is the driver JVM (``SparkSubmit``, or the
``DriverWrapper`` of a cluster-mode driver), and this Python program is its child. Left alone, the JVM
answers SIGTERM and SIGINT by starting its shutdown at once: Spark's shutdown hook stops the
SparkContext under the running streaming queries, the Python program loses its gateway mid-batch and
the process ends with 143 — no final ``pre_commit``, ``close``, commit or ``stop``.

:class:`JvmStopSignals` replaces the JVM's handlers of SIGTERM and SIGINT, while a worker runs, by one
that calls back into this process over PySpark's py4j callback server and asks the worker for the same
graceful stop a signal to the Python process asks for. The JVM does not start its shutdown: it goes on
serving the stop (the batch in flight, the final commits) and ends when the Python program ends, whose
exit code becomes the driver's (0 after a clean stop). The JVM's own handlers come back on
:meth:`JvmStopSignals.close`, so a second worker, a notebook or the interpreter's exit find the JVM as
it was.

Installed by :class:`~connect_spark.runtime.worker.standalone.StandaloneWorker` and
:class:`~connect_spark.herder.distributed.DistributedWorker` right after they built (or were given) a
classic session, only when their entry point asked for signal handling (the CLI, ``jobs/``: the main
thread of a process of their own). A Spark Connect session has no driver JVM in this process: nothing
is installed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JvmStopSignals", "STOP_SIGNALS"]

log = logging.getLogger(__name__)

#: The signals a scheduler (SIGTERM) or a terminal (SIGINT) sends to stop a driver, by their JVM names.
STOP_SIGNALS = ("TERM", "INT")


class _StopRequestHandler:
    """A ``sun.misc.SignalHandler`` written in Python: the JVM's signal thread calls :meth:`handle`
    (through py4j) for each stop signal the driver JVM receives."""

    def __init__(self, on_stop: Callable[[], None]) -> None:
        self._on_stop = on_stop

    def handle(self, signal: Any) -> None:
        log.info("Spark's driver JVM received SIG%s: stopping gracefully", signal.getName())
        self._on_stop()

    class Java:
        implements = ["sun.misc.SignalHandler"]


class JvmStopSignals:
    """The driver JVM's SIGTERM/SIGINT handlers, replaced by a graceful stop request until :meth:`close`.

    Use :meth:`install`; it returns ``None`` where there is nothing to install (a Spark Connect session).
    """

    def __init__(self, jvm: Any, handler: _StopRequestHandler) -> None:
        self._jvm = jvm
        self._handler = handler  # kept referenced: the JVM holds only a py4j proxy of it
        self._previous: dict[str, Any] = {}

    @classmethod
    def install(cls, spark: "SparkSession", on_stop: Callable[[], None]) -> "JvmStopSignals | None":
        """Route the driver JVM's stop signals to ``on_stop`` (which must return at once: it runs on a
        py4j callback thread). Signals the JVM refuses to hand over (``-Xrs``, a signal ignored when the
        JVM started) keep the JVM's behaviour, with a log line saying so."""
        from connect_spark.spark_session import is_remote_session

        if is_remote_session(spark):
            return None
        from pyspark.java_gateway import ensure_callback_server_started

        context = spark.sparkContext
        ensure_callback_server_started(context._gateway)
        bridge = cls(context._jvm, _StopRequestHandler(on_stop))
        for name in STOP_SIGNALS:
            bridge._take(name)
        return bridge

    def _take(self, name: str) -> None:
        signals = self._jvm.sun.misc.Signal
        try:
            self._previous[name] = signals.handle(signals(name), self._handler)
        except Exception as e:  # e.g. IllegalArgumentException: "Signal already used by VM or OS"
            log.info("SIG%s to Spark's driver JVM keeps the JVM's own handling: %s", name, e)

    def close(self) -> None:
        """Give the JVM its own handlers back (called when the worker's run ends); safe to call twice."""
        signals = self._jvm.sun.misc.Signal
        for name, previous in list(self._previous.items()):
            try:
                signals.handle(signals(name), previous)
            except Exception as e:  # the gateway is gone (the JVM is exiting): nothing left to restore
                log.debug("Could not give SIG%s back to the driver JVM: %r", name, e)
        self._previous.clear()
