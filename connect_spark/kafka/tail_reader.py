"""Reading every partition of a topic to its current end, without a consumer group."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

from kafka import KafkaConsumer
from kafka.errors import KafkaError
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.records import position_text
from connect_spark.kafka.errors import KafkaStoreError

__all__ = ["TopicTailReader"]

log = logging.getLogger(__name__)


class TopicTailReader:
    """Reads every partition of a (compacted) topic from the beginning, and later from where it stopped.

    Owned by a Kafka-backed store: created and :meth:`start`-ed in the store's ``start``, asked to
    :meth:`read_to_end` whenever the store needs the topic's current contents, closed in the store's
    ``stop``. It uses one consumer with manual assignment and no group, so nothing is committed and no
    rebalance happens; partitions added to the topic later are picked up from their beginning.

    :meth:`read_to_end` takes the end offsets first and then consumes until every partition's position
    has reached them, handing each record to the callback in partition order. Records written after the
    end offsets were taken may or may not be included. Thread-safe: concurrent callers are serialized.

    Args:
        topic: the topic to read.
        on_record: called with each ``kafka.consumer.fetcher.ConsumerRecord``; exceptions propagate.
        consumer_kwargs: kafka-python consumer arguments (``bootstrap_servers``, security ...).
    """

    def __init__(
        self,
        topic: str,
        on_record: Callable[[Any], None],
        consumer_kwargs: Mapping[str, Any],
    ) -> None:
        self.topic = topic
        self._on_record = on_record
        self._consumer_kwargs = dict(consumer_kwargs)
        self._consumer: KafkaConsumer | None = None
        self._assigned: list[KafkaTopicPartition] = []
        self._lock = threading.RLock()

    def start(self) -> None:
        """Create the consumer and assign every partition of the topic, positioned at the beginning."""
        with self._lock:
            if self._consumer is not None:
                return
            kwargs = {
                "group_id": None,
                "enable_auto_commit": False,
                "auto_offset_reset": "earliest",
                "allow_auto_create_topics": False,
                **self._consumer_kwargs,
            }
            self._consumer = KafkaConsumer(**kwargs)
            self._assigned = []
            self._refresh_assignment()

    def _refresh_assignment(self) -> None:
        assert self._consumer is not None
        # Served from the metadata cache; asks the cluster when the topic is not in it yet.
        partitions = self._consumer.partitions_for_topic(self.topic)
        if not partitions:
            raise KafkaStoreError(f"Topic {self.topic} does not exist or has no partitions")
        wanted = [KafkaTopicPartition(self.topic, p) for p in sorted(partitions)]
        new = [tp for tp in wanted if tp not in self._assigned]
        if new:
            self._consumer.assign(wanted)
            # assign() keeps the positions of partitions that stay assigned.
            self._consumer.seek_to_beginning(*new)
            self._assigned = wanted
            log.debug("Reading topic %s from the beginning of partition(s) %s", self.topic,
                      ", ".join(str(tp.partition) for tp in new))

    def read_to_end(self, timeout_s: float = 60.0) -> int:
        """Consume from the current positions up to the end offsets taken now.

        Args:
            timeout_s: how long the whole catch-up may take.

        Returns:
            how many records were handed to the callback.

        Raises:
            KafkaStoreError: the reader is not started, the topic cannot be read, or the end was not
                reached within ``timeout_s``.
        """
        with self._lock:
            consumer = self._consumer
            if consumer is None:
                raise KafkaStoreError(f"The reader of topic {self.topic} is not started")
            deadline = time.monotonic() + timeout_s
            count = 0
            try:
                self._refresh_assignment()
                end = consumer.end_offsets(self._assigned)
                behind = self._behind(end)
                while behind:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        lag = ", ".join(f"{position_text(self.topic, tp.partition, consumer.position(tp))} "
                                        f"(end {end[tp]})" for tp in behind)
                        raise KafkaStoreError(
                            f"Timed out after {timeout_s:.0f} s reading topic {self.topic} to its end: {lag}")
                    batches = consumer.poll(timeout_ms=int(min(remaining, 1.0) * 1000))
                    for tp in sorted(batches):
                        for record in batches[tp]:
                            self._on_record(record)
                            count += 1
                    behind = self._behind(end)
            except KafkaError as e:
                raise KafkaStoreError(f"Cannot read topic {self.topic}: {e}") from e
            return count

    def _behind(self, end: Mapping[KafkaTopicPartition, int]) -> list[KafkaTopicPartition]:
        assert self._consumer is not None
        behind = []
        for tp in self._assigned:
            position = self._consumer.position(tp, timeout_ms=5000)
            if position is None or position < end.get(tp, 0):  # None: not resolved within the timeout
                behind.append(tp)
        return behind

    def close(self) -> None:
        """Close the consumer; :meth:`start` may be called again afterwards."""
        with self._lock:
            consumer, self._consumer = self._consumer, None
            self._assigned = []
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception as e:  # closing must not hide the caller's own error
                    log.debug("Closing the reader of topic %s failed: %s", self.topic, e)
