"""Which Delta table a record goes to: a path or a catalog name, optionally one per topic.

Called by the task for each topic of a micro-batch (the frame's ``topic`` column, i.e. after
transformations, so a ``RegexRouter`` chooses the table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from connect_spark.connectors.delta.config import TOPIC_PLACEHOLDER, DeltaSinkConfig

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrameWriter, SparkSession

__all__ = ["TableTarget", "target_for_topic", "is_templated"]

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class TableTarget:
    """One Delta table, by path or by catalog name (exactly one is set)."""

    path: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        return self.path if self.path is not None else f"table {self.name}"

    def exists(self, spark: "SparkSession") -> bool:
        """True when the table exists and is a Delta table."""
        from delta.tables import DeltaTable

        if self.path is not None:
            return DeltaTable.isDeltaTable(spark, self.path)
        return spark.catalog.tableExists(self.name)

    def table(self, spark: "SparkSession") -> "DeltaTable":
        from delta.tables import DeltaTable

        if self.path is not None:
            return DeltaTable.forPath(spark, self.path)
        return DeltaTable.forName(spark, self.name)

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
