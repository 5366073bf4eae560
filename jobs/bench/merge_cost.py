"""What one batch's MERGE costs a Delta table of change data, and what keeps it from rewriting untouched files.

Used by ``jobs/bench_cdc.py`` after its two arms. One batch of change events (:class:`ChangeStream`: 80 %
updates and 10 % deletes over a hot set of the table's newest rows, 10 % inserts), reduced to its last change
per key, is merged into a table of ``rows`` rows with the statement the Delta sink runs
(``connectors/delta/writer.py``: ``ON t.id <=> s.id``, delete, update or insert), once per case:

* layout — ``unordered``: every file holds ids from the whole range (the rows written in no particular
  order, as appends from many sources leave a table); ``z-ordered``: the same table after
  ``OPTIMIZE ... ZORDER BY (id)`` with ``spark.databricks.delta.optimize.maxFileSize`` set to keep the
  number of files, so each file holds one range of ids (one column: what ``CLUSTER BY (id)`` also gives);
* deletion vectors off or on (``delta.enableDeletionVectors``): off, a file with one changed row is
  rewritten whole; on, the changed rows are marked deleted in it and only they are written again;
* the join condition alone, or with the batch's id range as well (``AND t.id BETWEEN <min> AND <max>``): a
  condition on the target alone is what Delta's data skipping can use to leave files unread.

Every case starts from a copy of the same table files. Figures per case: wall seconds of the MERGE, and from
the commit's ``operationMetrics``: target files removed and added, rows copied (rewritten unchanged),
deletion vectors added, bytes added. A warm-up MERGE on a small table runs first.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from jobs.bench.cdc_events import ChangeStream, spark_row_columns
from jobs.bench.health import delta_live_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MergeCase", "MergeResult", "CASES", "batch_changes", "build_tables", "measure_merge", "run_merge_cost",
           "format_results"]

#: The statement's delete marker column (the sink's ``__connect_delete``).
_DELETE = "__connect_delete"


@dataclass(frozen=True)
class MergeCase:
    layout: str  # "unordered" or "z-ordered"
    deletion_vectors: bool
    key_range: bool  # the ON condition carries the batch's id range

    def label(self) -> str:
        return (f"{self.layout:<10} DV {'on ' if self.deletion_vectors else 'off'} "
                f"{'id = + id range' if self.key_range else 'id =          '}")


CASES = tuple(MergeCase(layout, dv, key_range) for layout in ("unordered", "z-ordered") for dv in (False, True)
              for key_range in (False, True))


@dataclass
class MergeResult:
    case: MergeCase
    rows: int
    files: int
    changes: int
    source_rows: int
    seconds: float
    metrics: dict[str, str]

    def metric(self, name: str) -> int:
        return int(self.metrics.get(name, 0) or 0)


def batch_changes(spark: "SparkSession", rows: int, changes: int, hot_keys: int) -> tuple["DataFrame", int, int]:
    """One batch of ``changes`` change events against a table of ``rows`` rows, as the sink's MERGE source: the
    last change per key, the table's columns plus ``__connect_delete``; with the batch's lowest and highest id."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    stream = ChangeStream(rows, changes, hot_keys)
    last: dict[int, tuple[int, bool]] = {}
    for change in stream:
        last[change.key] = (change.after if change.after is not None else change.before, change.op == "d")
    keys = sorted(last)
    frame = spark.createDataFrame(pa.table({"id": keys, "version": [last[k][0] for k in keys],
                                            "deleted": [last[k][1] for k in keys]}))
    source = frame.select(*spark_row_columns(F.col("id"), F.col("version")), F.col("deleted").alias(_DELETE))
    return source.localCheckpoint(), keys[0], keys[-1]


