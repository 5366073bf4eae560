"""Committed offsets of sink connectors: the store interface and the record format it persists.

The committed offset of a topic-partition is the next offset a connector's tasks have to read: what the
tasks' ``pre_commit`` returned, so everything before it is safe in the sink. The runtime reads a
connector's committed offsets when the connector starts (to recover a missing Spark checkpoint and to
re-deliver what was polled but not committed) and writes them after every commit, once ``pre_commit``
has returned; the REST API reads and alters them (KIP-875).

Two implementations, chosen by the worker configuration:

* :class:`~connect_spark.storage.kafka_offsets.KafkaOffsetStore`: the compacted ``offset.storage.topic``
  (default ``connect-offsets``), also mirrored to the consumer group ``connect-<connector>``.
* :class:`~connect_spark.storage.file_offsets.FileOffsetStore`: one JSON file
  (``offset.storage.file.filename``) for a standalone worker that keeps no state in Kafka.

Both persist Kafka Connect's KIP-875 shapes for sink offsets, as compact JSON::

    key   ["<connector>",{"kafka_topic":"<topic>","kafka_partition":<partition>}]
    value {"kafka_offset":<next offset>}            (null resets the partition)

so that tools which read ``connect-offsets`` understand them. Integers given as strings (``"10"``) are
accepted on reading, as Kafka Connect's REST API accepts them.
"""

from __future__ import annotations

import abc
import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition

if TYPE_CHECKING:  # imported lazily below so that the file store does not need a Kafka client
    from connect_spark.storage.file_offsets import FileOffsetStore
    from connect_spark.storage.kafka_offsets import KafkaOffsetStore

__all__ = [
    "OffsetStore",
    "KafkaOffsetStore",
    "FileOffsetStore",
    "OffsetStoreError",
    "OffsetsFenced",
    "OffsetClaim",
    "OffsetRecord",
    "UnexpectedOffsetRecord",
    "consumer_group_id",
    "encode_key",
    "encode_value",
    "decode_record",
    "normalize_offsets",
    "KAFKA_TOPIC_KEY",
    "KAFKA_PARTITION_KEY",
    "KAFKA_OFFSET_KEY",
]

log = logging.getLogger(__name__)

KAFKA_TOPIC_KEY = "kafka_topic"
KAFKA_PARTITION_KEY = "kafka_partition"
KAFKA_OFFSET_KEY = "kafka_offset"


class OffsetStoreError(ConnectException):
    """Offsets could not be read or written, or were given in a form that cannot be stored."""


class OffsetsFenced(OffsetStoreError):
    """Another worker (or a later start in this one) claimed the connector's offsets: this claim may never write
    again, and whatever it was running for the connector must stop."""


def consumer_group_id(connector: str) -> str:
    """The consumer group Kafka Connect uses for a sink connector: ``connect-<connector>``."""
    return f"connect-{connector}"


