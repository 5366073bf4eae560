"""Storage topics: created with their configuration when missing, an existing one checked to be compacted."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, TopicAlreadyExistsError

from connect_spark.api.errors import ConfigException
from connect_spark.kafka.errors import KafkaStoreError

__all__ = ["effective_replication_factor", "ensure_topic"]

log = logging.getLogger(__name__)


def effective_replication_factor(admin: KafkaAdminClient, requested: int, topic: str) -> int:
    """The replication factor to create ``topic`` with.

    ``-1`` is passed on (the broker's ``default.replication.factor``, brokers 2.4+). A factor larger than
    the number of live brokers is lowered to that number with a WARN, so that the Kafka Connect default
    of 3 works on a one-broker development or test cluster; Kafka Connect itself fails in that case. The
    WARN is the operator's cue to raise it later (``kafka-reassign-partitions``) on a real cluster.
    """
    if requested == -1:
        return -1
    if requested < 1:
        raise ConfigException("Must be at least 1, or -1 for the broker's default", "replication.factor", requested)
    brokers = [b for b in admin.describe_cluster().get("brokers", []) if not b.get("is_fenced")]
    if brokers and len(brokers) < requested:
        log.warning("Creating topic %s with replication factor %d instead of %d: the cluster has only %d broker(s)",
                    topic, len(brokers), requested, len(brokers))
        return len(brokers)
    return requested


def _describe_topic(admin: KafkaAdminClient, topic: str) -> dict[str, Any] | None:
    """The metadata of ``topic``, or ``None`` when it does not exist."""
    for described in admin.describe_topics([topic]):
        if described.get("name") == topic:
            if described.get("error_code", 0) == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                return None
            if described.get("error_code", 0):
                raise KafkaStoreError(f"Cannot describe topic {topic}: Kafka error code {described['error_code']}")
            return described
    return None


def ensure_topic(
    admin: KafkaAdminClient,
    topic: str,
    partitions: int,
    replication_factor: int,
    topic_configs: Mapping[str, str] | None = None,
    *,
    config_key: str = "topic",
    require_compact: bool = True,
    timeout_ms: int = 30000,
) -> bool:
    """Create a storage topic if it is missing; check an existing one.

    Called from the ``start`` of the Kafka-backed stores, before any client reads or writes the topic,
    as Kafka Connect's backing stores do with ``TopicAdmin.createOrFindTopics``.

    A new topic gets ``partitions``, the :func:`effective_replication_factor` and ``topic_configs``, with
    ``cleanup.policy=compact`` when ``require_compact``. An existing topic is left as it is (its partition
    count too) except that, when ``require_compact``, a cleanup policy other than ``compact`` is refused,
    since deleting old segments would lose the latest record of rarely written keys.

    Args:
        admin: the store's admin client.
        topic: topic name.
        partitions: partitions of a new topic.
        replication_factor: requested replication factor; -1 for the broker's default.
        topic_configs: further topic configuration of a new topic.
        config_key: the worker key that named the topic, for messages (``offset.storage.topic``).
        require_compact: create compacted and refuse an existing topic that is not.
        timeout_ms: how long to wait for the new topic's partitions to get leaders.

    Returns:
        ``True`` when this call created the topic.

    Raises:
        ConfigException: the existing topic is not compacted.
        KafkaStoreError: the topic could not be created or described.
    """
    configs = {str(k): str(v) for k, v in (topic_configs or {}).items()}
    if require_compact:
        configs["cleanup.policy"] = "compact"
    created = False
    try:
        if _describe_topic(admin, topic) is None:
            rf = effective_replication_factor(admin, replication_factor, topic)
            try:
                admin.create_topics(
                    {topic: {"num_partitions": partitions, "replication_factor": rf, "configs": configs}},
                    timeout_ms=timeout_ms,
                )
                created = True
                log.info("Created topic %s (%s) with %d partition(s), replication factor %s, %s", topic, config_key,
                         partitions, rf, ", ".join(f"{k}={v}" for k, v in sorted(configs.items())))
            except TopicAlreadyExistsError:
                log.debug("Topic %s was created by someone else meanwhile", topic)
        admin.wait_for_topics([topic], timeout_ms=timeout_ms)
    except KafkaError as e:
        raise KafkaStoreError(f"Cannot create or find topic {topic} ({config_key}): {e}") from e
    if require_compact and not created:
        _check_compacted(admin, topic, config_key)
    return created


def _check_compacted(admin: KafkaAdminClient, topic: str, config_key: str) -> None:
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        entry = described["topic"][topic].get("cleanup.policy") or {}
        policy = entry.get("value")
    except (KafkaError, KeyError, TypeError) as e:
        # As Kafka Connect does: without DESCRIBE_CONFIGS rights the check is skipped, not fatal.
        log.warning("Cannot check the cleanup policy of topic %s (%s): %s", topic, config_key, e)
        return
    policies = {p.strip().lower() for p in (policy or "").split(",") if p.strip()}
    if policies != {"compact"}:
        raise ConfigException(
            f"Topic '{topic}' is required to have 'cleanup.policy=compact' to guarantee that the latest value of "
            f"every key is kept, but it has 'cleanup.policy={policy}'. Change the topic's policy or use another topic",
            config_key,
            topic,
        )
