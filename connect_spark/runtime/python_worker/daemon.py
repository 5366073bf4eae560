"""Spark's Python worker daemon, started with the executor side already imported: forked workers start warm.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module> pyspark.worker``) and
forks a Python worker from it for each concurrent task slot; a worker is reused for later tasks, but a
new one is forked whenever more are needed. Everything a worker imports after the fork it imports
again in each worker. Profiled in executor mode (py-spy, 500k records, 2 cores), about a third of the
workers' CPU went there rather than to records:

* PySpark's ``setup_spark_files`` re-reading the zip archives on ``sys.path`` before each worker's
  first task (:mod:`.zip_reads` fixes it, but only once a task of ours ran in that worker);
* the first ``pyarrow.compute`` call importing pandas (pyarrow checks its arguments against pandas
  types);
* unpickling the ``mapInArrow`` function importing connect_spark's executor side.

Sessions connect_spark builds set ``spark.python.daemon.module`` to this module
(:data:`connect_spark.spark_session.SESSION_DEFAULTS`). It installs the zip fix and imports those
modules once, in the daemon, then runs PySpark's own daemon loop; every worker forked from it inherits
them. Nothing here starts a thread before the fork. A module that fails to import is left to the
worker, which imports it as before (and reports the error where it matters).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["PRELOADED", "preload", "main"]

#: Imported in the daemon before it forks workers (in this order).
PRELOADED = (
    "pyarrow",
    "pyarrow.compute",
    "pandas",
    "connect_spark.config.connector",
    "connect_spark.config.worker",
    "connect_spark.runtime.processors.executor_tasks",
)


def preload() -> list[str]:
    """Install the zip fix and import :data:`PRELOADED`; returns the names that failed to import."""
    from connect_spark.runtime.python_worker import zip_reads

    zip_reads.install()
    failed = []
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # the worker imports it itself, as it would without this daemon
            failed.append(name)
    return failed


def main() -> None:
    """Preload, then hand over to PySpark's daemon (which reads the worker module from ``sys.argv``)."""
    failed = preload()
    if failed:
        print(f"connect_spark worker daemon: could not preload {', '.join(failed)}", file=sys.stderr)
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
