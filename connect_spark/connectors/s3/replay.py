"""How the S3 sink takes a dead letter replay exactly once: objects of their own, named by the replayed batch.

The letters of a replay (:mod:`connect_spark.dlq_replay`) keep their original coordinates, which lie below the
point the sink resumes from: written as ordinary objects they would be dropped as already uploaded, or replace
objects holding other records. :class:`~connect_spark.connectors.s3.task.S3SinkTask` (a
:class:`~connect_spark.api.replay.ReplayAwareTask`) therefore writes a replayed batch as one group of objects of
its own, uploaded when the batch closes: one object per Kafka partition and encoded partition, named as
Confluent's objects plus a tag naming where the batch ends in the dead letter topic
(``<topic>+<partition>+<start>+dlq+<dlq partition>-<end>.<ext>``, :func:`replay_tag`). Ordinary resumes never
match those names, so they leave the replayed objects alone.

A replay that stopped after the upload but before it stored its progress hands the same letters over again;
:func:`batch_complete` then finds every object of the batch under its tag, holding the batch's records, and
the task reports the batch as held (nothing is written twice). A batch cut short by a crash is written again
under the same names, replacing what was there.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from connect_spark.connectors.s3.store import Bucket, GroupMark, StoredObject

__all__ = ["replay_tag", "replay_name", "batch_complete"]


def replay_tag(ends: Mapping[int, int], file_delim: str) -> str:
    """The part a replayed batch's object names carry after the start offset: the batch's end in every
    partition of the dead letter topic, e.g. ``+dlq+0-1234``."""
    spans = "_".join(f"{partition}-{end}" for partition, end in sorted(ends.items()))
    return f"{file_delim}dlq{file_delim}{spans}"


def replay_name(name_start: str, tag: str, extension: str) -> re.Pattern[str]:
    """The last path part of one partition's objects of the batch tagged ``tag`` (group 1: the start offset)."""
    return re.compile(re.escape(name_start) + r"(\d+)" + re.escape(tag) + re.escape(extension))


def batch_complete(bucket: Bucket, found: Iterable[StoredObject]) -> bool:
    """Whether the objects ``found`` under a batch's tag (in every partition the task holds) are its whole
    group: all carry one group mark, as many as it counts, holding its records between them."""
    marks = [bucket.mark(stored.key) for stored in found]
    groups: set[GroupMark] = {mark.group for mark in marks if mark is not None}
    if len(groups) != 1 or None in marks:
        return False
    (group,) = groups
    return group.complete(marks) and len(marks) == group.objects
