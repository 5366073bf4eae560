"""The dead letter queue: failed records, as consumed, written to a Kafka topic.

Kafka Connect's ``DeadLetterQueueReporter`` rebuilt on kafka-python. One reporter per task, built on
the executor (or driver) that runs the task, holds one long-lived producer. For each failure the
error handler reports, it writes the *consumed* record (original key, value, headers and timestamp,
whatever the converters and transformations made of it) to ``errors.deadletterqueue.topic.name``,
with, when ``errors.deadletterqueue.context.headers.enable=true``, the ``__connect.errors.*`` headers
saying where and why it failed.

Lifecycle: the constructor does no I/O. The first :meth:`DeadLetterQueueReporter.report` (or an
explicit :meth:`~DeadLetterQueueReporter.start`) creates the topic when it is missing (one partition,
``errors.deadletterqueue.topic.replication.factor`` lowered to the broker count with a WARN on a smaller
cluster) and the producer. Writes are asynchronous; each report returns a future that the handler's
``await_reports`` waits on before offsets are committed. :meth:`~DeadLetterQueueReporter.close` flushes
and closes the producer.
"""

from __future__ import annotations

import logging
import threading
import traceback
from concurrent.futures import Future
from typing import Any, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.runtime.errors.context import ErrorContext, RawRecord
from connect_spark.runtime.errors.reporters import Reporter

__all__ = [
    "DeadLetterQueueReporter",
    "DeadLetterQueueException",
    "HEADER_PREFIX",
    "PRODUCER_KEYS",
    "producer_kwargs",
    "ERROR_HEADER_ORIG_TOPIC",
    "ERROR_HEADER_ORIG_PARTITION",
    "ERROR_HEADER_ORIG_OFFSET",
    "ERROR_HEADER_CONNECTOR_NAME",
    "ERROR_HEADER_TASK_ID",
    "ERROR_HEADER_STAGE",
    "ERROR_HEADER_EXECUTING_CLASS",
    "ERROR_HEADER_EXCEPTION",
    "ERROR_HEADER_EXCEPTION_MESSAGE",
    "ERROR_HEADER_EXCEPTION_STACK_TRACE",
    "context_headers",
    "exception_class_name",
]

log = logging.getLogger(__name__)

HEADER_PREFIX = "__connect.errors."
ERROR_HEADER_ORIG_TOPIC = HEADER_PREFIX + "topic"
ERROR_HEADER_ORIG_PARTITION = HEADER_PREFIX + "partition"
ERROR_HEADER_ORIG_OFFSET = HEADER_PREFIX + "offset"
ERROR_HEADER_CONNECTOR_NAME = HEADER_PREFIX + "connector.name"
ERROR_HEADER_TASK_ID = HEADER_PREFIX + "task.id"
ERROR_HEADER_STAGE = HEADER_PREFIX + "stage"
ERROR_HEADER_EXECUTING_CLASS = HEADER_PREFIX + "class.name"
ERROR_HEADER_EXCEPTION = HEADER_PREFIX + "exception.class.name"
ERROR_HEADER_EXCEPTION_MESSAGE = HEADER_PREFIX + "exception.message"
ERROR_HEADER_EXCEPTION_STACK_TRACE = HEADER_PREFIX + "exception.stacktrace"

#: Number of partitions of a dead letter queue topic the reporter creates, as in Kafka Connect.
DLQ_PARTITIONS = 1

