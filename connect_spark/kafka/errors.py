"""Errors of the Kafka client layer: a storage topic that cannot be used, credentials the cluster refuses."""

from __future__ import annotations

from connect_spark.api.errors import ConnectException

__all__ = ["KafkaStoreError", "KafkaAuthenticationError"]


class KafkaStoreError(ConnectException):
    """A storage topic could not be created, read or written; the message names the topic and the cause."""


class KafkaAuthenticationError(KafkaStoreError):
    """The Kafka cluster refused the client's credentials (``sasl.jaas.config``, ``sasl.mechanism`` ...)."""
