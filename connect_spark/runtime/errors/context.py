"""The record an error concerns, and what reporters are told about one failure.

:class:`RawRecord` is the record exactly as consumed from Kafka (Kafka Connect keeps the
``ConsumerRecord<byte[], byte[]>`` for the same purpose): its bytes are what the dead letter queue
receives, whatever the converters and transformations made of it. :class:`ErrorContext` is Kafka's
``ProcessingContext`` reduced to one immutable value per failure: the handler builds one and gives it to
every reporter.
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_spark.api.records import position_text
from connect_spark.runtime.errors.stage import Stage

__all__ = ["RawRecord", "ErrorContext", "NO_TIMESTAMP_TYPE", "CREATE_TIME", "LOG_APPEND_TIME"]

#: Kafka's timestamp type codes, as in ``RawRecord.timestamp_type`` and Spark's ``timestampType`` column.
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

_TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}


@dataclass(frozen=True)
class RawRecord:
    """One record as consumed from Kafka, before any converter ran.

    Built by the conversion pipeline from Spark's Kafka source columns (or by the errant record reporter
    from a record the task built itself). Immutable and picklable.

    Attributes:
        topic: the topic it was consumed from.
        partition: its partition.
        offset: its offset.
        timestamp: milliseconds since the epoch, or ``None`` (or ``-1``) when the record has none.
        timestamp_type: ``0`` CreateTime, ``1`` LogAppendTime, ``-1`` none.
        key: the raw key bytes, ``None`` for a null key.
        value: the raw value bytes, ``None`` for a tombstone.
        headers: ``(key, value bytes or None)`` pairs, in order; keys may repeat.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int | None
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()

    def coordinates(self) -> str:
        """``topic[partition]@offset``, the form log lines and error messages use."""
        return position_text(self.topic, self.partition, self.offset)

    @property
    def has_timestamp(self) -> bool:
        """True when the record carries a usable timestamp (Kafka's ``NO_TIMESTAMP`` is ``-1``)."""
        return self.timestamp is not None and self.timestamp >= 0

    @property
    def timestamp_type_name(self) -> str | None:
        """``CreateTime`` or ``LogAppendTime`` (Kafka's names), or ``None`` for no timestamp type."""
        return _TIMESTAMP_TYPE_NAMES.get(self.timestamp_type)


@dataclass(frozen=True)
class ErrorContext:
    """Everything reporters learn about one failed operation.

    Built by :class:`~connect_spark.runtime.errors.ErrorHandler` once per failure and passed to each
    reporter's ``report``; reporters must not keep it beyond the call except to finish an asynchronous
    write.

    Attributes:
        stage: the pipeline stage that failed.
        executing_class: the class that ran the operation, as a user knows it (Kafka's fully qualified
            class name where there is one, e.g. ``org.apache.kafka.connect.json.JsonConverter``, else the
            Python dotted path).
        error: the exception the operation raised (for a retried operation, the last one).
        record: the consumed record, or ``None`` when it could not be recovered.
        attempts: how many times the operation ran (``1`` when it was not retried).
    """

    stage: Stage
    executing_class: str
    error: BaseException
    record: RawRecord | None
    attempts: int = 1

    def coordinates(self) -> str:
        """``topic[partition]@offset`` of the record, or ``<unknown record>``."""
        return self.record.coordinates() if self.record is not None else "<unknown record>"

    def describe(self, include_record: bool) -> str:
        """The sentence Kafka Connect logs for a failure, without its leading task part.

        ``Executing stage 'STAGE' with class 'CLASS'`` then, when ``include_record`` and the record is
        known, ``, where consumed record is {topic='t', partition=p, offset=o}`` with
        ``, timestamp=ts, timestampType=CreateTime`` inside the braces when the record has a timestamp
        type, and a final period. Keys, values and headers are never included.
        """
        text = f"Executing stage '{self.stage.value}' with class '{self.executing_class}'"
        if include_record and self.record is not None:
            record = self.record
            details = f"{{topic='{record.topic}', partition={record.partition}, offset={record.offset}"
            type_name = record.timestamp_type_name
            if type_name is not None:
                timestamp = record.timestamp if record.timestamp is not None else -1
                details += f", timestamp={timestamp}, timestampType={type_name}"
            text += f", where consumed record is {details}}}"
        return text + "."