#: Producer settings (``producer.*`` / ``producer.override.*``) the DLQ producer honours, beyond the
#: common client settings: Kafka key → kafka-python argument and type. ``max.request.size`` matters
#: for records over 1 MB, which the DLQ must be able to take whenever the consumed topic can.
PRODUCER_KEYS: dict[str, tuple[str, type]] = {
    "max.request.size": ("max_request_size", int),
    "compression.type": ("compression_type", str),
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "max.block.ms": ("max_block_ms", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
}


def producer_kwargs(client_config: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python arguments for the :data:`PRODUCER_KEYS` present in ``client_config``.

    Raises:
        DeadLetterQueueException: a value cannot be read as its type (the message names key and value).
    """
    kwargs: dict[str, Any] = {}
    for key, (argument, kind) in PRODUCER_KEYS.items():
        value = client_config.get(key)
        if value is None:
            continue
        try:
            converted = kind(str(value).strip())
        except ValueError:
            raise DeadLetterQueueException(
                f"Invalid value {value!r} for the dead letter queue producer setting {key}: expected {kind.__name__}"
            ) from None
        if argument == "compression_type" and converted == "none":
            converted = None
        kwargs[argument] = converted
    return kwargs


class DeadLetterQueueException(ConnectException):
    """A record could not be written to the dead letter queue (or the queue could not be set up)."""


def exception_class_name(error: BaseException) -> str:
    """The exception's class as Python prints it in a traceback: ``module.QualName``, builtins bare."""
    cls = type(error)
    module = cls.__module__
    if module in ("builtins", "__main__", None):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="replace")


def context_headers(context: ErrorContext, connector_name: str, task_id: int) -> list[tuple[str, bytes]]:
    """The ``__connect.errors.*`` headers for one failure, in Kafka Connect's order.

    Values are UTF-8 strings: the original topic, partition and offset (when the record is known), the
    connector name, the task number, the stage, the executing class, then the exception's class name
    (:func:`exception_class_name`), its message (``str(error)``) and its formatted traceback with any
    chained causes (``traceback.format_exception``), the Python counterparts of Java's
    ``getClass().getName()``, ``getMessage()`` and ``printStackTrace()``.
    """
    headers: list[tuple[str, bytes]] = []
    record = context.record
    if record is not None:
        headers.append((ERROR_HEADER_ORIG_TOPIC, _utf8(record.topic)))
        headers.append((ERROR_HEADER_ORIG_PARTITION, _utf8(str(record.partition))))
        headers.append((ERROR_HEADER_ORIG_OFFSET, _utf8(str(record.offset))))
    headers.append((ERROR_HEADER_CONNECTOR_NAME, _utf8(connector_name)))
    headers.append((ERROR_HEADER_TASK_ID, _utf8(str(task_id))))
    headers.append((ERROR_HEADER_STAGE, _utf8(context.stage.value)))
    headers.append((ERROR_HEADER_EXECUTING_CLASS, _utf8(context.executing_class)))
    error = context.error
    if error is not None:
        headers.append((ERROR_HEADER_EXCEPTION, _utf8(exception_class_name(error))))
        headers.append((ERROR_HEADER_EXCEPTION_MESSAGE, _utf8(str(error))))
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        headers.append((ERROR_HEADER_EXCEPTION_STACK_TRACE, _utf8(trace)))
    return headers


def _completed() -> "Future[None]":
    future: Future[None] = Future()
    future.set_result(None)
    return future


def _failed(error: BaseException) -> "Future[None]":
    future: Future[None] = Future()
    future.set_exception(error)
    return future


class DeadLetterQueueReporter(Reporter):
    """Writes each failed record to the dead letter queue topic.

    Built by :func:`~connect_spark.runtime.errors.create_reporters` for a task whose connector sets
    ``errors.deadletterqueue.topic.name``, and given to the task's
    :class:`~connect_spark.runtime.errors.ErrorHandler`, which calls :meth:`report` for every failed
    record and :meth:`close` at the end.

    The written record has no partition of its own choosing (the topic has one), the consumed record's
    key and value bytes, its headers followed by the context headers when enabled, and its timestamp
    when it had one. The producer is Kafka Connect's DLQ producer: ``acks=all``, no idempotence, one
    request in flight per connection, client id ``connector-dlq-producer-<connector>-<task>``. Unlike
    Kafka Connect's, it blocks at most ``max.block.ms`` (kafka-python's 60 s default) for metadata, and a
    write that cannot be made fails its future rather than waiting forever: the task then fails at
    its next commit instead of hanging.

    Two things kafka-python cannot write are adapted: a header whose value is null is written with an
    empty value, and a record whose key and value are both null gets an empty key.

    A record consumed from the dead letter queue topic itself is never written back to it (that would
    loop); it is logged at ERROR and counted as a failed DLQ write. Kafka Connect prevents the same
    situation by refusing such a configuration, which ``connect_spark.config.connector`` does too.

    Args:
        bootstrap_servers: the Kafka cluster of the dead letter queue (the worker's ``bootstrap.servers``).
        topic: ``errors.deadletterqueue.topic.name``.
        connector_name: the connector's name (client id, context header).
        task_id: the task number (client id, context header).
        replication_factor: ``errors.deadletterqueue.topic.replication.factor``, for a topic this
            reporter creates; ``-1`` for the broker's default.
        context_headers: ``errors.deadletterqueue.context.headers.enable``.
        client_config: Kafka-style client settings for the producer and the admin client
            (``security.protocol``, ``sasl.*``, ``ssl.*``; the worker's settings merged with
            ``producer.*``/``producer.override.*`` by the caller), translated with
            :func:`connect_spark.kafka.kafka_client_kwargs`; the producer also honours
            :data:`PRODUCER_KEYS` (``max.request.size``, ``compression.type``, ...).
        admin_config: the same for the admin client that creates the topic (the worker's settings with
            ``admin.*``/``admin.override.*``, as in Connect); ``client_config`` when not given.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        connector_name: str,
        task_id: int,
        replication_factor: int = 3,
        context_headers: bool = False,
        client_config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic.strip()
        self.connector_name = connector_name
        self.task_id = task_id
        self.replication_factor = replication_factor
        self.context_headers = context_headers
        self.client_config = dict(client_config or {})
        self.admin_config = dict(admin_config) if admin_config is not None else self.client_config
        self._lock = threading.Lock()
        self._producer: Any = None
        self._setup_error: DeadLetterQueueException | None = None
        self._setup_error_logged = False
        self._closed = False

    @property
    def producer_client_id(self) -> str:
        """``connector-dlq-producer-<connector>-<task>``, Kafka Connect's DLQ producer client id."""
        return f"connector-dlq-producer-{self.connector_name}-{self.task_id}"

    def _client_kwargs(self, client_class: type, settings: Mapping[str, Any]) -> dict[str, Any]:
        from connect_spark.kafka.clients import kafka_client_kwargs

        kwargs = kafka_client_kwargs(settings, client_class)
        kwargs["bootstrap_servers"] = self.bootstrap_servers
        return kwargs

    def start(self) -> None:
        """Create the topic if it is missing, then the producer. Idempotent; thread-safe.

        Called by the first :meth:`report`; may be called earlier to fail fast. A failure is remembered:
        later calls raise it again at once instead of waiting on the cluster for every failed record (the
        task fails at its next ``await_reports`` anyway).

        Raises:
            DeadLetterQueueException: the topic could not be found or created, or the producer could not
                be built; the message names the topic and the cause.
        """
        with self._lock:
            if self._closed:
                raise DeadLetterQueueException(f"The dead letter queue reporter of topic={self.topic} is closed")
            if self._producer is not None:
                return
            if self._setup_error is not None:
                raise self._setup_error
            try:
                if not self.topic:
                    raise DeadLetterQueueException("No dead letter queue topic is configured")
                self._ensure_topic()
                self._producer = self._create_producer()
            except DeadLetterQueueException as e:
                self._setup_error = e
                raise

    def _ensure_topic(self) -> None:
        from kafka import KafkaAdminClient

        from connect_spark.kafka.topics import ensure_topic

        admin = None
        try:
            kwargs = self._client_kwargs(KafkaAdminClient, self.admin_config)
            kwargs["client_id"] = "connector-dlq-adminclient-"
            admin = KafkaAdminClient(**kwargs)
            created = ensure_topic(
                admin,
                self.topic,
                DLQ_PARTITIONS,
                self.replication_factor,
                config_key="errors.deadletterqueue.topic.name",
                require_compact=False,
            )
            if created:
                log.info("Created the dead letter queue topic %s for task %s-%d", self.topic, self.connector_name,
                         self.task_id)
        except Exception as e:
            raise DeadLetterQueueException(
                f"Could not initialize dead letter queue with topic={self.topic}: {e}"
            ) from e
        finally:
            if admin is not None:
                try:
                    admin.close()
                except Exception as e:  # closing must not hide the outcome
                    log.debug("Closing the dead letter queue admin client failed: %s", e)

    def _create_producer(self) -> Any:
        from kafka import KafkaProducer

        try:
            kwargs = self._client_kwargs(KafkaProducer, self.client_config)
            kwargs.update(producer_kwargs(self.client_config))
            kwargs.update(
                client_id=self.producer_client_id,
                acks="all",
                enable_idempotence=False,
                max_in_flight_requests_per_connection=1,
            )
            return KafkaProducer(**kwargs)
        except Exception as e:
            raise DeadLetterQueueException(
                f"Could not create the dead letter queue producer for topic={self.topic}: {e}"
            ) from e

    def report(self, context: ErrorContext) -> "Future[None]":
        """Write the failed record to the dead letter queue, asynchronously.

        Called by the handler, in the task's thread, once per failed record.

        Returns:
            A future completed when the broker acknowledged the write, or failed with a
            :class:`DeadLetterQueueException` when the queue could not be set up or the write failed. A
            record that is not written on purpose (unknown record, or consumed from this very topic)
            gives a completed future.
        """
        metrics = self.metrics
        metrics.record_dlq_produce_request()
        record = context.record
        if record is None:
            metrics.record_dlq_produce_failure()
            log.error("Cannot write to dead letter queue topic %s: the failed record of stage %s is unknown",
                      self.topic, context.stage.value)
            return _completed()
        if record.topic == self.topic:
            metrics.record_dlq_produce_failure()
            log.error("Not writing %s back to the dead letter queue: it was consumed from the dead letter queue "
                      "topic itself", record.coordinates())
            return _completed()
        try:
            self.start()
        except DeadLetterQueueException as e:
            metrics.record_dlq_produce_failure()
            # said once at ERROR; every later record fails the same way until the task fails
            level = logging.DEBUG if self._setup_error_logged else logging.ERROR
            self._setup_error_logged = True
            log.log(level, "Could not write %s to the dead letter queue: %s", record.coordinates(), e)
            return _failed(e)

        headers = self._headers(context, record)
        key = record.key
        if key is None and record.value is None:
            key = b""  # kafka-python refuses a record with neither key nor value
        result: Future[None] = Future()
        try:
            sent = self._producer.send(
                self.topic,
                key=key,
                value=record.value,
                headers=headers,
                timestamp_ms=record.timestamp if record.has_timestamp else None,
            )
        except Exception as e:
            self._on_send_error(record, result, e)
            return result
        sent.add_callback(lambda _metadata: result.set_result(None))
        sent.add_errback(lambda exc: self._on_send_error(record, result, exc))
        return result

    def _headers(self, context: ErrorContext, record: RawRecord) -> list[tuple[str, bytes]]:
        headers = [(name, value if value is not None else b"") for name, value in record.headers]
        if self.context_headers:
            headers.extend(context_headers(context, self.connector_name, self.task_id))
        return headers

    def _on_send_error(self, record: RawRecord, result: "Future[None]", error: BaseException) -> None:
        self.metrics.record_dlq_produce_failure()
        log.error("Could not produce message to dead letter queue. topic=%s, record %s: %s", self.topic,
                  record.coordinates(), error)
        failure = DeadLetterQueueException(
            f"Could not produce {record.coordinates()} to dead letter queue topic={self.topic}: {error}"
        )
        failure.__cause__ = error
        result.set_exception(failure)

    def flush(self, timeout: float | None = None) -> None:
        """Send everything handed to the producer now (the futures complete as acknowledgements arrive)."""
        producer = self._producer
        if producer is not None:
            producer.flush(timeout=timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush pending writes (up to ``timeout`` seconds) and close the producer. Idempotent."""
        with self._lock:
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=timeout)

    def __repr__(self) -> str:
        return (f"DeadLetterQueueReporter(topic={self.topic!r}, task={self.connector_name}-{self.task_id}, "
                f"context_headers={self.context_headers})")
