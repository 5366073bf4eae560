"""The optional contract of a sink that keeps its own offsets and takes replayed dead letters exactly once.

A dead letter replay (``connect-spark dlq replay``, :mod:`connect_spark.dlq_replay`) hands a connector's
task records it already saw once: the letters keep their original topic, partition and offset, which lie
below the offsets an exactly-once sink stores with its data. Such a sink would drop them as already
written. A sink task that also implements :class:`ReplayAwareTask` takes them instead, and keeps the
replay's position in the dead letter topic *with its data*, so that a replay that stopped after the
sink's commit but before the replay wrote its own position writes nothing twice when run again.

The replay delivers the backlog in batches (chunks) and calls, on the driver, for each, in this order::

    begin_replay(batch) → (start, open) → replay_position() → put… of the letters not held → end_replay()

A sink that keeps its own offsets (seeks in ``open``) without implementing this contract is refused by
the replay before anything is delivered.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["DeadLetterBatch", "ReplayAwareTask", "RecordCoordinates"]

#: A record's original coordinates: topic, partition, offset.
RecordCoordinates = tuple[str, int, int]


@dataclass(frozen=True)
class DeadLetterBatch:
    """The dead letters one replay run hands over, and where they come from in the dead letter topic.

    Attributes:
        dlq_topic: the dead letter topic.
        ends: per partition of the dead letter topic, the offset after the batch's last letter. The sink
            stores it with the replayed records; a later batch's letters below it may be held only when
            that batch says ``earlier_run_unfinished``.
        sources: each replayed record's original coordinates → the dead letter topic partition and
            offset of its letter. Original coordinates are unique within a batch (the newest letter of
            a record wins).
        earlier_run_unfinished: the batch's letters were handed over by an earlier run that stopped
            before committing its progress (the replay lists such letters as in flight until it has
            committed them). ``False``: the sink holds none of them and need not look.
    """

    dlq_topic: str
    ends: Mapping[int, int]
    sources: Mapping[RecordCoordinates, tuple[int, int]] = field(default_factory=dict)
    earlier_run_unfinished: bool = True


class ReplayAwareTask(abc.ABC):
    """Mixin for a sink task that stores its offsets with its data and can take a dead letter replay.

    While a replay is on (between :meth:`begin_replay` and :meth:`end_replay`) the task must write the
    records it receives even though their offsets lie below what it stores, must not move its stored
    offsets (nor seek in ``open``), and must store ``batch.ends`` as its replay position in the same
    atomic commit as the replayed records. A record whose letter lies below the position a destination
    already holds is left out there.
    """

    @abc.abstractmethod
    def begin_replay(self, batch: DeadLetterBatch) -> None:
        """Called by the replay before the task's ``start``/``open``: the records that follow are ``batch``'s
        letters. No Spark work here."""

    @abc.abstractmethod
    def replay_position(self) -> dict[int, int]:
        """Called by the replay after ``open``: per dead letter topic partition, the offset below which
        every letter of the current batch is held by *every* destination the task may write it to.

        The replay leaves those letters out. ``{}`` when the task cannot say for all destinations (one
        table per topic: a transform decides the table), in which case each destination leaves out, at
        its write, the letters it holds.
        """

    @abc.abstractmethod
    def end_replay(self) -> None:
        """Called by the replay once the batch is delivered or failed, after ``close``."""