class OffsetStore(abc.ABC):
    """Where the committed offsets of sink connectors are kept.

    Lifecycle, driven by the worker on the driver: :meth:`start` once before anything else, then any
    number of :meth:`read` and :meth:`write` calls (from the runner's commit step, the start-up of a
    connector and the REST API, possibly from several threads), then :meth:`stop` once. Usable as a
    context manager (``with store: ...``).

    Offsets are the *next* offsets to read, as everywhere in Kafka Connect.
    """

    @abc.abstractmethod
    def start(self) -> None:
        """Create or open what the store needs (clients, the topic, the file). Called once by the worker.

        Raises:
            OffsetStoreError: the store cannot be used (the message says why).
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Release the store's resources. Called once by the worker at shutdown; never raises."""

    @abc.abstractmethod
    def read(self, connector: str) -> dict[TopicPartition, int]:
        """The committed offsets of ``connector``: topic-partition → next offset to read.

        Called when a connector starts and by ``GET /connectors/{name}/offsets``. Partitions that were
        reset (or never committed) are absent. Records of other shapes are skipped with a WARN.

        Raises:
            OffsetStoreError: the offsets cannot be read.
        """

    @abc.abstractmethod
    def write(
        self,
        connector: str,
        offsets: Mapping[TopicPartition, int | None],
        group_id: str | None = None,
    ) -> None:
        """Commit offsets of ``connector``; ``None`` resets (forgets) that partition.

        Called with what the tasks' ``pre_commit`` returned by the runner's
        :class:`~connect_spark.storage.committer.OffsetCommitter` (its writer thread, one write at a time),
        and by ``PATCH``/``DELETE /connectors/{name}/offsets``. Synchronous: when it returns the offsets are
        durable and a following :meth:`read` sees them. Partitions not named keep their offsets.

        Args:
            connector: the connector's name.
            offsets: topic-partition → next offset to read (``>= 0``), or ``None`` to reset it.
            group_id: the consumer group that mirrors the offsets where the store keeps one
                (default ``connect-<connector>``).

        Raises:
            OffsetStoreError: nothing can be assumed committed (an offset is invalid, or the write
                failed); the caller must not advance.
        """

    def claim(self, connector: str, also_fence: Sequence[str] = ()) -> "OffsetClaim":
        """Become the only writer of ``connector``'s offsets; every earlier claim of it is fenced.

        ``also_fence``: more Kafka transactional ids that commit this connector's offsets (real-time mode's,
        one per partition): a store with transactions fences their earlier holders too.

        Called by :class:`~connect_spark.storage.owner.OffsetOwner`, which every worker writes through, when a
        connector starts (before its first read of the committed offsets) and for a one-off write (REST).
        This default claim writes through :meth:`write` and fences nothing: a store that a single process
        uses (the file store) has no other writer to fence.

        Raises:
            OffsetStoreError: the claim cannot be made now.
        """
        return OffsetClaim(self, connector)

    def __enter__(self) -> "OffsetStore":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class OffsetClaim:
    """One claim of one connector's offsets (see :meth:`OffsetStore.claim`); this base writes through the store.

    :meth:`write` is called by the claim's holder (the runner's committer thread, or the herder for a one-off
    write), one write at a time; :meth:`release` once, when the holder is done.
    """

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self.store = store
        self.connector = connector

    def write(self, offsets: Mapping[TopicPartition, int | None], group_id: str | None = None) -> None:
        """Commit ``offsets`` as :meth:`OffsetStore.write` does.

        Raises:
            OffsetsFenced: a later claim of the connector exists; nothing was written, nor will be.
            OffsetStoreError: the write failed; nothing can be assumed committed.
        """
        self.store.write(self.connector, offsets, group_id)

    def release(self) -> None:
        """The holder is done with the claim (never raises)."""


# --------------------------------------------------------------------------------------------------
# The record format
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetRecord:
    """One decoded offset record: ``offset`` is ``None`` for a reset (a tombstone)."""

    connector: str
    partition: TopicPartition
    offset: int | None


class UnexpectedOffsetRecord(ValueError):
    """A stored record is not a sink connector offset; the message says which part is off."""


def _compact_json(value: Any) -> bytes:
    # What Kafka Connect's JsonConverter (schemas.enable=false) writes: no spaces, UTF-8, no \\u escapes.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_key(connector: str, partition: TopicPartition) -> bytes:
    """``["<connector>",{"kafka_topic":"<t>","kafka_partition":<p>}]`` as bytes.

    The same connector and partition always give the same bytes, which keeps compaction and the
    producer's key hashing consistent across writes.
    """
    return _compact_json([connector, {KAFKA_TOPIC_KEY: partition.topic, KAFKA_PARTITION_KEY: partition.partition}])


