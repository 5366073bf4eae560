"""Python workers of a local session connect_spark builds fork from its daemon, warm (real Spark)."""

from __future__ import annotations

from connect_spark.runtime.python_worker.daemon import PRELOADED


def test_workers_fork_from_the_preloading_daemon(spark):
    assert spark.conf.get("spark.python.daemon.module") == "connect_spark.runtime.python_worker.daemon"

    def _worker_state(batches):
        """Runs in a Spark Python worker (defined here, so pickled by value): what it had imported."""
        import os
        import sys
        import zipimport

        import pyarrow as pa

        for _ in batches:
            pass
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            daemon = f.read().replace(b"\0", b" ").decode()
        state = {
            "daemon": daemon,
            "zip_fix": getattr(zipimport.zipimporter.invalidate_caches, "_connect_spark_stat_checked", False),
            "modules": ",".join(sorted(sys.modules)),
        }
        yield pa.RecordBatch.from_pydict({k: [str(v)] for k, v in state.items()})

    rows = spark.range(0, 4, 1, 2).mapInArrow(_worker_state, "daemon string, zip_fix string, modules string").collect()
    assert rows
    for row in rows:
        assert "connect_spark.runtime.python_worker.daemon" in row["daemon"]
        assert row["zip_fix"] == "True"  # installed before the worker's first task
        assert set(PRELOADED) <= set(row["modules"].split(","))
