"""Records, headers and topic-partitions: the values the runtime hands to a sink task.

Offsets follow Kafka Connect everywhere: an offset given to ``flush``/``pre_commit``, or returned from
``pre_commit``, is the *next* offset to read (the last processed record's offset + 1).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, NamedTuple

if TYPE_CHECKING:  # the data model is a sibling package; records only refer to its types
    from connect_spark.api.data import Schema

__all__ = [
    "TopicPartition",
    "position_text",
    "offsets_text",
    "TimestampType",
    "Header",
    "Headers",
    "SinkRecord",
    "Offsets",
]


class TopicPartition(NamedTuple):
    """A Kafka topic-partition. Hashable and ordered, so it can key offset maps."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def position_text(topic: str, partition: int, offset: Any = None) -> str:
    """``topic[partition]@offset`` (``topic[partition]`` when ``offset`` is None): how logs and errors name a position."""
    return f"{topic}[{partition}]" if offset is None else f"{topic}[{partition}]@{offset}"


def offsets_text(offsets: "Mapping[TopicPartition, Any]", separator: str = ", ") -> str:
    """``t[0]@10, t[1]@reset`` in partition order, for log lines; an offset of None reads ``reset``."""
    return separator.join(
        position_text(tp.topic, tp.partition, "reset" if offset is None else offset)
        for tp, offset in sorted(offsets.items())
    )


#: Offsets as ``pre_commit`` takes and returns them: topic-partition → next offset to read.
Offsets = dict  # dict[TopicPartition, int]; an alias kept simple for Python 3.10


class TimestampType(enum.Enum):
    """How a record's timestamp was set, as Kafka reports it."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @classmethod
    def from_kafka(cls, code: int | None) -> "TimestampType":
        """Map the integer Kafka (and Spark's ``timestampType`` column) uses to the enum."""
        if code is None:
            return cls.NO_TIMESTAMP_TYPE
        return _TIMESTAMP_TYPES.get(code, cls.NO_TIMESTAMP_TYPE)


_TIMESTAMP_TYPES = {t.value: t for t in TimestampType}


@dataclass(frozen=True, slots=True)
class Header:
    """One record header after the header converter: a key, a schema (may be ``None``) and a value."""

    key: str
    value: Any
    schema: "Schema | None" = None


class Headers:
    """An ordered, mutable list of headers; several headers may share a key, as in Kafka.

    Mirrors ``org.apache.kafka.connect.header.ConnectHeaders`` for what sinks and transforms use.
    """

    __slots__ = ("_items",)

    def __init__(self, headers: Iterable[Header] = ()) -> None:
        self._items: list[Header] = list(headers)

    def add(self, key: str, value: Any, schema: "Schema | None" = None) -> "Headers":
        """Append a header and return ``self`` (chainable, as ``ConnectHeaders.add``)."""
        self._items.append(Header(key, value, schema))
        return self

    def add_header(self, header: Header) -> "Headers":
        self._items.append(header)
        return self

    def last_with_name(self, key: str) -> Header | None:
        """The last header with this key, or ``None``."""
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        return [h for h in self._items if h.key == key]

    def remove(self, key: str) -> "Headers":
        """Remove every header with this key."""
        self._items = [h for h in self._items if h.key != key]
        return self

    def copy(self) -> "Headers":
        return Headers(self._items)

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


@dataclass(slots=True)
class SinkRecord:
    """A record as a sink task receives it: converted, transformed, with its Kafka coordinates.

    ``topic`` and ``kafka_partition`` may have been changed by a transformation (``RegexRouter``);
    ``original_topic``, ``original_kafka_partition`` and ``original_kafka_offset`` always hold the
    coordinates the record was consumed from, and are what offsets must be tracked against
    (``pre_commit`` keys are original topic-partitions).

    ``timestamp`` is milliseconds since the epoch, or ``None`` when Kafka has none.
    """

    topic: str
    kafka_partition: int | None
    key_schema: "Schema | None"
    key: Any
    value_schema: "Schema | None"
    value: Any
    kafka_offset: int
    timestamp: int | None = None
    timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE
    headers: Headers = field(default_factory=Headers)
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    def __post_init__(self) -> None:
        if self.original_topic is None:
            self.original_topic = self.topic
        if self.original_kafka_partition is None:
            self.original_kafka_partition = self.kafka_partition
        if self.original_kafka_offset is None:
            self.original_kafka_offset = self.kafka_offset

    @property
    def original_topic_partition(self) -> TopicPartition:
        """The topic-partition this record was consumed from (what offsets are committed against)."""
        return TopicPartition(self.original_topic, self.original_kafka_partition)  # type: ignore[arg-type]

    def new_record(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: "Schema | None",
        key: Any,
        value_schema: "Schema | None",
        value: Any,
        timestamp: int | None,
        headers: Headers | None = None,
    ) -> "SinkRecord":
        """A copy with new routing, key, value, timestamp and optionally headers.

        As in Kafka Connect, the offset, the timestamp type and the ``original_*`` coordinates are
        kept, and the headers are copied when none are given. Transformations build their output
        with this.
        """
        return SinkRecord(
            topic=topic,
            kafka_partition=kafka_partition,
            key_schema=key_schema,
            key=key,
            value_schema=value_schema,
            value=value,
            kafka_offset=self.kafka_offset,
            timestamp=timestamp,
            timestamp_type=self.timestamp_type,
            headers=self.headers.copy() if headers is None else headers,
            original_topic=self.original_topic,
            original_kafka_partition=self.original_kafka_partition,
            original_kafka_offset=self.original_kafka_offset,
        )

    def coordinates(self) -> str:
        """``topic[partition]@offset`` of the consumed record, the form log lines use."""
        return position_text(self.original_topic, self.original_kafka_partition, self.original_kafka_offset)
