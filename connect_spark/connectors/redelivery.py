"""What a table sink leaves out of a batch because the table holds it already.

Called by the Delta and Iceberg tasks for each table's share of a micro-batch. Each of their commits
stores, with the rows, the next Kafka offset of every partition the table holds; a record below that
offset was written by an earlier commit (a batch delivered again after a crash or a retry) and is
dropped, so writing a batch twice adds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from connect_spark.api.records import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["not_yet_stored"]


def not_yet_stored(frame: "DataFrame", stored: Mapping[TopicPartition, int],
                   firsts: Mapping[TopicPartition, int] | None = None) -> "DataFrame":
    """The records of ``frame`` at or after the next offset ``stored`` holds for their original partition.

    ``firsts``: the batch's first offset per partition, when the runtime gave its ranges. Only partitions
    whose records start below what the table holds are filtered, so a batch that follows the table's last
    commit (the common case) carries no filter at all. ``None``: every partition ``stored`` names is filtered.
    """
    from pyspark.sql import functions as F

    already = None
    for tp, next_offset in stored.items():
        if firsts is not None and not (tp in firsts and firsts[tp] < next_offset):
            continue
        condition = ((F.col("original_topic") == F.lit(tp.topic))
                     & (F.col("original_partition") == F.lit(tp.partition))
                     & (F.col("original_offset") < F.lit(next_offset)))
        already = condition if already is None else already | condition
    return frame if already is None else frame.where(~already)
