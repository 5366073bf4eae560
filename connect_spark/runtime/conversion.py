"""Kafka records → ``SinkRecord``: converters, then the transformation chain, under error handling.

The per-record path, Kafka Connect's ``convertAndTransformRecord``: for each consumed record, the key,
value and header converters run (each a stage of the error handler, short-circuiting on the first
failure), the timestamp is checked, a ``SinkRecord`` is built with its original coordinates, and each
transformation stage runs in order; ``None`` from a stage drops the record. Whatever happens, the
record's offset counts as consumed, so dropped and tolerated records are committed past.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa

from connect_spark.api.converters import Converter, HeaderConverter
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import Headers, SinkRecord, TimestampType, TopicPartition
from connect_spark.runtime.errors import ErrorHandler, RawRecord, Stage

__all__ = ["RecordConverter", "ConvertedBatch", "TransformStage", "raw_records", "RAW_COLUMNS"]

log = logging.getLogger(__name__)

#: The columns the streaming adapter selects from Spark's Kafka source for the per-record path.
RAW_COLUMNS = ("topic", "partition", "offset", "timestamp_ms", "timestamp_type", "key", "value", "headers")


@dataclass(frozen=True)
class TransformStage:
    """One configured transformation with its optional predicate (``transforms.<alias>.*``)."""

    alias: str
    transform: Any
    predicate: Any = None
    negate: bool = False

    @property
    def class_name(self) -> str:
        return _kafka_name(self.transform)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        if self.predicate is None or (self.negate ^ bool(self.predicate.test(record))):
            return self.transform.apply(record)
        return record


@dataclass
class ConvertedBatch:
    """The records one task receives from a batch, and the offsets consumed (next offsets), per partition."""

    records: list[SinkRecord]
    consumed: dict[TopicPartition, int]
    raw_by_coordinates: dict[tuple[str, int, int], RawRecord]


def raw_records(batch: pa.Table | pa.RecordBatch) -> Iterator[RawRecord]:
    """Rows of an Arrow batch with :data:`RAW_COLUMNS` as :class:`RawRecord`, in order."""
    columns = {name: batch.column(name).to_pylist() for name in RAW_COLUMNS}
    for i in range(batch.num_rows):
        headers = columns["headers"][i] or ()
        yield RawRecord(
            topic=columns["topic"][i],
            partition=columns["partition"][i],
            offset=columns["offset"][i],
            timestamp=columns["timestamp_ms"][i],
            timestamp_type=columns["timestamp_type"][i] if columns["timestamp_type"][i] is not None else -1,
            key=columns["key"][i],
            value=columns["value"][i],
            headers=tuple((h["key"], h["value"]) for h in headers),
        )


class RecordConverter:
    """Converts raw records of one connector task into ``SinkRecord`` objects.

    Args:
        key_converter, value_converter, header_converter: configured converter instances.
        stages: the transformation chain, in order.
        error_handler: runs every stage with the connector's ``errors.*`` policy.
    """

    def __init__(
        self,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        stages: Sequence[TransformStage],
        error_handler: ErrorHandler,
    ) -> None:
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.stages = list(stages)
        self.errors = error_handler
        self._key_class = _kafka_name(key_converter)
        self._value_class = _kafka_name(value_converter)
        self._header_class = _kafka_name(header_converter)

    def convert(self, raws: Iterator[RawRecord]) -> ConvertedBatch:
        records: list[SinkRecord] = []
        consumed: dict[TopicPartition, int] = {}
        by_coordinates: dict[tuple[str, int, int], RawRecord] = {}
        for raw in raws:
            consumed[TopicPartition(raw.topic, raw.partition)] = raw.offset + 1
            record = self.convert_one(raw)
            if record is not None:
                records.append(record)
                by_coordinates[(raw.topic, raw.partition, raw.offset)] = raw
        return ConvertedBatch(records, consumed, by_coordinates)

    def convert_one(self, raw: RawRecord) -> SinkRecord | None:
        """Convert and transform one record; ``None`` when it was dropped or tolerated."""
        execute = self.errors.execute
        key = execute(Stage.KEY_CONVERTER, self._key_class,
                      lambda: self.key_converter.to_connect_data(raw.topic, raw.key), raw)
        if key is None:
            return None
        value = execute(Stage.VALUE_CONVERTER, self._value_class,
                        lambda: self.value_converter.to_connect_data(raw.topic, raw.value), raw)
        if value is None:
            return None
        headers = execute(Stage.HEADER_CONVERTER, self._header_class, lambda: self._convert_headers(raw), raw)
        if headers is None:
            return None
        timestamp = raw.timestamp
        if timestamp is not None and timestamp < 0:
            if timestamp != -1:
                # Kafka Connect fails the task here, outside the error handler.
                raise ConnectException(f"Invalid record timestamp {timestamp} at {raw.topic}[{raw.partition}]@{raw.offset}")
            timestamp = None
        record: SinkRecord | None = SinkRecord(
            topic=raw.topic,
            kafka_partition=raw.partition,
            key_schema=key.schema,
            key=key.value,
            value_schema=value.schema,
            value=value.value,
            kafka_offset=raw.offset,
            timestamp=timestamp,
            timestamp_type=TimestampType.from_kafka(raw.timestamp_type) if timestamp is not None
            else TimestampType.NO_TIMESTAMP_TYPE,
            headers=headers,
        )
        for stage in self.stages:
            current = record
            record = execute(Stage.TRANSFORMATION, stage.class_name, lambda: _Dropped.wrap(stage.apply(current)), raw)
            if record is None or record is _Dropped.DROPPED:
                return None
        return record

    def _convert_headers(self, raw: RawRecord) -> Headers:
        headers = Headers()
        for name, value in raw.headers:
            converted = self.header_converter.to_connect_header(raw.topic, name, value)
            headers.add(name, converted.value, converted.schema)
        return headers


class _Dropped:
    """Tells "the transform returned None" apart from "the error handler skipped the record"."""

    DROPPED: Any = object()

    @staticmethod
    def wrap(result: SinkRecord | None) -> Any:
        return _Dropped.DROPPED if result is None else result


def _kafka_name(instance: Any) -> str:
    cls = type(instance)
    return getattr(cls, "kafka_class_name", None) or f"{cls.__module__}.{cls.__qualname__}"
