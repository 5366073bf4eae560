"""A connector's claim of its offsets in ``offset.storage.topic``: a transactional producer the broker fences.

:meth:`connect_spark.storage.kafka_offsets.KafkaOffsetStore.claim` makes a :class:`TransactionalClaim`. Its
producer's ``transactional.id`` belongs to the connector and the offsets topic (:func:`offsets_transactional_id`);
:meth:`TransactionalClaim.open` calls ``init_transactions``, which bumps the id's producer epoch at the
transaction coordinator. That aborts a transaction an earlier holder of the id left open (a worker frozen in
the middle of a commit) and fences that holder: the broker refuses its every later transaction with
``ProducerFencedError`` (its records, with ``InvalidProducerEpochError``), which :meth:`TransactionalClaim.write`
raises as :class:`~connect_spark.storage.offsets.OffsetsFenced`. So of all the processes that ever claimed a
connector's offsets, only the last one can still move them.

Each write is one transaction holding one ``connect-offsets`` record per partition (the key, value and
partition :class:`~connect_spark.storage.kafka_offsets.KafkaOffsetStore` always writes); the store's reader
reads ``read_committed``, so an aborted or fenced write is never applied. The consumer group mirror
(``connect-<name>``) is written after the transaction committed, as before: see
:meth:`TransactionalClaim.write`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.storage.offsets import (
    OffsetClaim,
    OffsetsFenced,
    OffsetStoreError,
    consumer_group_id,
    encode_key,
    encode_value,
    normalize_offsets,
)

if TYPE_CHECKING:
    from connect_spark.storage.kafka_offsets import KafkaOffsetStore

__all__ = ["TransactionalClaim", "offsets_transactional_id", "fence_transactional_ids"]

log = logging.getLogger(__name__)

#: Back-off of the producer's retried requests: a transaction begun right after the previous one ended is told
#: CONCURRENT_TRANSACTIONS until its markers are written; kafka-python's 100 ms default would slow every commit.
_RETRY_BACKOFF_MS = 5


def offsets_transactional_id(offsets_topic: str, connector: str) -> str:
    """The ``transactional.id`` every claim of ``connector``'s offsets in ``offsets_topic`` uses.

    It names the topic too: two clusters with their own offsets topics may each run a connector of the
    same name without fencing each other; two writers of one topic's records of one connector cannot.
    """
    return f"connect-spark-offsets:{offsets_topic}:{connector}"


def fence_transactional_ids(settings: Mapping[str, Any], transactional_ids: Sequence[str], timeout_s: float) -> None:
    """Call ``init_transactions`` once for each id (a few at a time), then close the producers: every earlier
    holder of those ids is fenced, and a transaction it left open is aborted.

    Called by :meth:`~connect_spark.storage.kafka_offsets.KafkaOffsetStore.claim` with the ids of real-time
    mode's per-partition commits, when the worker that now owns the connector starts it.

    Raises:
        OffsetStoreError: an id could not be initialised (the message names it).
    """
    from concurrent.futures import ThreadPoolExecutor

    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    from connect_spark.kafka.clients import accepted_kwargs

    def fence(transactional_id: str) -> None:
        producer = None
        try:
            producer = KafkaProducer(**accepted_kwargs(KafkaProducer, {
                **settings, "client_id": "connect-spark-fence", "transactional_id": transactional_id,
                "max_block_ms": int(timeout_s * 1000)}))
            producer.init_transactions()
        except KafkaError as e:
            raise OffsetStoreError(f"Cannot fence the transactional id {transactional_id}: {e!r}") from e
        finally:
            if producer is not None:
                producer.close(timeout=5)

    if not transactional_ids:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(transactional_ids)), thread_name_prefix="fence") as pool:
        list(pool.map(fence, transactional_ids))
    log.info("Fenced %d transactional id(s) of earlier owners", len(transactional_ids))


def _is_fencing(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) says a newer producer of the same transactional id exists.

    kafka-python raises ``ProducerFencedError`` only from the call that met the refusal; every later call
    on that producer raises a plain ``KafkaError`` whose message names the error state it is in, which is
    why the message is looked at too.
    """
    from kafka.errors import InvalidProducerEpochError, ProducerFencedError

    seen = error
    while seen is not None:
        if isinstance(seen, (ProducerFencedError, InvalidProducerEpochError)) or "ProducerFenced" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class TransactionalClaim(OffsetClaim):
    """One claim of one connector's offsets in a Kafka topic (see the module docstring).

    Args:
        store: the started store (its topic, its client settings, its group mirror).
        connector: the connector.
        producer_settings: kafka-python settings of the producer (bootstrap servers, security).
    """

    def __init__(self, store: "KafkaOffsetStore", connector: str, producer_settings: Mapping[str, Any]) -> None:
        super().__init__(store, connector)
        self.kafka_store = store
        self.transactional_id = offsets_transactional_id(store.topic, connector)
        self._settings = dict(producer_settings)
        self._producer: Any = None
        self.fenced = False
        self._broken: BaseException | None = None

    def open(self) -> "TransactionalClaim":
        """Create the producer and call ``init_transactions``: from now on every earlier claim is fenced.

        Raises:
            OffsetStoreError: the transaction coordinator cannot be reached or refused (the message says why).
        """
        from kafka import KafkaProducer
        from kafka.errors import KafkaError
        from kafka.partitioner import DefaultPartitioner

        from connect_spark.kafka.clients import accepted_kwargs

        producer = None
        try:
            producer = KafkaProducer(**accepted_kwargs(KafkaProducer, {
                **self._settings,
                "client_id": f"connect-spark-offsets-{self.connector}",
                "transactional_id": self.transactional_id,
                "acks": "all",
                "linger_ms": 0,
                "retry_backoff_ms": _RETRY_BACKOFF_MS,
                "max_block_ms": int(self.kafka_store.timeout_s * 1000),
                "allow_auto_create_topics": False,
                "partitioner": DefaultPartitioner(),  # Kafka Connect's partition for the key
            }))
            producer.init_transactions()
        except KafkaError as e:
            if producer is not None:
                producer.close(timeout=0)
            raise OffsetStoreError(f"Cannot claim the offsets of {self.connector} (transactional id "
                                   f"{self.transactional_id}) in topic {self.kafka_store.topic}: {e!r}. The broker "
                                   "must allow transactions (transaction.state.log.replication.factor at most the "
                                   "number of brokers)") from e
        self._producer = producer
        log.info("Claimed the offsets of %s (transactional id %s): earlier claims are fenced", self.connector,
                 self.transactional_id)
        return self

    def write(self, offsets: Mapping[TopicPartition, int | None], group_id: str | None = None) -> None:
        """Commit ``offsets`` in one transaction, then mirror them to the consumer group.

        The mirror stays outside the transaction: only lag tooling reads the group, a group another client
        is a member of, or a deleted topic, must not block commits, and a reset (deleting the group's offset)
        cannot be part of a transaction. A fenced claim never reaches the mirror (its transaction fails first).

        Raises:
            OffsetsFenced: a later claim exists (nothing was written; every later write raises it too).
            OffsetStoreError: the write failed and was aborted; nothing can be assumed committed.
        """
        from kafka.errors import KafkaError

        changes = normalize_offsets(self.connector, offsets)
        if not changes:
            return
        self._check_usable()
        producer = self._producer
        deadline = time.monotonic() + self.kafka_store.timeout_s
        try:
            producer.begin_transaction()
            sends = [producer.send(self.kafka_store.topic, key=encode_key(self.connector, tp),
                                   value=encode_value(offset)) for tp, offset in sorted(changes.items())]
            producer.flush(timeout=max(deadline - time.monotonic(), 0.001))
            for sent in sends:  # a refused record names the fence; the commit after it may only say its state
                sent.get(timeout=max(deadline - time.monotonic(), 0.001))
            producer.commit_transaction()
        except KafkaError as e:
            if _is_fencing(e):
                self.fenced = True
                raise OffsetsFenced(f"The offsets of {self.connector} were claimed by another worker (transactional "
                                    f"id {self.transactional_id}): {offsets_text(changes)} not committed") from e
            self._abort(e)
            raise OffsetStoreError(f"Committing offsets of {self.connector} to topic {self.kafka_store.topic} failed "
                                   f"({offsets_text(changes)}): {e!r}") from e
        log.debug("Committed offsets of %s in a transaction: %s", self.connector, offsets_text(changes))
        self.kafka_store.mirror_group(group_id or consumer_group_id(self.connector), changes)

    def _check_usable(self) -> None:
        if self.fenced:
            raise OffsetsFenced(f"The offsets of {self.connector} were claimed by another worker (transactional id "
                                f"{self.transactional_id})")
        if self._producer is None:
            raise OffsetStoreError(f"The claim of the offsets of {self.connector} is released or not open")
        if self._broken is not None:
            raise OffsetStoreError(f"The claim of the offsets of {self.connector} cannot write any more after "
                                   f"{self._broken!r}; the connector must be restarted to claim them again")

    def _abort(self, error: BaseException) -> None:
        """Abort after a failed write. When even that fails the producer is unusable: the claim is not renewed
        here, since renewing would fence a newer owner; the holder restarts instead."""
        try:
            self._producer.abort_transaction()
        except Exception as e:
            if _is_fencing(e):
                self.fenced = True
            else:
                self._broken = error
            log.debug("%s: abort after a failed commit raised %r", self.connector, e)

    def release(self) -> None:
        """Close the producer (an open transaction is aborted by the coordinator or the next claim)."""
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=5)
            except Exception as e:
                log.debug("%s: closing the offsets producer raised %r", self.connector, e)
