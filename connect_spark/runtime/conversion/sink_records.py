"""Kafka records → ``SinkRecord``: converters, then the transformation chain, under error handling.

The per-record path, Kafka Connect's ``convertAndTransformRecord``: for each consumed record, the key,
value and header converters run (each a stage of the error handler, short-circuiting on the first
failure), the timestamp is checked, a ``SinkRecord`` is built with its original coordinates, and each
stage of the connector's :class:`~connect_spark.transforms.chain.TransformationChain` runs in order,
each under the error handler (stage ``TRANSFORMATION``); ``None`` from a stage drops the record.
Whatever happens, the record's offset counts as consumed, so dropped and tolerated records are
committed past.

As in Kafka (``toConnectData(topic, headers, value)``), the key and value converters receive the
record's headers as consumed: a :class:`~connect_spark.api.records.Headers` whose values are the raw
header bytes with ``OPTIONAL_BYTES_SCHEMA``, before the header converter ran. A converter written
against the older two-argument ``to_connect_data(topic, value)`` is still called that way.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa

from connect_spark.api.converters import Converter, HeaderConverter, SchemaAndValue
from connect_spark.api.data import Schema
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import Header, Headers, SinkRecord, TimestampType, TopicPartition
from connect_spark.runtime.errors import ErrorHandler, RawRecord, Stage
from connect_spark.streaming.raw_batch import RAW_COLUMNS
from connect_spark.transforms.chain import TransformationChain, TransformationStage, executing_class_name

__all__ = ["RecordConverter", "ConvertedBatch", "raw_records", "raw_headers", "cycle_collection_paused"]

log = logging.getLogger(__name__)



@dataclass
class ConvertedBatch:
    """The records one task receives from a batch, and the offsets consumed (next offsets), per partition."""

    records: list[SinkRecord]
    consumed: dict[TopicPartition, int]
    raw_by_coordinates: dict[tuple[str, int, int], RawRecord]


@contextlib.contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a batch's records are built.

    Building a few hundred thousand records makes the collector run over and over on objects that
    are all alive (and hold no reference cycles; reference counting frees them): on 200k records
    this doubled the time of the per-record path and tripled that of the direct one. The collector
    is restored afterwards, whatever happens; a caller that already paused it keeps it paused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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


def raw_headers(raw: RawRecord) -> Headers:
    """The consumed headers of ``raw`` as Connect headers: raw bytes (or ``None``) with ``OPTIONAL_BYTES_SCHEMA``.

    What the key and value converters receive as ``headers`` (Kafka passes the consumer record's headers).
    """
    return Headers(Header(name, value, Schema.OPTIONAL_BYTES_SCHEMA) for name, value in raw.headers)


def _accepts_headers(converter: Converter) -> bool:
    """Whether ``converter.to_connect_data`` takes a third (headers) argument."""
    try:
        parameters = inspect.signature(converter.to_connect_data).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _to_connect(converter: Converter) -> Callable[[str, bytes | None, Headers], SchemaAndValue]:
    if _accepts_headers(converter):
        return converter.to_connect_data
    log.debug("%s.to_connect_data takes no headers argument; calling it without headers", type(converter).__name__)
    return lambda topic, value, headers: converter.to_connect_data(topic, value)  # type: ignore[call-arg]


class RecordConverter:
    """Converts raw records of one connector task into ``SinkRecord`` objects.

    Built by :func:`connect_spark.runtime.tasks.builder.build_task_plugins`; the runner calls
    :meth:`convert` once per batch and task, in the thread that runs the task.

    Args:
        key_converter, value_converter, header_converter: configured converter instances.
        transforms: the transformation chain (or its stages, in order).
        error_handler: runs every stage with the connector's ``errors.*`` policy.
    """

    def __init__(
        self,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        transforms: TransformationChain | Iterable[TransformationStage],
        error_handler: ErrorHandler,
    ) -> None:
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.chain = transforms if isinstance(transforms, TransformationChain) else TransformationChain(transforms)
        self.errors = error_handler
        self._key_class = executing_class_name(key_converter)
        self._value_class = executing_class_name(value_converter)
        self._header_class = executing_class_name(header_converter)
        self._key_to_connect = _to_connect(key_converter)
        self._value_to_connect = _to_connect(value_converter)
        self._stage_classes = [self.chain.executing_class(i) for i in range(len(self.chain))]

    def convert(self, raws: Iterable[RawRecord]) -> ConvertedBatch:
        """Convert and transform a batch; every record's offset counts as consumed, delivered or not.

        Raises:
            ToleranceExceededException: a record failed under ``errors.tolerance=none``; the message names
                ``topic[partition]@offset``, the stage and the class. Nothing of this batch is delivered.
            ConnectException: a record with an invalid timestamp, or an error the handler does not tolerate.
        """
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
        """Convert and transform one record; ``None`` when it was dropped or tolerated.

        Each stage is first called directly; only when it raises does the error handler run it again
        with the ``errors.*`` policy (retries, tolerance, reporting). Stages are pure functions of the
        record, so the replay is what Connect's handler would have seen, and the common path pays no
        wrapper per stage.
        """
        execute = self.errors.execute
        consumed_headers = raw_headers(raw) if raw.headers else Headers()
        try:
            key = self._key_to_connect(raw.topic, raw.key, consumed_headers)
        except Exception:
            key = execute(Stage.KEY_CONVERTER, self._key_class,
                          lambda: self._key_to_connect(raw.topic, raw.key, consumed_headers), raw)
            if key is None:
                return None
        try:
            value = self._value_to_connect(raw.topic, raw.value, consumed_headers)
        except Exception:
            value = execute(Stage.VALUE_CONVERTER, self._value_class,
                            lambda: self._value_to_connect(raw.topic, raw.value, consumed_headers), raw)
            if value is None:
                return None
        try:
            headers = self._convert_headers(raw)
        except Exception:
            headers = execute(Stage.HEADER_CONVERTER, self._header_class, lambda: self._convert_headers(raw), raw)
            if headers is None:
                return None
        timestamp = raw.timestamp
        if timestamp is not None and timestamp < 0:
            if timestamp != -1:
                # Kafka Connect fails the task here, outside the error handler.
                raise ConnectException(f"Invalid record timestamp {timestamp} at {raw.coordinates()}")
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
        chain = self.chain
        for index, executing_class in enumerate(self._stage_classes):
            current = record
            try:
                record = chain.apply_stage(index, current)
            except Exception:
                record = execute(Stage.TRANSFORMATION, executing_class,
                                 lambda: _Dropped.wrap(chain.apply_stage(index, current)), raw)
                if record is _Dropped.DROPPED:
                    return None
            if record is None:
                return None
        return record

    def _convert_headers(self, raw: RawRecord) -> Headers:
        headers = Headers()
        for name, value in raw.headers:
            converted = self.header_converter.to_connect_header(raw.topic, name, value)
            headers.add(name, converted.value, converted.schema)
        return headers

    def close(self) -> None:
        """Close the converters, then every transform and predicate once; best effort, as in Connect."""
        converters = {id(c): c for c in (self.key_converter, self.value_converter, self.header_converter)}
        for converter in converters.values():
            try:
                converter.close()
            except Exception as e:
                log.warning("Could not close %s: %r", type(converter).__name__, e)
        self.chain.close()


class _Dropped:
    """Tells "the transform returned None" apart from "the error handler skipped the record"."""

    DROPPED: Any = object()

    @staticmethod
    def wrap(result: SinkRecord | None) -> Any:
        return _Dropped.DROPPED if result is None else result
