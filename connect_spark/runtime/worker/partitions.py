"""Which partitions a connector consumes, and where each starts.

Start positions are always concrete offsets: the committed offset when there is one inside the log,
otherwise the log start or end as ``consumer.override.auto.offset.reset`` says, as Kafka's consumer
would resolve them for the group ``connect-<name>``.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from kafka import KafkaConsumer
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition

__all__ = ["PartitionDirectory"]

log = logging.getLogger(__name__)


class PartitionDirectory:
    """Metadata look-ups for one connector's subscription; one Kafka client kept for the connector's life."""

    def __init__(self, client_kwargs: Mapping[str, Any], topics: list[str] | None, topics_regex: str | None) -> None:
        self._consumer = KafkaConsumer(**dict(client_kwargs), enable_auto_commit=False,
                                       client_id="connect-spark-metadata")
        self.topics = topics
        self._pattern = re.compile(topics_regex) if topics_regex else None

    def close(self) -> None:
        self._consumer.close()

    def partitions(self) -> set[TopicPartition]:
        """Every partition of the subscribed topics (matching ``topics.regex`` in full, as Java does)."""
        if self.topics:
            names = list(self.topics)
        else:
            assert self._pattern is not None
            names = [t for t in self._consumer.topics() if self._pattern.fullmatch(t)]
        found: set[TopicPartition] = set()
        for topic in names:
            numbers = self._consumer.partitions_for_topic(topic)
            if not numbers:
                if self.topics:
                    log.warning("Topic %s does not exist (yet); its partitions are picked up when it appears", topic)
                continue
            found.update(TopicPartition(topic, p) for p in numbers)
        return found

    def positions(
        self, partitions: set[TopicPartition], committed: Mapping[TopicPartition, int], auto_offset_reset: str
    ) -> dict[TopicPartition, int]:
        """The next offset to read for each partition: committed if inside the log, else the reset policy."""
        if not partitions:
            return {}
        kafka_tps = [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]
        beginnings = self._consumer.beginning_offsets(kafka_tps)
        ends = self._consumer.end_offsets(kafka_tps)
        positions: dict[TopicPartition, int] = {}
        for ktp in kafka_tps:
            tp = TopicPartition(ktp.topic, ktp.partition)
            start, end = beginnings[ktp], ends[ktp]
            offset = committed.get(tp)
            if offset is not None and start <= offset <= end:
                positions[tp] = offset
                continue
            if offset is not None:
                log.warning("Committed offset %s[%d]@%d is outside the log [%d, %d]; applying auto.offset.reset=%s",
                            tp.topic, tp.partition, offset, start, end, auto_offset_reset)
            if auto_offset_reset == "earliest":
                positions[tp] = start
            elif auto_offset_reset == "latest":
                positions[tp] = end
            else:
                raise ConnectException(
                    f"No committed offset for {tp.topic}[{tp.partition}] and "
                    "consumer.override.auto.offset.reset=none"
                )
        return positions
