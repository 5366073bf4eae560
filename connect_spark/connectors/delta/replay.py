"""What a dead letter replay writes to one Delta table: each replayed record once, with the replay's position.

Called by :class:`~connect_spark.connectors.delta.task.DeltaSinkTask` for each table's share of a replay
batch (between ``begin_replay`` and ``end_replay``, see :mod:`connect_spark.api.replay`). How a replay
stays exactly once:

1. The replayed records lie below the Kafka offsets the table stores (their first delivery sent them to
   the dead letter queue instead), so the usual re-delivery filter is off and the stored offsets do not
   move: the replay is tracked by its position in the dead letter topic instead.
2. Each commit of replayed rows stores, atomically with them, the replay's position (dead letter
   partition → next dead letter offset, ``StoredOffsets.replayed``). A replay that stops after the commit
   but before it committed its own progress hands the same letters over again when run again, and the
   table leaves out every record whose letter lies below the position it holds.
3. The replay's commits use a ledger of their own per dead letter topic (``ledger.replay_ledger_name``:
   own ``userMetadata`` document, own ``txnAppId``). Sharing the connector's would break a connector
   running meanwhile: two writers that read the same sequence have Delta silently skip the second
   commit (``txnVersion`` already recorded), and a replay commit would become the connector's newest
   offsets document, repeating offsets that its own later commits had moved. The replay's
   ``txnVersion`` is the sum of its positions (``StoredOffsets.replayed_to``), so it grows with every
   commit that holds new letters without the earlier document being read.
4. The table's history is read for the replay's document only when an earlier run may have stopped
   half-way (``DeadLetterBatch.earlier_run_unfinished``: the batch's letters were in flight when an earlier
   run stopped): the table holds no other letter of a batch, and on a busy table the replay's last commit
   may lie far back in a long history.
5. Per table, per record: with a ``${topic}`` template a replay that stopped between two tables'
   commits leaves the first table holding its records and the second not. Each record's letter
   coordinates (``DeadLetterBatch.sources``) let every table leave out only what *it* holds.

A table's position says that every record routed to it from a letter below the position is in it. Letters
below it that were not replayed (filtered out, over the replay limit) were skipped by the replay run that
stored the position; a later run with another filter does not bring them into that table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from connect_spark.api.replay import DeadLetterBatch, RecordCoordinates

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["held_records", "without_records"]


def held_records(batch: DeadLetterBatch, position: Mapping[int, int]) -> list[RecordCoordinates]:
    """The original coordinates of ``batch``'s records whose letter lies below ``position`` (dead letter
    partition → next offset a table holds), in order."""
    return sorted(coordinates for coordinates, (partition, offset) in batch.sources.items()
                  if offset < position.get(partition, 0))


def without_records(frame: "DataFrame", coordinates: list[RecordCoordinates]) -> "DataFrame":
    """``frame`` without the records of the given original coordinates (one condition per partition)."""
    from pyspark.sql import functions as F

    if not coordinates:
        return frame
    by_partition: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in coordinates:
        by_partition.setdefault((topic, partition), []).append(offset)
    held = None
    for (topic, partition), offsets in sorted(by_partition.items()):
        condition = ((F.col("original_topic") == F.lit(topic)) & (F.col("original_partition") == F.lit(partition))
                     & F.col("original_offset").isin(offsets))
        held = condition if held is None else held | condition
    return frame.where(~held)
