"""The clients of one compacted Kafka topic used as a log: what every Kafka-backed store starts with.

Kafka Connect's backing stores (offsets, status, configs) all sit on ``KafkaBasedLog``. Here
:class:`CompactedTopicLog` is that shared base: in :meth:`~CompactedTopicLog.start` it checks the
credentials, creates the topic compacted when missing (or refuses an existing one that is not), makes
an idempotent ``acks=all`` producer that partitions keys as the Java client does (murmur2), an admin
client, and a consumer that reads the whole topic once and then follows it, handing every record to
the owner's callback in topic order. :meth:`~CompactedTopicLog.stop` closes them.

Owned by :class:`connect_spark.storage.kafka_offsets.KafkaOffsetStore` (``offset.storage.topic``) and
:class:`connect_spark.status.log.KafkaLog` (``status.storage.topic``, ``config.storage.topic``); each
owner wraps failures in its own error and writes its own records through :attr:`~CompactedTopicLog.producer`.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.partitioner import DefaultPartitioner

from connect_spark.kafka.authentication import check_authentication
from connect_spark.kafka.clients import accepted_kwargs, close_quietly, kafka_client_kwargs
from connect_spark.kafka.tail_reader import TopicTailReader
from connect_spark.kafka.topics import ensure_topic

__all__ = ["CompactedTopicLog"]

log = logging.getLogger(__name__)


class CompactedTopicLog:
    """A compacted topic's admin client, producer and tail reader (see the module docstring).

    Args:
        bootstrap_servers: the cluster.
        topic: the topic.
        partitions: partitions when it is created.
        replication_factor: replication factor when it is created (-1: the broker's default).
        client_config: Kafka client settings (``security.protocol``, ``sasl.*``, ``ssl.*``), translated by
            :func:`~connect_spark.kafka.kafka_client_kwargs`.
        on_record: called with every consumed record (kafka-python's ``ConsumerRecord``), in topic order.
        config_key: the worker key naming the topic, for messages.
        client_name: the middle of the clients' ids (``<client.id>-<client_name>-admin`` ...).
        what: what the topic is, for the authentication check's messages.
        timeout_s: how long start-up and each catch-up may take.
    """

    def __init__(self, bootstrap_servers: str, topic: str, partitions: int, replication_factor: int,
                 client_config: Mapping[str, Any] | None, on_record: Callable[[Any], None], *,
                 config_key: str, client_name: str, what: str, timeout_s: float) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.client_config = dict(client_config or {})
        self.on_record = on_record
        self.config_key = config_key
        self.client_name = client_name
        self.what = what
        self.timeout_s = timeout_s
        self.admin: KafkaAdminClient | None = None
        self.producer: KafkaProducer | None = None
        self.reader: TopicTailReader | None = None

    @property
    def started(self) -> bool:
        return self.producer is not None

    def start(self) -> int:
        """Make the clients and read the topic to its end; returns how many records were read.

        Raises:
            kafka.errors.KafkaError, connect_spark.kafka.KafkaStoreError: as raised (the
                owner wraps them); the clients made so far are closed first.
            ConfigException: the existing topic is not compacted.
        """
        settings = kafka_client_kwargs(self.client_config)
        common = {**settings, "bootstrap_servers": self.bootstrap_servers,
                  "bootstrap_timeout_ms": int(self.timeout_s * 1000)}
        client_id = f"{settings.get('client_id', 'connect-spark')}-{self.client_name}"
        try:
            check_authentication(self.client_config, self.bootstrap_servers, what=self.what)
            self.admin = KafkaAdminClient(**accepted_kwargs(KafkaAdminClient, {**common, "client_id": f"{client_id}-admin"}))
            ensure_topic(self.admin, self.topic, self.partitions, self.replication_factor, config_key=self.config_key)
            self.producer = KafkaProducer(**accepted_kwargs(KafkaProducer, {
                **common,
                "client_id": f"{client_id}-producer",
                "acks": "all",
                "enable_idempotence": True,
                "linger_ms": 0,
                "max_block_ms": int(self.timeout_s * 1000),  # send() waits for metadata no longer than this
                "allow_auto_create_topics": False,
                "partitioner": DefaultPartitioner(),
            }))
            # read_committed: real-time tasks commit offsets in Kafka transactions (connect_spark.runtime.realtime.
            # commits); the records of an aborted or fenced one are never applied.
            self.reader = TopicTailReader(self.topic, self.on_record, accepted_kwargs(KafkaConsumer, {
                **common, "client_id": f"{client_id}-reader", "isolation_level": "read_committed"}))
            self.reader.start()
            return self.reader.read_to_end(self.timeout_s)
        except BaseException:
            self.stop()
            raise

    def read_to_end(self) -> int:
        """Consume what was written since the last call (by any process), handing it to ``on_record``."""
        reader = self.reader
        if reader is None:
            from connect_spark.kafka.errors import KafkaStoreError

            raise KafkaStoreError(f"The store on topic {self.topic} is not started")
        return reader.read_to_end(self.timeout_s)

    def stop(self) -> None:
        """Close the reader, the producer (after sending what is pending) and the admin client."""
        reader, producer, admin = self.reader, self.producer, self.admin
        self.reader = self.producer = self.admin = None
        close_quietly([reader, producer, admin], f"topic {self.topic}")
