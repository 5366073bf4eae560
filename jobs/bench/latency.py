"""End-to-end latency: a record's produce timestamp → the first moment its offset was seen committed.

Pure computation, called by :mod:`jobs.bench.runner` after a fixed-rate run: ``produced`` holds each
record's ``(offset, timestamp_ms)`` per partition (read back from the topic), ``timeline`` the
watcher's ``(wall time s, {partition: next offset})`` observations. A record at offset ``o`` is
committed once the partition's committed offset is ``> o``. The watcher's poll interval bounds the
resolution (100 ms by default); records never seen committed are counted, not timed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jobs.bench.watchers import Timeline

__all__ = ["LatencySummary", "record_latencies", "summarize"]


@dataclass
class LatencySummary:
    records: int
    committed: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def record_latencies(produced: dict[int, list[tuple[int, int]]], timeline: Timeline) -> tuple[np.ndarray, int]:
    """Latency in ms of every record seen committed, and how many records were never seen committed."""
    latencies: list[float] = []
    never = 0
    for partition, records in produced.items():
        seen = [(t, offsets[partition]) for t, offsets in timeline if partition in offsets]
        k = 0
        for offset, ts_ms in sorted(records):
            while k < len(seen) and seen[k][1] <= offset:
                k += 1
            if k == len(seen):
                never += 1
            else:
                latencies.append(seen[k][0] * 1000.0 - ts_ms)
    return np.asarray(latencies, dtype=np.float64), never


def summarize(produced: dict[int, list[tuple[int, int]]], timeline: Timeline) -> LatencySummary:
    latencies, never = record_latencies(produced, timeline)
    total = latencies.size + never
    if latencies.size == 0:
        return LatencySummary(total, 0, None, None, None)
    p50, p99 = np.percentile(latencies, [50, 99])
    return LatencySummary(total, int(latencies.size), round(float(p50), 1), round(float(p99), 1),
                          round(float(latencies.max()), 1))
