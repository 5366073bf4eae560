"""Writes the benchmark's records to Kafka: a one-time pre-fill, and fixed-rate production for latency.

Called by :mod:`jobs.bench.runner` before any arm runs (pre-fill) and during latency runs (fixed rate).
Records go round-robin to the partitions (``partition = id % partitions``), so every partition holds
the same share. :func:`produce_records` writes records another benchmark built itself, to the partitions
it chose (``jobs/bench_cdc.py``: Debezium's change events, partitioned by key).
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from dataclasses import dataclass
from typing import Iterable

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from jobs.bench.records import record_key, record_value

__all__ = ["PrefillResult", "prefill", "produce_records", "produce_at_rate", "read_timestamps"]

log = logging.getLogger(__name__)


@dataclass
class PrefillResult:
    records: int
    payload_bytes: int
    seconds: float


def _producer(bootstrap_servers: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap_servers, linger_ms=20, batch_size=512 * 1024,
                         acks="all")


def _produce_slice(args: tuple[str, str, int, int, int, int, int, bool]) -> int:
    bootstrap_servers, topic, partitions, first, count, step, odd_every, odd_mix = args
    producer = _producer(bootstrap_servers)
    size = 0
    try:
        for i in range(first, first + count * step, step):
            key, value = record_key(i), record_value(i, odd_every=odd_every, odd_mix=odd_mix)
            size += len(key) + len(value)
            producer.send(topic, key=key, value=value, partition=i % partitions)
        producer.flush()
    finally:
        producer.close()
    return size


def prefill(bootstrap_servers: str, topic: str, partitions: int, records: int, start: int = 0,
            processes: int = 2, odd_every: int = 0, odd_mix: bool = False) -> PrefillResult:
    """Produce records ``start .. start+records-1`` to ``topic``; ``processes`` producers in parallel;
    ``odd_every``, ``odd_mix``: see :func:`~jobs.bench.records.record_value`."""
    started = time.monotonic()
    processes = max(1, min(processes, records))
    slices = []
    for p in range(processes):
        count = len(range(start + p, start + records, processes))
        slices.append((bootstrap_servers, topic, partitions, start + p, count, processes, odd_every, odd_mix))
    if processes == 1:
        sizes = [_produce_slice(slices[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            sizes = pool.map(_produce_slice, slices)
    return PrefillResult(records, sum(sizes), time.monotonic() - started)


def produce_records(bootstrap_servers: str, topic: str,
                    records: Iterable[tuple[int, bytes | None, bytes | None]]) -> PrefillResult:
    """Produce ``(partition, key, value)`` records in order (a ``None`` value is a tombstone) with
    confluent-kafka's C client (the ``test`` extra), ~10x faster than kafka-python for large records; every
    record acknowledged by the broker before it returns."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 20, "acks": "all",
                         "batch.size": 1024 * 1024, "queue.buffering.max.messages": 200_000,
                         "queue.buffering.max.kbytes": 512 * 1024})
    failures: list[str] = []

    def delivered(error, _message) -> None:
        if error is not None:
            failures.append(str(error))

    started = time.monotonic()
    count = size = 0
    for partition, key, value in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
        count += 1
        size += len(key or b"") + len(value or b"")
    if producer.flush(300) or failures:
        raise RuntimeError(f"records for {topic} were not all delivered ({failures[:3]})")
    return PrefillResult(count, size, time.monotonic() - started)


def produce_at_rate(bootstrap_servers: str, topic: str, partitions: int, rate: int, seconds: float,
                    start: int) -> int:
    """Produce ``rate`` records/s for ``seconds``, ids from ``start``; each record's Kafka timestamp is
    its send time (the start of its end-to-end latency). Returns how many were produced."""
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, linger_ms=5, acks="all")
    sent = 0
    began = time.monotonic()
    try:
        while True:
            elapsed = time.monotonic() - began
            if elapsed >= seconds:
                break
            due = min(int(elapsed * rate) + 1, int(seconds * rate))
            while sent < due:
                i = start + sent
                now_ms = int(time.time() * 1000)
                producer.send(topic, key=record_key(i), value=record_value(i, now_ms - i),
                              partition=i % partitions, timestamp_ms=now_ms)
                sent += 1
            time.sleep(0.002)
        producer.flush()
    finally:
        producer.close()
    achieved = sent / max(time.monotonic() - began, 1e-9)
    if achieved < 0.9 * rate:
        log.warning("produced %d records at %.0f/s, below the asked %d/s", sent, achieved, rate)
    return sent


def read_timestamps(bootstrap_servers: str, topic: str, partitions: int,
                    from_offsets: dict[int, int]) -> dict[int, list[tuple[int, int]]]:
    """Every record's ``(offset, timestamp_ms)`` per partition, from ``from_offsets`` to the end."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                             max_poll_records=5000, fetch_max_bytes=32 * 1024 * 1024)
    tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    try:
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, from_offsets.get(tp.partition, 0))
        found: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        remaining = {tp for tp in tps if consumer.position(tp) < ends[tp]}
        deadline = time.monotonic() + 120
        while remaining and time.monotonic() < deadline:
            for tp, batch in consumer.poll(timeout_ms=1000).items():
                found[tp.partition].extend((r.offset, r.timestamp) for r in batch)
            remaining = {tp for tp in remaining if consumer.position(tp) < ends[tp]}
        return found
    finally:
        consumer.close()