def build_tables(spark: "SparkSession", folder: Path, rows: int, files: int) -> dict[str, Path]:
    """The two layouts of the table (``rows`` rows at version 0, ``files`` files), each written once."""
    from pyspark.sql import functions as F

    unordered, ordered = folder / "unordered", folder / "z-ordered"
    (spark.range(0, rows, 1, max(1, files)).select(*spark_row_columns(F.col("id"), F.lit(0)))
     .repartition(files).write.format("delta").save(str(unordered)))
    shutil.copytree(unordered, ordered)
    size = sum(p.stat().st_size for p in unordered.glob("*.parquet"))
    previous = spark.conf.get("spark.databricks.delta.optimize.maxFileSize", None)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(max(1, size // files)))
    try:
        spark.sql(f"OPTIMIZE delta.`{ordered}` ZORDER BY (id)").collect()
    finally:
        if previous is None:
            spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
        else:
            spark.conf.set("spark.databricks.delta.optimize.maxFileSize", previous)
    return {"unordered": unordered, "z-ordered": ordered}


def _statement(table: Path, view: str, columns: list[str], key_range: tuple[int, int] | None) -> str:
    """The Delta sink's MERGE (``connectors/delta/writer.py``), optionally with the batch's id range."""
    on = "t.`id` <=> s.`id`" + (f" AND t.`id` BETWEEN {key_range[0]} AND {key_range[1]}" if key_range else "")
    names = ", ".join(f"`{c}`" for c in columns)
    values = ", ".join(f"s.`{c}`" for c in columns)
    updates = ", ".join(f"`{c}` = s.`{c}`" for c in columns)
    return (f"MERGE INTO delta.`{table}` t USING {view} s ON {on} "
            f"WHEN MATCHED AND s.{_DELETE} THEN DELETE "
            f"WHEN MATCHED AND NOT s.{_DELETE} THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED AND NOT s.{_DELETE} THEN INSERT ({names}) VALUES ({values})")


def measure_merge(spark: "SparkSession", base: Path, work: Path, case: MergeCase, source: "DataFrame",
                  key_range: tuple[int, int]) -> tuple[float, dict[str, str], int]:
    """Copy ``base`` to ``work``, set the case's table properties, run the MERGE; ``(seconds, the commit's
    operationMetrics, files before)``."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    spark.sql(f"ALTER TABLE delta.`{work}` SET TBLPROPERTIES "
              f"('delta.enableDeletionVectors' = '{str(case.deletion_vectors).lower()}')")
    files = len(delta_live_files(work)[0])
    view = "bench_cdc_merge_source"
    source.createOrReplaceTempView(view)
    columns = [c for c in source.columns if c != _DELETE]
    statement = _statement(work, view, columns, key_range if case.key_range else None)
    started = time.monotonic()
    spark.sql(statement).collect()
    seconds = time.monotonic() - started
    history = spark.sql(f"DESCRIBE HISTORY delta.`{work}` LIMIT 1").select("operation", "operationMetrics").first()
    if history[0] != "MERGE":
        raise RuntimeError(f"the last commit of {work} is a {history[0]}, not the MERGE")
    return seconds, dict(history[1]), files


def run_merge_cost(spark: "SparkSession", folder: Path, rows: int, files: int, changes: int, hot_keys: int,
                   cases: tuple[MergeCase, ...] = CASES, echo: Callable[[str], None] = print) -> list[MergeResult]:
    """Every case on a table of ``rows`` rows in ``files`` files; echoes each result as it comes."""
    tables = build_tables(spark, folder / f"base-{rows}", rows, files)
    source, low, high = batch_changes(spark, rows, changes, hot_keys)
    source_rows = source.count()
    results = []
    for case in cases:
        seconds, metrics, before = measure_merge(spark, tables[case.layout], folder / "merged", case, source,
                                                 (low, high))
        result = MergeResult(case, rows, before, changes, source_rows, seconds, metrics)
        results.append(result)
        echo(format_row(result))
    shutil.rmtree(folder / "merged", ignore_errors=True)
    for path in tables.values():
        shutil.rmtree(path, ignore_errors=True)
    return results


def warm_up(spark: "SparkSession", folder: Path) -> None:
    """One small MERGE of each kind, so the measured ones do not pay for the JVM's first compilations."""
    run_merge_cost(spark, folder / "warm-up", 20_000, 4, 2_000, 2_000, cases=(CASES[0], CASES[-1]),
                   echo=lambda line: None)


HEADER = ("layout     DVs ON condition      seconds  files  removed  added  rows copied  DVs added  MB added")


def format_row(result: MergeResult) -> str:
    return (f"{result.case.label()}  {result.seconds:7.1f}  {result.files:5d}  "
            f"{result.metric('numTargetFilesRemoved'):7d}  {result.metric('numTargetFilesAdded'):5d}  "
            f"{result.metric('numTargetRowsCopied'):11,d}  {result.metric('numTargetDeletionVectorsAdded'):9d}  "
            f"{result.metric('numTargetBytesAdded') / 1e6:8.1f}")


def format_results(results: list[MergeResult]) -> list[str]:
    return [HEADER, *map(format_row, results)]
