"""The example notebooks in jobs/notebooks/: Databricks source format, and the Delta one run as a plain
script (a subprocess with its own Spark) against the real broker, the Delta table read back from its log."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from connect_spark.testing.kafka import create_topic, produce

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "jobs" / "notebooks"


def active_files(table: Path) -> list[Path]:
    """The data files of a Delta table's current version, replayed from its JSON commit log."""
    files: dict[str, bool] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                files[action["add"]["path"]] = True
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    return [table / path for path in files]


def test_notebooks_are_databricks_source_files():
    notebooks = sorted(NOTEBOOKS.glob("*.py"))
    assert len(notebooks) >= 2
    for notebook in notebooks:
        text = notebook.read_text()
        assert text.startswith("# Databricks notebook source\n"), notebook
        assert "\n# COMMAND ----------\n" in text, notebook
        compile(text, str(notebook), "exec")


def test_delta_notebook_drains_the_topic_into_a_delta_table(bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=2)
    events = [{"order_id": i % 10, "amount": i} for i in range(30)]  # 3 versions of 10 orders
    produce(bootstrap_servers, topic_name,
            [(e["order_id"] % 2, None, json.dumps(e).encode(), []) for e in events])
    table = Path(work_dir) / "delta" / "orders"
    args = [f"bootstrap.servers={bootstrap_servers}", f"topic={topic_name}", f"connector.name=nb-{topic_name}",
            f"delta.table.path={table}", f"checkpoint.location={Path(work_dir) / 'checkpoints'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CONNECT_SPARK_SPARK_LOG_LEVEL": "ERROR"}
    result = subprocess.run([sys.executable, str(NOTEBOOKS / "delta_sink_available_now.py"), *args], cwd=work_dir,
                            env={**env, "SPARK_MASTER": "local[1]"}, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert f"{table}: 10 rows" in result.stdout
    rows = pq.ParquetDataset([str(f) for f in active_files(table)]).read().to_pylist()
    assert sorted((r["order_id"], r["amount"]) for r in rows) == [(i, 20 + i) for i in range(10)]

    # An unknown setting is refused with the key named, before Spark starts.
    bad = subprocess.run([sys.executable, str(NOTEBOOKS / "delta_sink_available_now.py"), "topics=x"],
                         cwd=work_dir, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "topics" in bad.stderr and "not a setting of this notebook" in bad.stderr
