"""Reading a dead letter topic: each record with the original coordinates its ``__connect.errors.*`` headers give.

Called by :mod:`connect_spark.dlq_replay.replay`, which reads the topic in chunks. A dead letter keeps
the failed record's key, value, timestamp and headers (the dead letter queue reporter copies them), followed by the context headers
(``errors.deadletterqueue.context.headers.enable=true``, required for a replay: without them the
original topic, partition and offset are unknown). ``__connect.replay.count`` counts how many times a
record was already replayed (the loop guard).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.runtime.errors.dead_letter_queue import (
    ERROR_HEADER_EXCEPTION,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
    HEADER_PREFIX,
)

__all__ = ["DeadLetter", "LetterFilter", "end_offsets", "read_chunks", "superseded_letters", "REPLAY_COUNT_HEADER"]

REPLAY_COUNT_HEADER = "__connect.replay.count"
"""Header a replayed record carries: how many times it has been replayed (1 on the first replay)."""


@dataclass
class DeadLetter:
    """One record of the dead letter topic, with what its headers say about the failure."""

    dlq_partition: int
    dlq_offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: list[tuple[str, bytes | None]]  # the original record's headers (no context headers)
    topic: str | None
    partition: int | None
    offset: int | None
    stage: str
    error_class: str
    replays: int = 0
    context: dict[str, str] = field(default_factory=dict)

    @property
    def restorable(self) -> bool:
        """Whether the original coordinates are known (the context headers were written)."""
        return self.topic is not None and self.partition is not None and self.offset is not None


@dataclass(frozen=True)
class LetterFilter:
    """Which dead letters to replay: every criterion given must match (``None``: any)."""

    error_class: str | None = None  # exact class name, or its last part (``DataException``)
    stage: str | None = None  # TRANSFORMATION, VALUE_CONVERTER, TASK_PUT, ...
    topic: str | None = None  # the original topic
    since_ms: int | None = None  # dead letter timestamp >= since_ms
    until_ms: int | None = None  # dead letter timestamp < until_ms

    def matches(self, letter: DeadLetter) -> bool:
        if self.error_class and self.error_class not in (letter.error_class, letter.error_class.rsplit(".", 1)[-1]):
            return False
        if self.stage and self.stage.upper() != letter.stage.upper():
            return False
        if self.topic and self.topic != letter.topic:
            return False
        if self.since_ms is not None and letter.timestamp_ms < self.since_ms:
            return False
        return self.until_ms is None or letter.timestamp_ms < self.until_ms


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="replace")


def to_letter(record: Any) -> DeadLetter:
    """A kafka-python ``ConsumerRecord`` of the dead letter topic as a :class:`DeadLetter`."""
    original: list[tuple[str, bytes | None]] = []
    context: dict[str, str] = {}
    replays = 0
    for key, value in record.headers or []:
        if key.startswith(HEADER_PREFIX):
            context[key] = _text(value) or ""
        elif key == REPLAY_COUNT_HEADER:
            replays = int(_text(value) or "0")
        else:
            original.append((key, value))
    partition, offset = context.get(ERROR_HEADER_ORIG_PARTITION), context.get(ERROR_HEADER_ORIG_OFFSET)
    return DeadLetter(
        record.partition, record.offset, record.key, record.value, record.timestamp, original,
        context.get(ERROR_HEADER_ORIG_TOPIC), int(partition) if partition else None, int(offset) if offset else None,
        context.get(ERROR_HEADER_STAGE, "UNKNOWN"), context.get(ERROR_HEADER_EXCEPTION, "unknown"), replays, context)


def end_offsets(consumer_kwargs: Mapping[str, Any], topic: str) -> dict[int, int]:
    """The dead letter topic's current end per partition: where a run stops reading."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, **consumer_kwargs)
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise ConnectException(f"The dead letter queue topic {topic} does not exist or has no partitions")
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in sorted(partitions)])
        return {tp.partition: offset for tp, offset in ends.items()}
    finally:
        consumer.close()


def read_chunks(consumer_kwargs: Mapping[str, Any], topic: str, start: Mapping[int, int], ends: Mapping[int, int],
                chunk_size: int) -> Iterator[list[DeadLetter]]:
    """The dead letters of ``topic`` from ``start`` (partition -> next offset; the beginning when absent) up to
    ``ends``, in lists of at most ``chunk_size``: a list is read only once the caller is done with the one before,
    so no more than one chunk is held at a time."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, max_poll_records=chunk_size,
                             **consumer_kwargs)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(ends)]
        consumer.assign(tps)
        for tp in tps:
            if tp.partition in start:
                consumer.seek(tp, start[tp.partition])
            else:
                consumer.seek_to_beginning(tp)
        chunk: list[DeadLetter] = []
        while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
            for records in consumer.poll(timeout_ms=1000, max_records=chunk_size - len(chunk)).values():
                chunk.extend(to_letter(r) for r in records if r.offset < ends[r.partition])
            if len(chunk) >= chunk_size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk
    finally:
        consumer.close()


def superseded_letters(chunks: Iterable[list[DeadLetter]]) -> set[tuple[int, int]]:
    """The dead letter partition and offset of each letter of ``chunks`` that a newer letter of the same original
    record supersedes: the one replayed most often, then the latest in its dead letter partition, counts (a
    record that failed again in an earlier run comes back with a higher replay count).

    Called by the replay before it delivers anything, over the same letters. Only an index of numbers is kept
    (48 bytes a letter, about 70 while it is sorted), never the letters' keys, values or headers.
    """
    import numpy as np

    topics: dict[str, int] = {}
    columns = [array("q") for _ in range(6)]  # topic id, partition, offset, replays, dlq partition, dlq offset
    for chunk in chunks:
        for x in chunk:
            if x.restorable:
                for column, value in zip(columns, (topics.setdefault(x.topic, len(topics)), x.partition, x.offset,
                                                   x.replays, x.dlq_partition, x.dlq_offset)):
                    column.append(value)  # type: ignore[arg-type]
    if not columns[0]:
        return set()
    topic, partition, offset, replays, dlq_partition, dlq_offset = (np.frombuffer(c, dtype=np.int64) for c in columns)
    order = np.lexsort((dlq_offset, replays, offset, partition, topic))  # the last key sorts first
    same_record_next = np.zeros(len(order), dtype=bool)
    same_record_next[:-1] = ((topic[order][1:] == topic[order][:-1]) & (partition[order][1:] == partition[order][:-1])
                             & (offset[order][1:] == offset[order][:-1]))
    older = order[same_record_next]  # every letter followed by a newer one of its record
    return set(zip(dlq_partition[older].tolist(), dlq_offset[older].tolist()))
