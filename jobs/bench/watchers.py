"""What an arm has committed, observed over time.

An arm's *committed* offsets are what it would resume from: the consumer group ``connect-<name>`` for
Kafka Connect and connect_spark (which mirrors its ``connect-offsets`` commits there), and the last
finished micro-batch in Spark's checkpoint (``commits/<n>`` plus ``offsets/<n>``) for plain Spark.
A watcher polls that on a background thread and keeps a timeline of ``(wall time, {partition: next
offset})`` changes; :mod:`jobs.bench.runner` waits on it for the drain to finish, and
:mod:`jobs.bench.latency` turns it into per-record latencies.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Callable

__all__ = ["CommitWatcher", "ConsumerGroupWatcher", "SparkCheckpointWatcher", "Timeline"]

log = logging.getLogger(__name__)

Timeline = list[tuple[float, dict[int, int]]]


class CommitWatcher:
    """Polls :meth:`read` every ``interval`` seconds and records each change with its wall time."""

    def __init__(self, topic: str, interval: float = 0.1) -> None:
        self.topic = topic
        self.interval = interval
        self.timeline: Timeline = []
        self._stopped = threading.Event()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"watch-{topic}", daemon=True)

    # -- to implement ------------------------------------------------------------------------

    def read(self) -> dict[int, int]:
        """The committed next offset per partition of ``topic`` right now (missing: none yet)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release clients."""

    # -- use -----------------------------------------------------------------------------------

    def start(self) -> "CommitWatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self.close()

    @property
    def latest(self) -> dict[int, int]:
        return dict(self.timeline[-1][1]) if self.timeline else {}

    def wait_for(self, target: dict[int, int], timeout: float,
                 alive: Callable[[], bool] = lambda: True) -> bool:
        """Block until every partition's committed offset reaches ``target``; False on timeout or when
        ``alive()`` turns False (the arm's process exited) and one more poll shows no progress."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if _reached(self.latest, target):
                    return True
                if time.monotonic() >= deadline:
                    return False
                if not alive():
                    # The process may have committed just before exiting: give the poller two rounds.
                    self._changed.wait(self.interval * 3)
                    return _reached(self.latest, target)
                self._changed.wait(min(0.5, max(deadline - time.monotonic(), 0.01)))

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                offsets = self.read()
            except Exception as e:  # a transient broker or file-system hiccup: retry at the next poll
                log.debug("watcher %s: %r", self.topic, e)
                offsets = None
            if offsets and offsets != self.latest:
                with self._changed:
                    self.timeline.append((time.time(), offsets))
                    self._changed.notify_all()
            self._stopped.wait(self.interval)


def _reached(latest: dict[int, int], target: dict[int, int]) -> bool:
    return all(latest.get(p, -1) >= off for p, off in target.items())


class ConsumerGroupWatcher(CommitWatcher):
    """Committed offsets of a consumer group (``connect-<connector name>``)."""

    def __init__(self, bootstrap_servers: str, group_id: str, topic: str, interval: float = 0.1) -> None:
        super().__init__(topic, interval)
        from kafka import KafkaAdminClient

        self.group_id = group_id
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="bench-watcher",
                                       request_timeout_ms=10_000)

    def read(self) -> dict[int, int]:
        answer = self._admin.list_group_offsets({self.group_id: None}).get(self.group_id) or {}
        offsets = {}
        for tp, meta in answer.items():
            if tp.topic == self.topic:
                offset = getattr(meta, "offset", meta)
                if offset is not None and offset >= 0:
                    offsets[tp.partition] = int(offset)
        return offsets

    def close(self) -> None:
        self._admin.close()


class SparkCheckpointWatcher(CommitWatcher):
    """End offsets of the last micro-batch whose ``commits/<n>`` marker exists in a Spark checkpoint."""

    def __init__(self, checkpoint: str | Path, topic: str, interval: float = 0.1) -> None:
        super().__init__(topic, interval)
        self.checkpoint = Path(checkpoint)

    def read(self) -> dict[int, int]:
        commits = self.checkpoint / "commits"
        if not commits.is_dir():
            return {}
        batches = [int(p.name) for p in commits.iterdir() if p.name.isdigit()]
        if not batches:
            return {}
        return spark_batch_end_offsets(self.checkpoint / "offsets" / str(max(batches)), self.topic)


def spark_batch_end_offsets(offsets_file: Path, topic: str) -> dict[int, int]:
    """The Kafka end offsets recorded in a Spark checkpoint's ``offsets/<n>`` file for ``topic``.

    The file holds a version line, a metadata JSON line, then one JSON line per source.
    """
    for line in offsets_file.read_text().splitlines()[2:]:
        line = line.strip()
        if line.startswith("{"):
            per_topic = json.loads(line)
            if topic in per_topic:
                return {int(p): int(o) for p, o in per_topic[topic].items()}
    return {}
