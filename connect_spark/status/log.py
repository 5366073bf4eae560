"""A compacted topic as an append-and-replay log: what the status and config stores are built on.

Kafka Connect's backing stores sit on ``KafkaBasedLog``: write a keyed record, read the topic to its
end, and fold every record into an in-memory view. :class:`KafkaLog` does that with kafka-python (the
topic is created compacted when missing, through :func:`~connect_spark.storage.kafka_util.ensure_topic`);
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
    """A compacted Kafka topic read with :class:`~connect_spark.storage.kafka_util.TopicTailReader`.

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
        self._producer: Any = None
        self._reader: Any = None
        self._admin: Any = None
        self._lock = threading.Lock()

    def start(self) -> int:
        from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
        from kafka.errors import KafkaError
        from kafka.partitioner import DefaultPartitioner

        from connect_spark.storage.kafka_util import (
            KafkaStoreError,
            TopicTailReader,
            accepted_kwargs,
            check_authentication,
            ensure_topic,
            kafka_client_kwargs,
        )

        settings = kafka_client_kwargs(self._client_config)
        common = {**settings, "bootstrap_servers": self.bootstrap_servers,
                  "bootstrap_timeout_ms": int(self.timeout_s * 1000)}
        client_id = f"{settings.get('client_id', 'connect-spark')}-{self.topic}"
        try:
            check_authentication(self._client_config, self.bootstrap_servers, what=f"topic {self.topic}")
            self._admin = KafkaAdminClient(**accepted_kwargs(KafkaAdminClient, {**common, "client_id": f"{client_id}-admin"}))
            ensure_topic(self._admin, self.topic, self.partitions, self.replication_factor, config_key=self.config_key)
            self._producer = KafkaProducer(**accepted_kwargs(KafkaProducer, {
                **common,
                "client_id": f"{client_id}-producer",
                "acks": "all",
                "enable_idempotence": True,
                "linger_ms": 0,
                "max_block_ms": int(self.timeout_s * 1000),
                "allow_auto_create_topics": False,
                "partitioner": DefaultPartitioner(),
            }))
            self._reader = TopicTailReader(self.topic, self._on_consumed, accepted_kwargs(KafkaConsumer, {
                **common, "client_id": f"{client_id}-reader"}))
            self._reader.start()
            return self._reader.read_to_end(self.timeout_s)
        except (KafkaError, KafkaStoreError) as e:
            self.stop()
            raise KafkaStoreError(f"Cannot use topic {self.topic} ({self.config_key}) at {self.bootstrap_servers}: {e}") from e
        except BaseException:
            self.stop()
            raise

    def _on_consumed(self, record: Any) -> None:
        key = record.key.decode("utf-8") if isinstance(record.key, (bytes, bytearray)) else str(record.key)
        self._deliver(key, record.value)

    def stop(self) -> None:
        from connect_spark.storage.kafka_util import close_quietly

        reader, producer, admin = self._reader, self._producer, self._admin
        self._reader = self._producer = self._admin = None
        close_quietly([reader, producer, admin], f"topic {self.topic}")

    def send(self, records: list[tuple[str, bytes | None]]) -> None:
        from kafka.errors import KafkaError

        from connect_spark.storage.kafka_util import KafkaStoreError

        producer = self._producer
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
        reader = self._reader
        if reader is None:
            from connect_spark.storage.kafka_util import KafkaStoreError

            raise KafkaStoreError(f"The store on topic {self.topic} is not started")
        reader.read_to_end(self.timeout_s)
