"""The Kafka offsets an Iceberg table holds: a snapshot-summary property of each commit the sink makes.

Why a snapshot property: the summary is written by the same atomic metadata swap that adds the data
files, so a snapshot either carries the rows *and* the offsets or neither (Apache Iceberg's own sink
stores its offsets the same way). The property is per connector
(``connect-spark.offsets.<connector>``), so several connectors may write one table. Its JSON value is
cumulative — each commit repeats the offsets of partitions it did not touch — so the newest snapshot
carrying it, among the ancestors of the table's current snapshot, is enough to resume. It is visible to
operators in ``SELECT summary FROM <table>.snapshots``.

Written through the ``snapshot-property.<key>`` write option (appends) or the session setting
``spark.sql.iceberg.snapshot-property.<key>`` (MERGE, which takes no write options); read back with
Spark's ``<table>.snapshots`` and ``<table>.history`` metadata tables.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.connectors.iceberg.target import TableTarget

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StoredOffsets", "read_stored_offsets", "PROPERTY_PREFIX"]

log = logging.getLogger(__name__)

#: The snapshot-summary property is this prefix plus the connector name.
PROPERTY_PREFIX = "connect-spark.offsets."


@dataclass
class StoredOffsets:
    """What one table holds for one connector: the next offset per Kafka partition, and the commit count.

    Attributes:
        connector: the connector the offsets belong to.
        offsets: original topic-partition → next offset to read (last written + 1).
        sequence: how many data commits this connector made to the table.
    """

    connector: str
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    sequence: int = 0

    @property
    def property_key(self) -> str:
        """The snapshot-summary key of this connector."""
        return PROPERTY_PREFIX + self.connector

    def advanced(self, written: Mapping[TopicPartition, int]) -> "StoredOffsets":
        """The state after a commit that wrote records up to ``written`` (next offsets), one sequence later."""
        merged = dict(self.offsets)
        for tp, next_offset in written.items():
            merged[tp] = max(next_offset, merged.get(tp, 0))
        return StoredOffsets(self.connector, merged, self.sequence + 1)

    def to_property(self) -> str:
        """The JSON value of the snapshot property."""
        by_topic: dict[str, dict[str, int]] = {}
        for tp, off in sorted(self.offsets.items()):
            by_topic.setdefault(tp.topic, {})[str(tp.partition)] = off
        return json.dumps({"v": 1, "sequence": self.sequence, "offsets": by_topic}, separators=(",", ":"),
                          sort_keys=True)

    @classmethod
    def from_property(cls, text: str | None, connector: str) -> "StoredOffsets | None":
        """Parse the property's value; ``None`` when it is absent or not a document this sink wrote."""
        if not text:
            return None
        try:
            doc = json.loads(text)
            offsets = {TopicPartition(topic, int(partition)): int(off)
                       for topic, partitions in doc["offsets"].items() for partition, off in partitions.items()}
            return cls(connector, offsets, int(doc.get("sequence", 0)))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("Ignoring an unreadable %s%s snapshot property: %.200s", PROPERTY_PREFIX, connector, text)
            return None


def read_stored_offsets(spark: "SparkSession", target: TableTarget, connector: str) -> StoredOffsets:
    """The offsets of the newest snapshot of ``target``'s current lineage that ``connector`` committed.

    Called by the task when it first uses a table (at ``open`` for the listed tables, at the first write
    for routed ones) and again after a failed or conflicting commit. Empty when there is none.
    """
    key = PROPERTY_PREFIX + connector
    ident = target.identifier
    # The DataFrame API, not SQL with parameter markers: Spark 4.1 leaves markers inside a metadata-table
    # join unbound (UNBOUND_SQL_PARAMETER), and the key must not be spliced into SQL text.
    from pyspark.sql import functions as F

    snapshots, history = spark.table(f"{ident}.snapshots").alias("s"), spark.table(f"{ident}.history").alias("h")
    stored_value = F.col("s.summary").getItem(key)
    rows = (snapshots.join(history, F.col("s.snapshot_id") == F.col("h.snapshot_id"))
            .where(F.col("h.is_current_ancestor") & stored_value.isNotNull())
            .orderBy(F.col("h.made_current_at").desc(), F.col("s.committed_at").desc())
            .select(stored_value.alias("stored")).limit(1).collect())
    if rows:
        stored = StoredOffsets.from_property(rows[0]["stored"], connector)
        if stored is not None:
            log.debug("%s holds offsets of %s: %s", target, connector, stored.offsets)
            return stored
    return StoredOffsets(connector)
