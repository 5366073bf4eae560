"""Offset commits from an executor, fenced per Kafka partition: one Kafka transaction per commit.

In ``task.execution.mode=realtime`` a partition's task commits what its ``pre_commit`` returned from the
executor that runs it, every ``offset.flush.interval.ms`` (the driver only sees Spark's batch ends, too seldom
for sub-second commits). Called by :class:`connect_spark.runtime.realtime.partition_task.PartitionTask`, under its
writer's lock: from Spark's task thread (first row, batch end) or the writer's commit ticker, never both at once.

**Fencing.** Two attempts of one partition's task must not race commits: a Spark task that was given up on
(a lost executor still running, a retried task) could otherwise write an older commit after a newer one. Each
attempt commits through a transactional producer whose ``transactional.id`` is
``connect-spark-<connector>-<topic>-<partition>`` (:func:`transactional_id`); it is created, and
``init_transactions`` called, when the attempt receives its first record. ``init_transactions`` bumps the
producer epoch of that id at the transaction coordinator, which aborts an open transaction of the previous
attempt and fences it: every later commit of the older attempt fails with ``ProducerFencedError``
(:class:`CommitFenced`), after which that attempt stops. The worker that is given the connector fences every
partition's id too, when it starts the connector and before its query starts (:func:`transactional_ids`, through
its claim of the offsets in :mod:`connect_spark.storage.owner`): executors still running for a worker that lost
the connector cannot commit from then on. So at any time only the newest attempt of a partition can commit,
and each commit is one transaction holding

1. the ``connect-offsets`` record of the partition (the same key, value and partition as
   :class:`connect_spark.storage.kafka_offsets.KafkaOffsetStore` writes), and
2. the same offset for the consumer group (``connect-<name>``, ``send_offsets_to_transaction``),

so the offset store and the group change together or not at all. Readers see only committed transactions'
records (the store's reader skips aborted ones; its end offsets wait for open transactions).

What a commit holds is only ever what ``pre_commit`` returned (:meth:`WorkerSinkTask.commit_offsets` steps 3–7):
a fenced or stale attempt can at worst fail to commit, never commit ahead of what its own sink made safe.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.storage.offsets import OffsetStoreError, encode_key, encode_value

__all__ = ["FencedCommitter", "CommitFenced", "transactional_id", "transactional_ids", "group_offset"]

log = logging.getLogger(__name__)

#: Back-off of the producer's retried requests. kafka-python's 100 ms default made each commit ~220 ms (a
#: transaction started right after the previous one ended is told CONCURRENT_TRANSACTIONS until its markers are
#: written, and waits the back-off); 5 ms: 15–30 ms a commit on a local broker.
PRODUCER_RETRY_BACKOFF_MS = 5


class CommitFenced(ConnectException):
    """A newer attempt of the same partition's task took over the partition's commits: this attempt must stop."""


def transactional_id(connector: str, tp: TopicPartition) -> str:
    """The transactional id every attempt of ``tp``'s task commits under."""
    return f"connect-spark-{connector}-{tp.topic}-{tp.partition}"


def transactional_ids(connector: str, partitions: Iterable[TopicPartition]) -> list[str]:
    """The transactional ids of ``partitions``' commits: the connector's runner has them fenced when it starts
    (before its query), so that executors still running for an earlier owner cannot commit any more."""
    return [transactional_id(connector, tp) for tp in sorted(partitions)]


