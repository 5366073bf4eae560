"""The Kafka offsets a Delta table holds: stored in each commit the sink makes, read back at ``open``.

Why commit metadata (``userMetadata``) plus a transaction identifier (``txnAppId``/``txnVersion``):

* The offsets must be written *atomically with the data*: both options are part of the same Delta
  commit as the rows, so a commit either carries both or neither.
* ``userMetadata`` holds an arbitrary JSON document, so one commit can record the next offset of
  *every* Kafka partition written so far (a write usually spans several partitions, while a
  transaction identifier holds one number). The document is cumulative — each commit repeats the
  offsets of partitions it did not touch — so reading the latest commit of this connector is enough.
  It is also visible to operators in ``DESCRIBE HISTORY``.
* ``txnAppId = connect-spark:<connector>`` with ``txnVersion = <commit sequence>`` guards what the
  offsets alone cannot: two writers of the same connector (a zombie task after a failover) that both
  read sequence N. Delta rejects the second concurrent commit of version N+1 for the same app id
  (conflict check) and skips a later one (version already recorded) instead of adding rows twice.
  A write that failed *after* its commit is handled by the task: it reads the table's offsets again
  before the retry, and the re-delivered records are dropped.

Spark's micro-batch id is never used: it restarts with every checkpoint generation.

A dead letter replay commits under a ledger name of its own (:func:`replay_ledger_name`) whose
document holds, instead of Kafka offsets, its position in the dead letter topic (``replayed``), and whose
``txnVersion`` is derived from that position; see ``replay.py`` for why.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from connect_spark.api.records import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.connectors.delta.target import TableTarget

__all__ = ["StoredOffsets", "read_stored_offsets", "replay_ledger_name", "MARKER"]

log = logging.getLogger(__name__)

#: The top-level key of the userMetadata document written by this sink.
MARKER = "connect_spark"

def replay_ledger_name(connector: str, dlq_topic: str) -> str:
    """The name a dead letter replay of ``connector`` from ``dlq_topic`` keeps its own document and
    transaction version under (one per dead letter topic, see :meth:`StoredOffsets.replayed_to`)."""
    return f"{connector}.dlq-replay.{dlq_topic}"


#: History windows read in turn while looking for the latest commit of this connector.
_HISTORY_WINDOWS = (20, 500, None)


@dataclass
class StoredOffsets:
    """What one table holds for one connector: the next offset per Kafka partition, and the commit sequence.

    Attributes:
        connector: the connector name the offsets belong to (several connectors may share a table).
        offsets: original topic-partition → next offset to read (last written + 1).
        sequence: how many data commits this connector made to the table; the next uses ``sequence + 1``.
            The commit's ``txnVersion``. A replay's ledger derives it from its positions (:meth:`replayed_to`).
        replayed: dead letter topic → its partition → the next dead letter offset whose letters a replay
            has yet to hand over: every replayed record routed to this table from a letter below it is in
            the table (see ``replay.py``; only the documents of a replay's own ledger name hold it).
    """

    connector: str
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    sequence: int = 0
    replayed: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def app_id(self) -> str:
        """The Delta transaction application id of this connector."""
        return f"connect-spark:{self.connector}"

    def advanced(self, written: Mapping[TopicPartition, int]) -> "StoredOffsets":
        """The state after a commit that wrote records up to ``written`` (next offsets), one sequence later."""
        merged = dict(self.offsets)
        for tp, next_offset in written.items():
            merged[tp] = max(next_offset, merged.get(tp, 0))
        return StoredOffsets(self.connector, merged, self.sequence + 1, self.replayed)

    def replayed_to(self, dlq_topic: str, ends: Mapping[int, int]) -> "StoredOffsets":
        """The state after a commit of replayed records that dealt with ``dlq_topic``'s letters below ``ends``
        (partition → next dead letter offset); the Kafka offsets do not move.

        The sequence (the commit's ``txnVersion``) becomes the sum of the positions rather than a count:
        dead letter offsets only grow, so it grows whenever the commit holds a letter the earlier ones
        did not, even when this state was built without reading the earlier document (Delta would skip
        a write whose version is not above the last one, silently). A write whose letters all lie below
        the positions already recorded keeps the version, and Delta skips it: nothing is written twice.
        """
        merged = {topic: dict(positions) for topic, positions in self.replayed.items()}
        positions = merged.setdefault(dlq_topic, {})
        for partition, end in ends.items():
            positions[partition] = max(end, positions.get(partition, 0))
        version = sum(off for positions in merged.values() for off in positions.values())
        return StoredOffsets(self.connector, dict(self.offsets), version, merged)

    def to_metadata(self) -> str:
        """The JSON document stored as the commit's ``userMetadata``."""
        by_topic: dict[str, dict[str, int]] = {}
        for tp, off in sorted(self.offsets.items()):
            by_topic.setdefault(tp.topic, {})[str(tp.partition)] = off
        doc: dict[str, object] = {"v": 1, "connector": self.connector, "sequence": self.sequence, "offsets": by_topic}
        if self.replayed:
            doc["replayed"] = {topic: {str(p): off for p, off in sorted(positions.items())}
                               for topic, positions in sorted(self.replayed.items())}
        return json.dumps({MARKER: doc}, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_metadata(cls, text: str | None, connector: str) -> "StoredOffsets | None":
        """Parse a commit's ``userMetadata``; ``None`` when it is not this connector's document."""
        if not text or MARKER not in text:
            return None
        try:
            doc = json.loads(text)[MARKER]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(doc, dict) or doc.get("connector") != connector:
            return None
        offsets = {
            TopicPartition(topic, int(partition)): int(off)
            for topic, partitions in doc.get("offsets", {}).items()
            for partition, off in partitions.items()
        }
        replayed = {  # absent from documents written before replays were stored, and from ordinary commits
            topic: {int(partition): int(off) for partition, off in positions.items()}
            for topic, positions in doc.get("replayed", {}).items()
        }
        return cls(connector, offsets, int(doc.get("sequence", 0)), replayed)


def read_stored_offsets(spark: "SparkSession", target: "TableTarget", connector: str) -> StoredOffsets:
    """The offsets of the latest commit ``connector`` made to ``table`` (empty when it made none).

    Called by the task when it first uses a table (at ``open`` for the tables it can name, or at the
    first write). Reads the table history newest first, in growing windows, so a table written by
    this connector recently costs one small read.
    """
    for window in _HISTORY_WINDOWS:
        history = target.history(spark, window)
        rows = history.select("version", "userMetadata").orderBy("version", ascending=False).collect()
        for row in rows:
            stored = StoredOffsets.from_metadata(row["userMetadata"], connector)
            if stored is not None:
                log.debug("Delta version %s holds offsets of %s: %s", row["version"], connector, stored.offsets)
                return stored
        if window is None or len(rows) < window:
            break
    return StoredOffsets(connector)
