"""Sink connector offsets in the compacted ``offset.storage.topic``, mirrored to ``connect-<connector>``.

Kafka Connect keeps the committed offsets of sink connectors only in their consumer group. connect_spark
cannot: Spark's Kafka source reads with its own generated group ids and never commits, so the offsets
``pre_commit`` returned are written by the driver here, with the shapes and partitioning Kafka Connect's
``KafkaOffsetBackingStore`` uses for the same topic (see :mod:`connect_spark.storage.offsets`), and copied
to the consumer group Kafka Connect would have used, for lag tools and ``kafka-consumer-groups``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from kafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoError,
    NotCoordinatorError,
    RequestTimedOutError,
)
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.records import TopicPartition, offsets_text, position_text
from connect_spark.kafka.compacted_log import CompactedTopicLog
from connect_spark.kafka.errors import KafkaStoreError
from connect_spark.storage.offsets import (
    OffsetStore,
    OffsetStoreError,
    UnexpectedOffsetRecord,
    consumer_group_id,
    decode_record,
    encode_key,
    encode_value,
    normalize_offsets,
)

if TYPE_CHECKING:
    from connect_spark.storage.transactional_offsets import TransactionalClaim

__all__ = ["KafkaOffsetStore"]

log = logging.getLogger(__name__)

_FOREIGN_RECORD_WARNINGS = 10  # per store: a topic shared with source connectors must not flood the log
_GROUP_COMMIT_TIMEOUT_S = 5.0  # bounds how long a commit waits for a moving group coordinator
_GROUP_COMMIT_BACKOFF_S = 0.2
# Errors of a group commit that go away by themselves (the coordinator is moving or loading, the
# connection dropped). kafka-python marks more errors retriable, UNKNOWN_TOPIC_OR_PARTITION among them,
# which a broker returns for a commit to a deleted topic for ever: those are not retried.
_TRANSIENT_GROUP_ERRORS = (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RequestTimedOutError,
)


class KafkaOffsetStore(OffsetStore):
    """Committed sink offsets in a compacted Kafka topic (Kafka Connect's ``offset.storage.topic``).

    The worker creates one per process and shares it between connectors. :meth:`start` starts the
    topic's clients (:class:`~connect_spark.kafka.compacted_log.CompactedTopicLog`, shared with the status
    and config stores: the topic created compacted when missing, ``replication_factor`` lowered with a
    WARN to the number of brokers when the cluster has fewer; a producer, an admin client and a consumer
    that reads the whole topic once and then follows it). :meth:`stop` closes them.

    Records are keyed ``["<connector>",{"kafka_topic":"<t>","kafka_partition":<p>}]`` with the value
    ``{"kafka_offset":<o>}`` or a tombstone for a reset, and go to the partition the Java client's
    default partitioner picks for the key bytes (murmur2), as Kafka Connect's ``KafkaBasedLog`` sends
    them, so Kafka Connect tooling and this store agree on where a key lives. Records of other shapes
    (a source connector's offsets when the topic is shared with a Kafka Connect cluster, garbage) are
    skipped: the first ten per store with a WARN each, later ones at DEBUG.

    Workers write through claims (:meth:`claim`, made by :class:`~connect_spark.storage.owner.OffsetOwner`):
    one transaction per write, fenced by the broker. :meth:`write` is the store's own unfenced write, for
    tools that run no connector.

    The topic is the source of truth. :meth:`write` also commits the same offsets to the consumer group
    (``connect-<connector>`` unless told otherwise) through the admin client, which is legal because
    that group has no members; a failure there is logged as a WARN and does not fail the write, since
    only lag tooling reads the group.

    Args:
        bootstrap_servers: ``host:port[,host:port...]`` of the Kafka cluster.
        topic: the offsets topic (``offset.storage.topic``).
        partitions: partitions of the topic when it is created (``offset.storage.partitions``).
        replication_factor: replication factor when it is created (``offset.storage.replication.factor``);
            -1 for the broker's default.
        client_config: Kafka client settings (``security.protocol``, ``sasl.*``, ``ssl.*`` ...), translated
            by :func:`~connect_spark.kafka.kafka_client_kwargs`.
        timeout_s: how long :meth:`read` may take to catch up and :meth:`write` to be acknowledged.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str = "connect-offsets",
        partitions: int = 25,
        replication_factor: int = 3,
        client_config: Mapping[str, Any] | None = None,
        *,
        timeout_s: float = 60.0,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s
        self._log = CompactedTopicLog(
            bootstrap_servers, topic, partitions, replication_factor, client_config, self._apply,
            config_key="offset.storage.topic", client_name="offsets", what=f"the offsets topic {topic}",
            timeout_s=timeout_s,
        )
        # connector → topic-partition → next offset, as far as the reader has consumed the topic
        self._offsets: dict[str, dict[TopicPartition, int]] = {}
        self._foreign_records = 0
        self._read_lock = threading.Lock()
        self._group_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the topic if missing, make the clients and read the topic to its end.

        Raises:
            ConfigException: the existing topic is not compacted.
            OffsetStoreError: the cluster cannot be reached, or the topic cannot be created or read.
        """
        if self._log.started:
            return
        try:
            count = self._log.start()
        except (KafkaError, KafkaStoreError) as e:
            raise OffsetStoreError(
                f"Cannot use the offsets topic {self.topic} at {self.bootstrap_servers}: {e}") from e
        log.info("Offset store on topic %s started: %d record(s) read, offsets of %d connector(s)",
                 self.topic, count, len(self._offsets))

    def stop(self) -> None:
        """Close the consumer, the producer (after sending what is pending) and the admin client."""
        self._log.stop()
        with self._read_lock:
            self._offsets = {}
            self._foreign_records = 0

    # -- reading ---------------------------------------------------------------------------------

    def read(self, connector: str) -> dict[TopicPartition, int]:
        """Read the topic to its current end and return the offsets of ``connector``.

        The whole topic is read once in :meth:`start`; each call then consumes only what was written
        since, by this process or any other. See :class:`OffsetStore`.
        """
        if not self._log.started:
            raise OffsetStoreError(f"The offset store on topic {self.topic} is not started")
        with self._read_lock:
            try:
                self._log.read_to_end()
            except (KafkaError, KafkaStoreError) as e:
                raise OffsetStoreError(f"Cannot read the offsets topic {self.topic}: {e}") from e
            return dict(sorted(self._offsets.get(connector, {}).items()))

    def _apply(self, record: Any) -> None:
        """Fold one consumed record into the in-memory view (called by the reader, in topic order)."""
        try:
            decoded = decode_record(record.key, record.value)
        except UnexpectedOffsetRecord as e:
            self._foreign_records += 1
            level = logging.WARNING if self._foreign_records <= _FOREIGN_RECORD_WARNINGS else logging.DEBUG
            log.log(level, "Skipping record %s of the offsets topic: %s%s",
                    position_text(record.topic, record.partition, record.offset), e,
                    "; further skipped records are logged at DEBUG"
                    if self._foreign_records == _FOREIGN_RECORD_WARNINGS else "")
            return
        if decoded.offset is None:
            connector = self._offsets.get(decoded.connector)
            if connector is not None:
                connector.pop(decoded.partition, None)
                if not connector:
                    del self._offsets[decoded.connector]
        else:
            self._offsets.setdefault(decoded.connector, {})[decoded.partition] = decoded.offset

    # -- writing ---------------------------------------------------------------------------------

    def write(
        self,
        connector: str,
        offsets: Mapping[TopicPartition, int | None],
        group_id: str | None = None,
    ) -> None:
        """Commit ``offsets`` of ``connector``: to the topic (durably), then to the consumer group.

        Steps:

        1. Check the offsets (:func:`~connect_spark.storage.offsets.normalize_offsets`).
        2. Send one record per topic-partition (a tombstone for ``None``) and flush the producer.
        3. Wait until every record is acknowledged by all in-sync replicas; any failure raises
           :class:`OffsetStoreError` and the commit must be treated as not done.
        4. Commit the same offsets to ``group_id`` (default ``connect-<connector>``) with the admin
           client, deleting the group's offsets of reset partitions. A moving or loading group
           coordinator is waited for up to 5 s; what still fails (that too, a group with active
           members, a deleted topic) is logged as a WARN and the write succeeds anyway.
        """
        changes = normalize_offsets(connector, offsets)
        if not changes:
            return
        producer = self._log.producer
        if producer is None:
            raise OffsetStoreError(f"The offset store on topic {self.topic} is not started")

        deadline = time.monotonic() + self.timeout_s
        sent = []
        try:
            for tp, offset in sorted(changes.items()):
                future = producer.send(self.topic, key=encode_key(connector, tp), value=encode_value(offset))
                sent.append((tp, offset, future))
            producer.flush(timeout=max(deadline - time.monotonic(), 0.001))
            written = []
            for tp, offset, future in sent:
                metadata = future.get(timeout=max(deadline - time.monotonic(), 0.001))
                written.append(f"{offsets_text({tp: offset})} -> "
                               f"{position_text(metadata.topic, metadata.partition, metadata.offset)}")
        except KafkaError as e:
            raise OffsetStoreError(
                f"Committing offsets of {connector} to topic {self.topic} failed ({offsets_text(changes)}): {e}"
            ) from e
        log.debug("Committed offsets of %s: %s", connector, ", ".join(written))
        self.mirror_group(group_id or consumer_group_id(connector), changes)

    def claim(self, connector: str, also_fence: Sequence[str] = ()) -> "TransactionalClaim":
        """A transactional claim of ``connector``'s offsets, opened: every earlier claim is fenced at the broker,
        and so is every earlier holder of the ``also_fence`` ids
        (:mod:`connect_spark.storage.transactional_offsets`). See :meth:`OffsetStore.claim`."""
        from connect_spark.kafka.clients import kafka_client_kwargs
        from connect_spark.storage.transactional_offsets import TransactionalClaim, fence_transactional_ids

        if not self._log.started:
            raise OffsetStoreError(f"The offset store on topic {self.topic} is not started")
        settings = {**kafka_client_kwargs(self._log.client_config), "bootstrap_servers": self.bootstrap_servers}
        claim = TransactionalClaim(self, connector, settings).open()
        try:
            fence_transactional_ids(settings, also_fence, self.timeout_s)
        except BaseException:
            claim.release()
            raise
        return claim

    def mirror_group(self, group_id: str, changes: Mapping[TopicPartition, int | None]) -> None:
        """Mirror ``changes`` into the consumer group; never raises (the topic already has them). Called after
        every committed write, by :meth:`write` and by a claim's write."""
        admin = self._log.admin
        if admin is None:
            return
        to_alter = {KafkaTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "", -1)
                    for tp, offset in changes.items() if offset is not None}
        to_delete = [KafkaTopicPartition(tp.topic, tp.partition) for tp, offset in changes.items() if offset is None]
        failed: dict[KafkaTopicPartition, str] = {}
        deadline = time.monotonic() + min(_GROUP_COMMIT_TIMEOUT_S, self.timeout_s)
        with self._group_lock:
            while to_alter or to_delete:
                try:
                    if to_alter:
                        results = admin.alter_group_offsets(group_id, to_alter)
                        to_alter = {tp: to_alter[tp] for tp in _failed(results, to_alter, failed)}
                    if to_delete:
                        try:
                            results = admin.delete_group_offsets(group_id, to_delete)
                        except GroupIdNotFoundError:
                            results = {}  # no group, so no offsets to delete
                        to_delete = _failed(results, to_delete, failed)
                except KafkaError as e:
                    if not isinstance(e, _TRANSIENT_GROUP_ERRORS) or time.monotonic() >= deadline:
                        log.warning("Could not mirror the offsets of consumer group %s (%s): %s. The offsets are "
                                    "committed in topic %s; only lag tooling is affected",
                                    group_id, offsets_text(changes), e, self.topic)
                        return
                    time.sleep(_GROUP_COMMIT_BACKOFF_S)
                    continue
                if to_alter or to_delete:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(_GROUP_COMMIT_BACKOFF_S)
        for tp in list(to_alter) + list(to_delete):
            failed.setdefault(tp, "timed out")
        if failed:
            reasons = ", ".join(f"{position_text(tp.topic, tp.partition)}: {why}" for tp, why in sorted(failed.items()))
            log.warning("Could not mirror offsets to consumer group %s for %s. The offsets are committed in topic %s; "
                        "only lag tooling is affected", group_id, reasons, self.topic)
        else:
            log.debug("Mirrored offsets to consumer group %s: %s", group_id, offsets_text(changes))


def _failed(
    results: Mapping[Any, Any], asked: Any, failed: dict[KafkaTopicPartition, str]
) -> list[KafkaTopicPartition]:
    """The partitions of ``asked`` to try again; non-retriable per-partition errors go to ``failed``."""
    retry = []
    for tp in asked:
        error = results.get(tp, NoError)
        if error is NoError:
            failed.pop(tp, None)
        elif isinstance(error, type) and issubclass(error, _TRANSIENT_GROUP_ERRORS):
            failed[tp] = error.__name__
            retry.append(tp)
        else:
            failed[tp] = error.__name__
    return retry

