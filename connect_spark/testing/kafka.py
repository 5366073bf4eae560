"""Small helpers around kafka-python for tests and demos: create topics, produce, read end offsets."""

from __future__ import annotations

import time
from typing import Iterable, Sequence

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.records import TopicPartition

__all__ = ["create_topic", "produce", "fill_topic", "end_offsets", "topic_end_offsets", "wait_for_topic",
           "read_topic", "answer_epoch_bumps_late"]

Record = tuple  # (key: bytes|None, value: bytes|None, headers: list[tuple[str, bytes]]) or with partition


def create_topic(bootstrap_servers: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create a topic (replication factor 1) unless it exists, and wait until its leaders are known."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="connect-spark-test-admin")
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    wait_for_topic(bootstrap_servers, name, partitions)


def wait_for_topic(bootstrap_servers: str, name: str, partitions: int, timeout: float = 30.0) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = consumer.partitions_for_topic(name)
            if found and len(found) >= partitions:
                return
            time.sleep(0.2)
        raise TimeoutError(f"Topic {name} did not get {partitions} partitions within {timeout} s")
    finally:
        consumer.close()


def produce(
    bootstrap_servers: str,
    topic: str,
    records: Iterable[Sequence],
    linger_ms: int = 20,
) -> int:
    """Produce ``(partition, key, value, headers[, timestamp_ms])`` tuples; returns how many were sent.

    ``partition`` may be ``None`` (the key decides). Blocks until every record is acknowledged.
    """
    producer = KafkaProducer(
        bootstrap_servers=bootstrap_servers,
        linger_ms=linger_ms,
        batch_size=256 * 1024,
        acks="all",
        max_request_size=4 * 1024 * 1024,
    )
    count = 0
    try:
        for record in records:
            partition, key, value, headers = record[:4]
            timestamp = record[4] if len(record) > 4 else None
            producer.send(topic, key=key, value=value, headers=list(headers or []), partition=partition,
                          timestamp_ms=timestamp)
            count += 1
        producer.flush()
    finally:
        producer.close()
    return count


def fill_topic(bootstrap_servers: str, topic: str, count: int, partitions: int, start: int = 0,
               headers: bool = True) -> int:
    """Create ``topic`` with ``partitions`` partitions (unless it exists) and produce records ``start`` to
    ``start + count - 1``: record ``i`` goes to partition ``i % partitions`` with key ``k<i>``, value
    ``v<i>``, header ``h=<i>`` (none when ``headers`` is false) and timestamp ``1_700_000_000_000 + i``.
    Returns how many were produced."""
    create_topic(bootstrap_servers, topic, partitions)
    return produce(bootstrap_servers, topic, (
        (i % partitions, f"k{i}".encode(), f"v{i}".encode(), [("h", f"{i}".encode())] if headers else [],
         1_700_000_000_000 + i)
        for i in range(start, start + count)
    ))


def topic_end_offsets(bootstrap_servers: str, topic: str) -> dict[TopicPartition, int]:
    """:func:`end_offsets` keyed by :class:`~connect_spark.api.TopicPartition`: what a connector that drained
    ``topic`` has committed."""
    return {TopicPartition(topic, p): off for p, off in end_offsets(bootstrap_servers, topic).items()}


def end_offsets(bootstrap_servers: str, topic: str) -> dict[int, int]:
    """The log-end offset of every partition of ``topic`` (the next offset to be written)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        tps = [KafkaTopicPartition(topic, p) for p in sorted(partitions)]
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def read_topic(bootstrap_servers: str, topic: str, timeout: float = 30.0, committed_only: bool = False) -> list:
    """Every record of every partition of ``topic`` up to its current end offsets (kafka-python records).

    ``committed_only``: read ``read_committed``, skipping the records of aborted transactions (what the
    offset store applies); otherwise every record written, aborted ones too. Returns an empty list when the
    topic does not exist.
    """
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None,
                             fetch_max_bytes=16 * 1024 * 1024, max_partition_fetch_bytes=8 * 1024 * 1024,
                             isolation_level="read_committed" if committed_only else "read_uncommitted")
    try:
        partitions = [KafkaTopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        if not partitions:
            return []
        ends = consumer.end_offsets(partitions)
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: list = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in partitions) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def answer_epoch_bumps_late(monkeypatch, seconds: float = 1.5) -> None:
    """Make kafka-python take in the answer to a producer's epoch bump ``seconds`` late, as on a busy machine; its
    other producer-id answers are taken in at once. For tests: ``monkeypatch`` (pytest's) undoes it."""
    from kafka.producer import transaction_manager

    answer = transaction_manager.InitProducerIdHandler.on_complete

    def late_bump_answer(self, correlation_id, response):
        if self._is_epoch_bump:
            time.sleep(seconds)
        return answer(self, correlation_id, response)

    monkeypatch.setattr(transaction_manager.InitProducerIdHandler, "on_complete", late_bump_answer)
