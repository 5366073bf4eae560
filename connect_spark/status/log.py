"""A compacted topic as an append-and-replay log: what the status and config stores are built on.

Kafka Connect's backing stores sit on ``KafkaBasedLog``: write a keyed record, read the topic to its
end, and fold every record into an in-memory view. :class:`KafkaLog` does that on
:class:`~connect_spark.kafka.compacted_log.CompactedTopicLog`, the start-up the offset store shares;
:class:`MemoryLog` keeps the records in a list, for a worker that keeps no state in Kafka and for tests
of the logic above it.

The stores own a log: they call :meth:`start` once, :meth:`send` for each write (synchronous: it
returns once the record is durable and has been folded into the view), :meth:`read_to_end` to catch
up with what other processes wrote, and :meth:`stop` at shutdown.
"""

from __future__ import annotations

import abc
import logging
import threading
from typing import Any, Callable, Mapping

__all__ = ["RecordLog", "KafkaLog", "MemoryLog"]

log = logging.getLogger(__name__)

OnRecord = Callable[[str, "bytes | None"], None]


class RecordLog(abc.ABC):
    """Keyed records, replayed in order to a callback ``on_record(key, value)`` (``value`` ``None``: tombstone)."""

    def __init__(self) -> None:
        self._on_record: OnRecord | None = None

    def bind(self, on_record: OnRecord) -> None:
        """Set the callback; called by the owning store before :meth:`start`."""
        self._on_record = on_record

    def _deliver(self, key: str, value: bytes | None) -> None:
        assert self._on_record is not None, "bind() the log to its store before starting it"
        self._on_record(key, value)

    @abc.abstractmethod
    def start(self) -> int:
        """Open the log and replay what it holds; returns how many records were replayed."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Close the log; never raises."""

    @abc.abstractmethod
    def send(self, records: list[tuple[str, bytes | None]]) -> None:
        """Append ``records`` in order, wait until they are durable, then replay up to them."""

    @abc.abstractmethod
    def read_to_end(self) -> None:
        """Replay what others appended since the last call."""


class MemoryLog(RecordLog):
    """Records kept in this process only; nothing survives it."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, bytes | None]] = []
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()

    def start(self) -> int:
        with self._lock:
            for key, value in self.records:
                self._deliver(key, value)
            return len(self.records)

    def stop(self) -> None:
        pass

    def send(self, records: list[tuple[str, bytes | None]]) -> None:
        with self._lock:
            for key, value in records:
                self.records.append((key, value))
                self._deliver(key, value)

    def read_to_end(self) -> None:
        pass


class KafkaLog(RecordLog):
    """A compacted Kafka topic, through the clients every Kafka-backed store shares
    (:class:`~connect_spark.kafka.compacted_log.CompactedTopicLog`).

    Args:
        bootstrap_servers: the cluster.
        topic: the topic (``status.storage.topic``, ``config.storage.topic``).
        partitions: partitions when it is created.
        replication_factor: replication factor when it is created (-1: the broker's default).
        client_config: Kafka client settings (``security.protocol``, ``sasl.*``, ``ssl.*``).
        config_key: the worker key naming the topic, for messages.
        timeout_s: how long a write or a catch-up may take.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        partitions: int,
        replication_factor: int,
        client_config: Mapping[str, Any] | None = None,
        *,
        config_key: str,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__()
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.config_key = config_key
        self.timeout_s = timeout_s
        self._client_config = dict(client_config or {})
        self._topic_log: Any = None
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()

    def start(self) -> int:
        """Start the topic's clients (:class:`~connect_spark.kafka.compacted_log.CompactedTopicLog`) and
        read it to its end; returns how many records were read."""
        from kafka.errors import KafkaError

        from connect_spark.kafka.compacted_log import CompactedTopicLog
        from connect_spark.kafka.errors import KafkaStoreError

        self._topic_log = CompactedTopicLog(
            self.bootstrap_servers, self.topic, self.partitions, self.replication_factor, self._client_config,
            self._on_consumed, config_key=self.config_key, client_name=self.topic, what=f"topic {self.topic}",
            timeout_s=self.timeout_s,
        )
        try:
            return self._topic_log.start()
        except (KafkaError, KafkaStoreError) as e:
            raise KafkaStoreError(f"Cannot use topic {self.topic} ({self.config_key}) at {self.bootstrap_servers}: {e}") from e

    def _on_consumed(self, record: Any) -> None:
        key = record.key.decode("utf-8") if isinstance(record.key, (bytes, bytearray)) else str(record.key)
        self._deliver(key, record.value)

    def stop(self) -> None:
        if self._topic_log is not None:
            self._topic_log.stop()

    def send(self, records: list[tuple[str, bytes | None]]) -> None:
        from kafka.errors import KafkaError

        from connect_spark.kafka.errors import KafkaStoreError

        producer = self._topic_log.producer if self._topic_log is not None else None
        if producer is None:
            raise KafkaStoreError(f"The store on topic {self.topic} is not started")
        with self._lock:
            try:
                futures = [producer.send(self.topic, key=key.encode("utf-8"), value=value) for key, value in records]
                producer.flush(timeout=self.timeout_s)
                for future in futures:
                    future.get(timeout=self.timeout_s)
            except KafkaError as e:
                raise KafkaStoreError(f"Writing {', '.join(k for k, _ in records)} to topic {self.topic} failed: {e}") from e
        self.read_to_end()

    def read_to_end(self) -> None:
        if self._topic_log is None:
            from connect_spark.kafka.errors import KafkaStoreError

            raise KafkaStoreError(f"The store on topic {self.topic} is not started")
        with self._read_lock:  # the herder's writes and a distributed worker's group thread both read
            self._topic_log.read_to_end()