class FencedCommitter:
    """The commits of one attempt of one partition's task (see the module docstring).

    Args:
        connector: the connector's name (the offset records' key).
        tp: the partition.
        offsets_topic: the worker's ``offset.storage.topic``.
        group_id: the connector's consumer group (``connect-<name>``).
        client_kwargs: kafka-python settings (bootstrap servers, security) for the producer.
        timeout_s: how long creating the producer and each commit may take.
    """

    def __init__(self, connector: str, tp: TopicPartition, offsets_topic: str, group_id: str,
                 client_kwargs: Mapping[str, Any], timeout_s: float = 30.0) -> None:
        self.connector, self.tp = connector, tp
        self.offsets_topic, self.group_id = offsets_topic, group_id
        self.client_kwargs = dict(client_kwargs)
        self.timeout_s = timeout_s
        self.fenced = False
        self._producer: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._init, name=f"commits-{tp.topic}-{tp.partition}", daemon=True).start()

    def _init(self) -> None:
        """Create the transactional producer and fence older attempts (a thread of its own, so that the
        attempt's first records are put meanwhile)."""
        from kafka import KafkaProducer
        from kafka.partitioner import DefaultPartitioner

        try:
            producer = KafkaProducer(**{
                **self.client_kwargs,
                "client_id": f"{transactional_id(self.connector, self.tp)}-commits",
                "transactional_id": transactional_id(self.connector, self.tp),
                "acks": "all",
                "linger_ms": 0,
                "retry_backoff_ms": PRODUCER_RETRY_BACKOFF_MS,
                "max_block_ms": int(self.timeout_s * 1000),
                "partitioner": DefaultPartitioner(),  # Kafka Connect's partition for the key
            })
            producer.init_transactions()
            self._producer = producer
        except BaseException as e:
            self._error = e
        finally:
            self._ready.set()

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` (this partition's only) in one transaction: ``connect-offsets`` and the group.

        Raises:
            CommitFenced: a newer attempt fenced this one (nothing was committed).
            OffsetStoreError: the commit failed otherwise (the transaction was aborted; the caller retries with
                its next commit).
        """
        from kafka.errors import KafkaError, ProducerFencedError
        from kafka.structs import OffsetAndMetadata
        from kafka.structs import TopicPartition as KafkaTopicPartition

        if self.fenced:
            raise CommitFenced(f"{offsets_text(offsets)}: a newer attempt of this partition's task commits it")
        producer = self._wait_for_producer()
        try:
            producer.begin_transaction()
            for tp, offset in offsets.items():
                producer.send(self.offsets_topic, key=encode_key(self.connector, tp), value=encode_value(offset))
            producer.send_offsets_to_transaction(
                {KafkaTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(int(offset), "", -1)
                 for tp, offset in offsets.items()}, self.group_id)
            producer.commit_transaction()
        except ProducerFencedError as e:
            self.fenced = True
            raise CommitFenced(f"Commit of {offsets_text(offsets)} fenced: a newer attempt of this partition's task "
                               f"initialised {transactional_id(self.connector, self.tp)}") from e
        except KafkaError as e:
            self._abort()
            raise OffsetStoreError(f"Committing {offsets_text(offsets)} of {self.connector} failed: {e!r}") from e
        log.debug("%s: committed %s", self.connector, offsets_text(offsets))

    def _wait_for_producer(self) -> Any:
        if not self._ready.wait(self.timeout_s):
            raise OffsetStoreError(f"{transactional_id(self.connector, self.tp)}: no transactional producer after "
                                   f"{self.timeout_s:.0f} s")
        if self._error is not None:
            from kafka.errors import ProducerFencedError

            if isinstance(self._error, ProducerFencedError):
                self.fenced = True
                raise CommitFenced(f"{transactional_id(self.connector, self.tp)} was fenced while starting")
            raise OffsetStoreError(f"{transactional_id(self.connector, self.tp)}: cannot start the transactional "
                                   f"producer: {self._error!r}") from self._error
        return self._producer

    def _abort(self) -> None:
        try:
            self._producer.abort_transaction()
        except Exception as e:  # an abortable state may already be fatal; the next init aborts it anyway
            log.debug("%s: abort after a failed commit raised %r", self.connector, e)

    def close(self) -> None:
        """Close the producer (at the end of the attempt). Never raises."""
        self._ready.wait(self.timeout_s)
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=5)
            except Exception as e:
                log.debug("%s: closing the commit producer raised %r", self.connector, e)


def group_offset(client_kwargs: Mapping[str, Any], group_id: str, tp: TopicPartition) -> int | None:
    """The consumer group's committed offset of ``tp`` (what the newest committed transaction left), or None.

    Called by a partition's task when an attempt receives its first record, to learn where the partition is
    committed: the batch before may have ended with ``pre_commit`` behind what it read.
    """
    from kafka.errors import KafkaError
    from kafka.structs import TopicPartition as KafkaTopicPartition

    kafka_tp = KafkaTopicPartition(tp.topic, tp.partition)
    try:
        answer = _admin(client_kwargs).list_group_offsets({group_id: [kafka_tp]})
    except KafkaError as e:  # no group yet, or the coordinator is moving: the caller falls back
        log.info("Cannot read the offset of %s[%d] in group %s (%r)", tp.topic, tp.partition, group_id, e)
        return None
    committed = answer.get(group_id, {}).get(kafka_tp)
    if committed is None or committed.offset is None or committed.offset < 0:
        return None
    return int(committed.offset)


_ADMINS: dict[str, Any] = {}
_ADMINS_LOCK = threading.Lock()


def _admin(client_kwargs: Mapping[str, Any]) -> Any:
    """One admin client per Python worker and cluster, kept across attempts (the worker is reused)."""
    from kafka import KafkaAdminClient

    key = repr(sorted((k, str(v)) for k, v in client_kwargs.items()))
    with _ADMINS_LOCK:
        if key not in _ADMINS:
            _ADMINS[key] = KafkaAdminClient(**{**client_kwargs, "client_id": "connect-spark-realtime-admin"})
        return _ADMINS[key]
