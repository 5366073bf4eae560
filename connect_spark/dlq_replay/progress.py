"""How far a connector's dead letter replay got: which letters are dealt with for good, which may be in the sink.

Called by :mod:`connect_spark.dlq_replay.replay` (one :class:`ReplayProgress` per run, read before it starts
and written after each chunk) and stored by :mod:`connect_spark.dlq_replay.replay_log` as one JSON value.

Per dead letter topic partition:

* ``position``: every letter below it is dealt with: delivered, dropped on the user's order (``--skip``),
  or superseded by a newer letter of the same record. A run reads from here.
* ``done``: ranges ``[start, end)`` of letters at or above ``position`` that are dealt with too: a run that
  keeps a letter (filtered out, over the replay limit, without context headers) cannot move ``position``
  past it, yet delivers letters after it; those are listed here, so a later run that reads them again
  passes them over. ``position`` moves up through the ranges as soon as nothing kept lies below them.
* ``in_flight``: ranges of letters handed to the sink by a chunk whose commit is not written yet. A run
  that stops there leaves them listed; the next run hands them over again, telling an exactly-once sink
  that it may hold them already (:attr:`~connect_spark.api.replay.DeadLetterBatch.earlier_run_unfinished`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from connect_spark.api.errors import ConnectException

__all__ = ["ReplayProgress", "Ranges", "add_offsets", "remove_offsets", "contains"]

#: Sorted, disjoint, non-adjacent ``[start, end)`` offset ranges of one dead letter partition.
Ranges = list[tuple[int, int]]


def contains(ranges: Ranges, offset: int) -> bool:
    """Whether ``offset`` lies in one of ``ranges``."""
    return any(start <= offset < end for start, end in ranges)


def add_offsets(ranges: Ranges, offsets: Iterable[int]) -> Ranges:
    """``ranges`` with ``offsets`` added, merged."""
    merged: Ranges = []
    pieces = sorted([*ranges, *((o, o + 1) for o in offsets)])
    for start, end in pieces:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def remove_offsets(ranges: Ranges, offsets: Iterable[int]) -> Ranges:
    """``ranges`` without ``offsets``."""
    gone = sorted(set(offsets))
    kept: Ranges = []
    for start, end in ranges:
        cut = start
        for offset in (o for o in gone if start <= o < end):
            if cut < offset:
                kept.append((cut, offset))
            cut = offset + 1
        if cut < end:
            kept.append((cut, end))
    return kept


@dataclass
class ReplayProgress:
    """The stored progress of one connector's replay over one dead letter topic (see the module docstring)."""

    dlq_topic: str
    position: dict[int, int] = field(default_factory=dict)
    done: dict[int, Ranges] = field(default_factory=dict)
    in_flight: dict[int, Ranges] = field(default_factory=dict)

    def is_done(self, partition: int, offset: int) -> bool:
        """Whether the letter at ``partition``/``offset`` was dealt with by an earlier chunk or run."""
        return offset < self.position.get(partition, 0) or contains(self.done.get(partition, []), offset)

    def maybe_in_sink(self, partition: int, offset: int) -> bool:
        """Whether a run that stopped before its chunk's commit handed this letter over."""
        return contains(self.in_flight.get(partition, []), offset)

    def handing_over(self, letters: Mapping[int, Iterable[int]]) -> None:
        """Called before a chunk is delivered: ``letters`` (partition → offsets) go in flight."""
        for partition, offsets in letters.items():
            self.in_flight[partition] = add_offsets(self.in_flight.get(partition, []), offsets)
        self._tidy()

    def dealt_with(self, letters: Mapping[int, Iterable[int]]) -> None:
        """Called once a chunk is delivered: ``letters`` (partition → offsets) are dealt with for good."""
        for partition, offsets in letters.items():
            offsets = list(offsets)
            self.done[partition] = add_offsets(self.done.get(partition, []), offsets)
            self.in_flight[partition] = remove_offsets(self.in_flight.get(partition, []), offsets)
        self._tidy()

    def _tidy(self) -> None:
        """Move each position up through the done ranges that start at it; drop ranges below it."""
        for partition in set(self.done) | set(self.in_flight):
            position = self.position.get(partition, 0)
            done = [(s, e) for s, e in self.done.get(partition, []) if e > position]
            while done and done[0][0] <= position:
                position = max(position, done.pop(0)[1])
            if position:
                self.position[partition] = position
            self.done[partition] = done
            self.in_flight[partition] = [(max(s, position), e) for s, e in self.in_flight.get(partition, [])
                                         if e > position]
        self.done = {p: r for p, r in self.done.items() if r}
        self.in_flight = {p: r for p, r in self.in_flight.items() if r}

    def to_json(self) -> bytes:
        return json.dumps({
            "dlq_topic": self.dlq_topic,
            "position": {str(p): o for p, o in sorted(self.position.items())},
            "done": {str(p): [list(r) for r in ranges] for p, ranges in sorted(self.done.items())},
            "in_flight": {str(p): [list(r) for r in ranges] for p, ranges in sorted(self.in_flight.items())},
        }, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, value: bytes) -> "ReplayProgress":
        try:
            data = json.loads(value)

            def ranges(key: str) -> dict[int, Ranges]:
                return {int(p): [(int(s), int(e)) for s, e in r] for p, r in data.get(key, {}).items()}

            return cls(str(data["dlq_topic"]), {int(p): int(o) for p, o in data.get("position", {}).items()},
                       ranges("done"), ranges("in_flight"))
        except (ValueError, TypeError, KeyError) as e:
            raise ConnectException(f"The stored dead letter replay progress is unreadable ({e}): {value[:200]!r}") \
                from None
