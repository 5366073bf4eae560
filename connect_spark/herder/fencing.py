"""Offset commits of a distributed worker refused once it lost its group membership.

A worker paused past its session timeout (a long GC pause, SIGSTOP, a network partition) is no longer
a member: the leader may already have given its connectors to other workers. When it resumes, its
streaming queries may still reach a commit before the herder has stopped them; :class:`FencedOffsetStore`
refuses every such write (``OffsetStoreError``, so the runner does not advance), which keeps a stale
worker from moving ``connect-offsets`` under the new owner.
"""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.storage.offsets import OffsetStore, OffsetStoreError

__all__ = ["FencedOffsetStore"]

log = logging.getLogger(__name__)


class FencedOffsetStore(OffsetStore):
    """Delegates to ``inner``; :meth:`write` first asks ``fenced`` (the group membership) and refuses when True.

    Args:
        inner: the worker's offset store (started and stopped by the worker, not through this wrapper).
        fenced: :meth:`~connect_spark.herder.membership.WorkerGroup.fenced`.
        worker_id: for the messages.
    """

    def __init__(self, inner: OffsetStore, fenced: Callable[[], bool], worker_id: str) -> None:
        self.inner = inner
        self.fenced = fenced
        self.worker_id = worker_id
        self.refused = 0

    def start(self) -> None:
        """The worker starts the inner store itself; nothing to do."""

    def stop(self) -> None:
        """The worker stops the inner store itself; nothing to do."""

    def read(self, connector: str) -> dict[TopicPartition, int]:
        return self.inner.read(connector)

    def write(self, connector: str, offsets: Mapping[TopicPartition, int | None], group_id: str | None = None) -> None:
        if self.fenced():
            self.refused += 1
            log.warning("Worker %s is not a current group member: offsets of %s not committed", self.worker_id,
                        connector)
            raise OffsetStoreError(f"Worker {self.worker_id} lost its group membership; the offsets of {connector} "
                                   "are not committed (another worker may run it now)")
        self.inner.write(connector, offsets, group_id)
