"""Keeps a Spark Python worker from re-reading zip archives at the start of every Spark task.

Before each task, PySpark's worker (``worker_util.setup_spark_files``) calls
``importlib.invalidate_caches()``. Since Python 3.10 a ``zipimporter`` answers that by reading its
archive's whole central directory again, and a pip-installed PySpark puts three archives on the
worker's ``sys.path``: ``pyspark.zip``, the py4j zip and the ``spark-core`` jar (5,000+ entries, no
Python in it). Measured here: 100–180 ms of CPU per Spark task, in every task, which in executor mode
was about 40 % of a Python worker's time on a 2-core machine.

:func:`install` makes ``zipimporter.invalidate_caches`` re-read an archive only when the archive
file changed (its modification time or size), which is what the invalidation exists for. Called by
the executor-side entry points (:mod:`connect_spark.runtime.processors.executor_tasks`'s ``mapInArrow``
function) when they run in a worker; a process keeps it for the tasks it runs after that (Spark
reuses Python workers). Installing it twice is harmless.
"""

from __future__ import annotations

import os
import zipimport

__all__ = ["install", "installed"]

_MARK = "_connect_spark_stat_checked"
_STAMP = "_connect_spark_archive_stamp"


def _archive_stamp(archive: str) -> tuple[int, int] | None:
    try:
        st = os.stat(archive)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def installed() -> bool:
    """True when this process's ``zipimporter.invalidate_caches`` checks the archive first."""
    return getattr(zipimport.zipimporter.invalidate_caches, _MARK, False)


def install() -> None:
    """Make zip archives on ``sys.path`` re-read only when they changed (see the module docstring)."""
    if installed():
        return
    reread = zipimport.zipimporter.invalidate_caches

    def invalidate_caches(self: zipimport.zipimporter) -> None:
        stamp = _archive_stamp(self.archive)
        if stamp is not None and getattr(self, _STAMP, None) == stamp:
            return
        reread(self)
        setattr(self, _STAMP, stamp)

    setattr(invalidate_caches, _MARK, True)
    invalidate_caches.__doc__ = reread.__doc__
    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]
