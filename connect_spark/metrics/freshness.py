"""Freshness: how old the newest committed record is, per partition (now minus its timestamp).

Lag says how many records wait; freshness says how stale the sink's data is. A committed offset ``N``
means records up to ``N - 1`` are durable in the sink, so the tracker reads that one record's timestamp
from Kafka (a small fetch per partition and commit, on the committer's thread, never on a batch's).

Who calls what: the connector runner builds a :class:`FreshnessTracker` at start, calls
:meth:`FreshnessTracker.on_committed` after each offset write (from the committer thread) and
:meth:`FreshnessTracker.add_to` when it builds its metrics; :meth:`FreshnessTracker.close` at stop.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

from connect_spark.api.records import TopicPartition

__all__ = ["FreshnessTracker"]

log = logging.getLogger(__name__)


class FreshnessTracker:
    """The timestamps of the newest committed record of each partition.

    Args:
        consumer_kwargs: returns kafka-python ``KafkaConsumer`` arguments (the connector's client settings),
            called on the first read.
        wall_ms: epoch milliseconds (tests inject one).
    """

    def __init__(self, consumer_kwargs: Callable[[], Mapping[str, Any]],
                 wall_ms: Callable[[], float] = lambda: time.time() * 1000.0) -> None:
        self._kwargs = consumer_kwargs
        self._wall_ms = wall_ms
        self._consumer: Any = None
        self._lock = threading.Lock()
        self.timestamps: dict[TopicPartition, int] = {}  # newest committed record's timestamp (epoch ms)

    def on_committed(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        """After a commit: read the timestamp of the record before each committed offset. Best effort."""
        wanted = {tp: off - 1 for tp, off in offsets.items() if off}
        if not wanted:
            return
        try:
            with self._lock:
                self.timestamps.update(self._read(wanted))
        except Exception as e:  # metrics must never fail a commit
            log.debug("freshness: reading committed records' timestamps failed: %r", e)

    def _read(self, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KafkaTopicPartition

        if self._consumer is None:
            self._consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, **self._kwargs())
        tps = {KafkaTopicPartition(tp.topic, tp.partition): tp for tp in wanted}
        self._consumer.assign(list(tps))
        for ktp, tp in tps.items():
            self._consumer.seek(ktp, wanted[tp])
        found: dict[TopicPartition, int] = {}
        deadline = time.monotonic() + 5.0
        while len(found) < len(tps) and time.monotonic() < deadline:
            for ktp, records in self._consumer.poll(timeout_ms=500, max_records=len(tps) * 10).items():
                for r in records:
                    if r.offset == wanted[tps[ktp]]:
                        found[tps[ktp]] = r.timestamp
                if tps[ktp] in found:
                    self._consumer.pause(ktp)
        self._consumer.resume(*self._consumer.paused())
        return found

    def add_to(self, snapshot: dict[str, Any]) -> None:
        """Add ``freshness-ms`` to each partition of the snapshot's lag, and ``record-freshness-max-ms``."""
        now = self._wall_ms()
        with self._lock:
            ages = {tp: max(0, int(now - ts)) for tp, ts in self.timestamps.items()}
        lag = snapshot.setdefault("lag", {})
        partitions = lag.setdefault("partitions", [])
        for entry in partitions:
            entry["freshness-ms"] = ages.pop(TopicPartition(entry["topic"], entry["partition"]), None)
        partitions.extend({"topic": tp.topic, "partition": tp.partition, "lag": None, "freshness-ms": age}
                          for tp, age in sorted(ages.items()))
        known = [e["freshness-ms"] for e in partitions if e.get("freshness-ms") is not None]
        lag["record-freshness-max-ms"] = max(known) if known else None

    def describe(self) -> str:
        """The progress line's suffix: ``, freshness max 1.2 s`` (empty before the first commit)."""
        now = self._wall_ms()
        with self._lock:
            newest = min(self.timestamps.values(), default=None)
        return "" if newest is None else f", freshness max {max(0.0, now - newest) / 1000.0:.1f} s"

    def close(self) -> None:
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
