"""The ``ErrantRecordReporter`` the runtime gives sink tasks, and the pieces that build a task's reporting.

A task obtains the reporter from ``SinkTaskContext.errant_record_reporter()`` (present when the
connector sets a dead letter queue topic or ``errors.log.enable=true``) and calls ``report(record,
error)`` from ``put`` for each record it cannot write. The report goes through the task's
:class:`~connect_spark.runtime.errors.ErrorHandler` (stage ``TASK_PUT``), so it is logged, written to the
dead letter queue with the record's *consumed* bytes, counted, and awaited before the next commit.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, Mapping

from connect_spark.api.converters import Converter, HeaderConverter
from connect_spark.api.records import SinkRecord
from connect_spark.api.task import ErrantRecordReporter
from connect_spark.runtime.errors.config import ErrorHandlingConfig
from connect_spark.runtime.errors.context import NO_TIMESTAMP_TYPE, RawRecord
from connect_spark.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from connect_spark.runtime.errors.handler import ErrorHandler
from connect_spark.runtime.errors.reporters import LogReporter, Reporter

__all__ = ["WorkerErrantRecordReporter", "converter_serializer", "create_reporters"]


class WorkerErrantRecordReporter(ErrantRecordReporter):
    """The runtime's implementation of :class:`connect_spark.api.ErrantRecordReporter`.

    Built by the task loop with the task's handler and handed to the task through its context.

    Args:
        handler: the task's error handler; :meth:`report` delegates to its ``report_put_error``.
        raw_lookup: maps a record given to ``put`` back to the consumed :class:`RawRecord` it came from
            (by original topic, partition and offset), or ``None`` when there is none (the task built the
            record itself).
        serialize: optional; turns a record without a consumed original into a :class:`RawRecord` (with
            the task's converters, :func:`converter_serializer`). When not given, the handler's own
            ``serialize`` (if any) is used.
    """

    def __init__(
        self,
        handler: ErrorHandler,
        raw_lookup: Callable[[SinkRecord], RawRecord | None],
        serialize: Callable[[SinkRecord], RawRecord] | None = None,
    ) -> None:
        self.handler = handler
        self.raw_lookup = raw_lookup
        self.serialize = serialize

    def report(self, record: SinkRecord, error: BaseException) -> "Future[None]":
        """Report a record ``put`` could not write; see :meth:`ErrorHandler.report_put_error`.

        Returns:
            A future completed when the record is logged and durably in the dead letter queue. The
            runtime also waits for it before committing offsets, so tasks need not.

        Raises:
            ConnectException: ``Tolerance exceeded in error handler`` under ``errors.tolerance=none``
                (after the record was reported); the task then fails.
        """
        raw = self.raw_lookup(record)
        if raw is None and self.serialize is not None:
            raw = self.serialize(record)
        return self.handler.report_put_error(record, raw, error)


def converter_serializer(
    key_converter: Converter, value_converter: Converter, header_converter: HeaderConverter
) -> Callable[[SinkRecord], RawRecord]:
    """A ``serialize`` callable for records a task built itself, as Kafka Connect re-serializes them.

    The key and value go through the converters' ``from_connect_data`` and each header through the
    header converter's ``from_connect_header``, at the record's current topic; the record's own
    partition (``-1`` when it has none), offset and timestamp are kept.
    """

    def serialize(record: SinkRecord) -> RawRecord:
        topic = record.topic
        key = key_converter.from_connect_data(topic, record.key_schema, record.key)
        value = value_converter.from_connect_data(topic, record.value_schema, record.value)
        headers = tuple(
            (header.key, header_converter.from_connect_header(topic, header.key, header.schema, header.value))
            for header in (record.headers or ())
        )
        timestamp_type = record.timestamp_type.value if record.timestamp is not None else NO_TIMESTAMP_TYPE
        return RawRecord(
            topic=topic,
            partition=record.kafka_partition if record.kafka_partition is not None else -1,
            offset=record.kafka_offset,
            timestamp=record.timestamp,
            timestamp_type=timestamp_type,
            key=key,
            value=value,
            headers=headers,
        )

    return serialize


def create_reporters(
    config: ErrorHandlingConfig,
    connector_name: str,
    task_id: int,
    bootstrap_servers: str | None,
    client_config: Mapping[str, Any] | None = None,
) -> list[Reporter]:
    """The reporters of one task, as Kafka Connect's worker builds them for a sink task.

    A :class:`LogReporter` when ``errors.log.enable=true``, then a :class:`DeadLetterQueueReporter` when
    ``errors.deadletterqueue.topic.name`` is set. Nothing connects to Kafka here (the DLQ reporter sets
    itself up on its first report).

    Args:
        config: the connector's error-handling settings.
        connector_name: the connector's name.
        task_id: the task number.
        bootstrap_servers: the worker's ``bootstrap.servers``; required when a DLQ is configured.
        client_config: Kafka-style client settings for the DLQ producer and admin client.

    Raises:
        ValueError: a DLQ is configured but no bootstrap servers are given.
    """
    reporters: list[Reporter] = []
    if config.log_enable:
        reporters.append(LogReporter(connector_name, task_id, config.log_include_messages))
    if config.dlq_enabled:
        if not bootstrap_servers:
            raise ValueError("A dead letter queue needs the worker's bootstrap.servers")
        reporters.append(
            DeadLetterQueueReporter(
                bootstrap_servers,
                config.dlq_topic_name,
                connector_name,
                task_id,
                replication_factor=config.dlq_replication_factor,
                context_headers=config.dlq_context_headers_enable,
                client_config=client_config,
            )
        )
    return reporters
