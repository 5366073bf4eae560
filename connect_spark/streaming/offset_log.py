"""A micro-batch's Kafka offset ranges, read from the query's own offset log instead of from its rows.

Structured Streaming writes ``<checkpoint>/offsets/<batchId>`` before it runs batch ``batchId``: a
``v1`` line, a metadata line, then one line per source with the source's end offsets as JSON
(``{"topic":{"0":1200,"1":1187}}``). The batch reads ``[start, end)`` per topic-partition, where
``start`` is the previous batch's end, or, for the first batch of a query, the positions the query was
started from. Called by the frame processor (:mod:`connect_spark.runtime.processors.dataframe_batches`) inside
``foreachBatch``: knowing the ranges costs a small local file read, no Spark job.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping

from connect_spark.api.records import TopicPartition

__all__ = ["batch_end_offsets", "batch_ranges"]

log = logging.getLogger(__name__)


def batch_end_offsets(checkpoint: Path, batch_id: int) -> dict[TopicPartition, int] | None:
    """The end offsets (next offset to read) of batch ``batch_id`` of the query checkpointed at
    ``checkpoint``; ``None`` when the log has no readable entry for it (the caller then aggregates)."""
    path = Path(checkpoint) / "offsets" / str(batch_id)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    if len(lines) < 3 or lines[0].strip() != "v1":
        return None
    source = lines[2].strip()
    if not source or source == "-":
        return None
    try:
        by_topic = json.loads(source)
        return {TopicPartition(topic, int(p)): int(off)
                for topic, partitions in by_topic.items() for p, off in partitions.items()}
    except (ValueError, AttributeError, TypeError):
        log.debug("Offset log entry %s is not a Kafka source's offsets: %r", path, source)
        return None


def batch_ranges(checkpoint: Path, batch_id: int,
                 started_from: Mapping[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int]] | None:
    """First offset and next offset per topic-partition that batch ``batch_id`` read (empty ranges left
    out); ``started_from`` are the positions the query started at (the start of its first batch).

    ``None`` when the ranges cannot be known from the log alone: an entry is missing, or a partition
    appears that neither the previous entry nor ``started_from`` knows (Spark starts a partition it
    discovers mid-query at its earliest offset, which the log does not say).
    """
    end = batch_end_offsets(checkpoint, batch_id)
    if end is None:
        return None
    start: Mapping[TopicPartition, int] | None = started_from
    if batch_id > 0:
        start = batch_end_offsets(checkpoint, batch_id - 1)
        if start is None:
            return None
        start = {**started_from, **start}
    ranges = {}
    for tp, next_offset in end.items():
        first = start.get(tp)
        if first is None:
            return None
        if next_offset > first:
            ranges[tp] = (first, next_offset)
    return ranges