def encode_value(offset: int | None) -> bytes | None:
    """``{"kafka_offset":<o>}`` as bytes, or ``None`` (a tombstone) for a reset."""
    return None if offset is None else _compact_json({KAFKA_OFFSET_KEY: offset})


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _as_int(value: Any, what: str) -> int:
    """An int given as a JSON number or a string of digits (KIP-875 accepts both); not a bool or float."""
    if isinstance(value, bool):
        raise UnexpectedOffsetRecord(f"{what} is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    raise UnexpectedOffsetRecord(f"{what} is not an integer: {type(value).__name__}")


def decode_key(data: Any) -> tuple[str, TopicPartition]:
    """The connector and partition of a decoded key (a JSON value, not bytes).

    Raises:
        UnexpectedOffsetRecord: not ``["<connector>", {"kafka_topic": ..., "kafka_partition": ...}]``.
    """
    if not isinstance(data, list):
        raise UnexpectedOffsetRecord(f"key is a {type(data).__name__}, not a [connector, partition] list")
    if len(data) != 2:
        raise UnexpectedOffsetRecord(f"key has {len(data)} elements, not 2")
    connector, partition = data
    if not isinstance(connector, str):
        raise UnexpectedOffsetRecord(f"the key's first element is a {type(connector).__name__}, not a string")
    if not isinstance(partition, dict):
        raise UnexpectedOffsetRecord(f"the key's second element is a {type(partition).__name__}, not an object")
    if KAFKA_TOPIC_KEY not in partition or KAFKA_PARTITION_KEY not in partition:
        raise UnexpectedOffsetRecord(
            f"the key's partition has no {KAFKA_TOPIC_KEY!r} and {KAFKA_PARTITION_KEY!r} "
            f"(keys: {', '.join(sorted(map(str, partition))) or 'none'}); not a sink connector's offset")
    topic = partition[KAFKA_TOPIC_KEY]
    if not isinstance(topic, str) or not topic:
        raise UnexpectedOffsetRecord(f"{KAFKA_TOPIC_KEY} is not a topic name")
    number = _as_int(partition[KAFKA_PARTITION_KEY], KAFKA_PARTITION_KEY)
    if number < 0:
        raise UnexpectedOffsetRecord(f"{KAFKA_PARTITION_KEY} is negative")
    return connector, TopicPartition(topic, number)


def decode_value(data: Any) -> int | None:
    """The offset of a decoded value (a JSON value, not bytes); ``None`` for a reset.

    Raises:
        UnexpectedOffsetRecord: neither ``null`` nor ``{"kafka_offset": <integer >= 0>}``.
    """
    if data is None:
        return None
    if not isinstance(data, dict):
        raise UnexpectedOffsetRecord(f"value is a {type(data).__name__}, not an object")
    if KAFKA_OFFSET_KEY not in data:
        raise UnexpectedOffsetRecord(f"value has no {KAFKA_OFFSET_KEY!r}")
    raw = data[KAFKA_OFFSET_KEY]
    if raw is None:
        return None
    offset = _as_int(raw, KAFKA_OFFSET_KEY)
    if offset < 0:
        raise UnexpectedOffsetRecord(f"{KAFKA_OFFSET_KEY} is negative")
    return offset


def _parse_json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UnexpectedOffsetRecord(f"{what} is not JSON") from None


def decode_record(key: bytes | None, value: bytes | None) -> OffsetRecord:
    """Decode a raw ``connect-offsets`` record.

    Raises:
        UnexpectedOffsetRecord: the record is not a sink connector offset (for example a source
            connector's offset, whose partition map has other keys).
    """
    if key is None:
        raise UnexpectedOffsetRecord("key is null")
    connector, partition = decode_key(_parse_json(key, "key"))
    offset = None if value is None else decode_value(_parse_json(value, "value"))
    return OffsetRecord(connector, partition, offset)


def normalize_offsets(
    connector: str, offsets: Mapping[TopicPartition, int | None]
) -> dict[TopicPartition, int | None]:
    """Check what a caller asked to write, and return it keyed by :class:`TopicPartition`.

    Plain ``(topic, partition)`` tuples (and kafka-python's ``TopicPartition``) are accepted as keys.

    Raises:
        OffsetStoreError: the connector name is empty, a key is not a topic-partition, or an offset is
            not ``None`` or an integer ``>= 0``.
    """
    if not isinstance(connector, str) or not connector:
        raise OffsetStoreError(f"A connector name is needed to store offsets, got {connector!r}")
    normalized: dict[TopicPartition, int | None] = {}
    for key, offset in offsets.items():
        try:
            topic, number = key
        except (TypeError, ValueError):
            raise OffsetStoreError(f"Offsets of {connector} must be keyed by topic-partition, got {key!r}") from None
        if not isinstance(topic, str) or not topic or isinstance(number, bool) or not isinstance(number, int) \
                or number < 0:
            raise OffsetStoreError(f"Offsets of {connector}: {key!r} is not a valid topic-partition")
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise OffsetStoreError(
                f"Offsets of {connector}: the offset of {topic}[{number}] must be an integer >= 0 or None "
                f"(a reset), got {offset!r}")
        normalized[TopicPartition(topic, number)] = offset
    return normalized


