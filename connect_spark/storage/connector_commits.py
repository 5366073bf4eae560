"""One start of a running connector's offset commits: its claim of the offsets, and its in-order committer.

Made by :class:`connect_spark.runtime.worker.connector_runner.ConnectorRunner` for each start. The runner calls
:meth:`ConnectorCommits.claim` before it reads the committed offsets (so that every earlier writer of them is
fenced first, see :mod:`connect_spark.storage.owner`), :meth:`ConnectorCommits.submit` from its commit step,
and :meth:`ConnectorCommits.close` from its stop, after the tasks' final commits.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from connect_spark.storage.committer import Offsets, OffsetCommitter
from connect_spark.storage.offsets import OffsetClaim, OffsetsFenced, OffsetStore

__all__ = ["ConnectorCommits"]

log = logging.getLogger(__name__)


class ConnectorCommits:
    """A connector's commits from one start to its stop.

    Args:
        store: the worker's offset store (an :class:`~connect_spark.storage.owner.OffsetOwner` in a worker).
        name: the connector.
        group_id: the consumer group the offsets are mirrored to.
        on_written: called on the writer thread with what each write stored (lag metrics).
        on_fenced: called on the writer thread when a write was refused because another worker claimed the
            offsets; the runner fails the connector, so that its query stops.
    """

    def __init__(self, store: OffsetStore, name: str, group_id: str | None,
                 on_written: Callable[[dict], None], on_fenced: Callable[[BaseException], None]) -> None:
        self.store = store
        self.name = name
        self.group_id = group_id
        self._on_fenced = on_fenced
        self._claim: OffsetClaim | None = None
        self.committer = OffsetCommitter(name, self._write, on_written)

    def claim(self, also_fence: Sequence[str] = ()) -> None:
        """Claim the offsets (the runner's start, before its first read of them); ``also_fence``: the
        transactional ids of real-time mode's per-partition commits, fenced too."""
        self._claim = self.store.claim(self.name, also_fence)

    def submit(self, offsets: Offsets) -> None:
        """Hand a commit to the committer; raises the previous write's failure (see ``OffsetCommitter.submit``)."""
        self.committer.submit(offsets)

    def _write(self, offsets: dict) -> None:
        if self._claim is None:
            raise OffsetsFenced(f"{self.name}: its offsets are not claimed (not started, or stopped)")
        try:
            self._claim.write(offsets, self.group_id)
        except OffsetsFenced as e:
            self._on_fenced(e)
            raise

    def close(self) -> None:
        """Write what is pending, then release the claim. Raises when the final write failed (released anyway)."""
        try:
            self.committer.close()
        finally:
            claim, self._claim = self._claim, None
            if claim is not None:
                claim.release()
