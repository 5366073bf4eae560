"""Which Delta table a record goes to: a path or a catalog name, optionally one per topic.

Called by the task for each topic of a micro-batch (the frame's ``topic`` column, i.e. after
transformations, so a ``RegexRouter`` chooses the table). A table is reached through Spark SQL and the
DataFrame API only (``delta.`<path>``` or its name), never through delta-spark's Python ``DeltaTable``:
the sink then needs no Python package of Delta's (pip keeps the user's pyspark) and its statements run
in any session that has Delta's SQL extension.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from connect_spark.connectors.delta.config import TOPIC_PLACEHOLDER, DeltaSinkConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameWriter, SparkSession

__all__ = ["TableTarget", "target_for_topic", "is_templated"]

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class TableTarget:
    """One Delta table, by path or by catalog name (exactly one is set)."""

    path: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        return self.path if self.path is not None else f"table {self.name}"

    @property
    def sql_name(self) -> str:
        """The table in a SQL statement: ``delta.`<path>``` (backticks in the path doubled) or its name."""
        if self.path is not None:
            return "delta.`" + self.path.replace("`", "``") + "`"
        return self.name

    def exists(self, spark: "SparkSession") -> bool:
        """True when the table exists and is a Delta table."""
        return self.frame_if_exists(spark) is not None

    def frame_if_exists(self, spark: "SparkSession") -> "DataFrame | None":
        """The table's current snapshot, or None when there is no Delta table there.

        Loading the snapshot runs no Spark job (``DESCRIBE DETAIL`` would: it counts the table's files), so
        a batch that checks its table costs no pass of its own.
        """
        if self.path is None:
            return spark.read.table(self.name) if spark.catalog.tableExists(self.name) else None
        from pyspark.errors import AnalysisException

        try:
            frame = spark.read.format("delta").load(self.path)
            frame.schema  # noqa: B018 - Spark Connect analyses lazily: this asks the server now (classic: free)
            return frame
        except AnalysisException:  # no table, or not a Delta one, at the path
            return None

    def frame(self, spark: "SparkSession") -> "DataFrame":
        """The table's current snapshot."""
        if self.path is not None:
            return spark.read.format("delta").load(self.path)
        return spark.read.table(self.name)

    def history(self, spark: "SparkSession", limit: int | None = None) -> "DataFrame":
        """Delta's ``DESCRIBE HISTORY`` of the table, newest commits first (the newest ``limit`` of them)."""
        return spark.sql(f"DESCRIBE HISTORY {self.sql_name}" + (f" LIMIT {int(limit)}" if limit else ""))

    def save(self, writer: "DataFrameWriter") -> None:
        """Run ``writer`` (already set up with format and options) against this table."""
        if self.path is not None:
            writer.save(self.path)
        else:
            writer.saveAsTable(self.name)


def is_templated(config: DeltaSinkConfig) -> bool:
    """True when the target names one table per topic."""
    return TOPIC_PLACEHOLDER in (config.table_path or config.table_name or "")


def target_for_topic(config: DeltaSinkConfig, topic: str) -> TableTarget:
    """The table of ``topic``'s records. In a catalog name the topic is sanitised to ``[A-Za-z0-9_]``."""
    if config.table_path is not None:
        return TableTarget(path=config.table_path.replace(TOPIC_PLACEHOLDER, topic))
    assert config.table_name is not None
    return TableTarget(name=config.table_name.replace(TOPIC_PLACEHOLDER, _NAME_UNSAFE.sub("_", topic)))
