"""The one place a worker writes connectors' offsets, and where a worker that lost a connector is fenced.

Kafka Connect's ``Worker`` owns its tasks' offset commits; here :class:`OffsetOwner` does. Every worker
process (standalone, distributed, the Spark Connect server, the command line's offset tools) gets one from
:func:`build_offset_store` and writes every offset of every connector through it:

* the runner of a connector :meth:`claims <OffsetOwner.claim>` the connector's offsets when it starts,
  before it reads them, and writes every commit through that claim until it stops;
* any other write (a connector created with offsets, ``PATCH``/``DELETE .../offsets``, a replay's start) is
  :meth:`OffsetOwner.write`: through the claim this process holds, or a claim made for that one write.

On Kafka a claim is a transactional producer whose id belongs to the connector
(:mod:`connect_spark.storage.transactional_offsets`): claiming fences every earlier claim at the broker, so a
frozen worker that wakes up after another took its connector over cannot move ``connect-offsets`` again.
Before each write the owner also asks ``fenced`` (in a group, whether this worker is still a member): a
worker that knows it lost its membership does not even try.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from connect_spark.api.records import TopicPartition
from connect_spark.storage.offsets import OffsetClaim, OffsetsFenced, OffsetStore

if TYPE_CHECKING:
    from connect_spark.config.worker import WorkerConfig

__all__ = ["OffsetOwner", "HeldClaim", "build_offset_store"]

log = logging.getLogger(__name__)


class HeldClaim(OffsetClaim):
    """A claim the owner registered for its holder (the runner): writes check the fence first.

    Args:
        owner: the owner that made it.
        inner: the store's claim.
    """

    def __init__(self, owner: "OffsetOwner", inner: OffsetClaim) -> None:
        super().__init__(owner, inner.connector)
        self.owner = owner
        self.inner = inner

    def write(self, offsets: Mapping[TopicPartition, int | None], group_id: str | None = None) -> None:
        """See :meth:`OffsetClaim.write`; refused without a round trip while the worker knows it is fenced."""
        self.owner.check_member(self.connector)
        try:
            self.inner.write(offsets, group_id)
        except OffsetsFenced:
            self.owner.refused += 1
            log.warning("Worker %s: the offsets of %s were claimed elsewhere; this write was refused by the broker",
                        self.owner.worker_id, self.connector)
            raise

    def release(self) -> None:
        """Release the store's claim and forget it (called once by the holder when it stopped)."""
        self.owner.forget(self)
        self.inner.release()


class OffsetOwner(OffsetStore):
    """A worker's offset store, through which every offset write goes (see the module docstring).

    Args:
        store: the store the offsets live in; started and stopped with the owner.
        fenced: whether this worker knows it may no longer act for its connectors
            (:meth:`~connect_spark.herder.membership.WorkerGroup.fenced`); never, alone.
        worker_id: this worker, for messages.
    """

    def __init__(self, store: OffsetStore, fenced: Callable[[], bool] = lambda: False, worker_id: str = "") -> None:
        self.store = store
        self.fenced = fenced
        self.worker_id = worker_id or "(standalone)"
        self.refused = 0  # writes refused, by the broker or before trying (metrics, tests)
        self._claims: dict[str, HeldClaim] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self.store.start()

    def stop(self) -> None:
        with self._lock:
            claims, self._claims = list(self._claims.values()), {}
        for claim in claims:
            claim.inner.release()
        self.store.stop()

    def read(self, connector: str) -> dict[TopicPartition, int]:
        return self.store.read(connector)

    def check_member(self, connector: str) -> None:
        """Raise :class:`OffsetsFenced` when this worker knows it lost its membership."""
        if self.fenced():
            self.refused += 1
            log.warning("Worker %s is not a current group member: offsets of %s not committed", self.worker_id,
                        connector)
            raise OffsetsFenced(f"Worker {self.worker_id} lost its group membership; the offsets of {connector} "
                                "are not committed (another worker may run it now)")

    def claim(self, connector: str, also_fence: Sequence[str] = ()) -> HeldClaim:
        """Claim ``connector``'s offsets for a runner that is starting (before it reads them). A claim this
        process still holds for the connector is released first: the new one fences it anyway. ``also_fence``:
        see :meth:`OffsetStore.claim`.

        Raises:
            OffsetsFenced: this worker knows it is fenced.
            OffsetStoreError: the store cannot make the claim.
        """
        self.check_member(connector)
        with self._lock:
            stale = self._claims.pop(connector, None)
        if stale is not None:
            log.warning("Worker %s: a claim of the offsets of %s was still held; releasing it", self.worker_id,
                        connector)
            stale.inner.release()
        held = HeldClaim(self, self.store.claim(connector, also_fence))
        with self._lock:
            self._claims[connector] = held
        return held

    def forget(self, claim: HeldClaim) -> None:
        """Drop ``claim`` from the held claims (called by its release)."""
        with self._lock:
            if self._claims.get(claim.connector) is claim:
                del self._claims[claim.connector]

    def write(self, connector: str, offsets: Mapping[TopicPartition, int | None], group_id: str | None = None) -> None:
        """A write outside a runner's commits: through the claim this process holds for ``connector``, or a
        claim made for this write alone (which fences any other holder first). See :meth:`OffsetStore.write`."""
        with self._lock:
            held = self._claims.get(connector)
        if held is not None:
            held.write(offsets, group_id)
            return
        self.check_member(connector)
        claim = self.store.claim(connector)
        try:
            claim.write(offsets, group_id)
        finally:
            claim.release()


def build_offset_store(worker: "WorkerConfig", fenced: Callable[[], bool] = lambda: False,
                       worker_id: str = "") -> OffsetOwner:
    """A worker's offset owner over the file store when ``offset.storage.file.filename`` is set, else over the
    ``offset.storage.topic`` store. Called once per process by whatever runs connectors or writes their offsets."""
    from connect_spark.storage.file_offsets import FileOffsetStore
    from connect_spark.storage.kafka_offsets import KafkaOffsetStore

    store: OffsetStore
    if worker.offset_storage_file_filename:
        store = FileOffsetStore(worker.offset_storage_file_filename)
    else:
        store = KafkaOffsetStore(
            worker.bootstrap_servers,
            topic=worker.offset_storage_topic,
            partitions=worker.offset_storage_partitions,
            replication_factor=worker.offset_storage_replication_factor,
            client_config=worker.kafka_client_config(),
        )
    return OffsetOwner(store, fenced, worker_id)
