"""``SinkRecord`` lists straight from raw Arrow batches, when converting calls no converter per record.

Called by :func:`connect_spark.runtime.tasks.generation.run_generation` for record tasks (``put``) before the
per-record :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`. Applies when the connector has no
transformations and its key and value converters are ByteArrayConverter or StringConverter with UTF-8
(the same cases as :class:`~connect_spark.runtime.conversion.record_frames.ArrowFrameBuilder`): Arrow validates and
decodes whole columns, and each record is one ``SinkRecord`` built from plain lists. Header values still go
through the header converter, one call per header.

A batch the direct path cannot prove it converts exactly as the per-record path returns ``None`` — bytes
that are not valid UTF-8, a timestamp below -1, a header the header converter rejects — and the caller
converts that batch per record, where ``errors.*`` applies to exactly the failing records.

Measured on 200k ~170-byte records (StringConverter, no headers, one core): per-record path 74k rec/s,
this path ~600k rec/s (``jobs/bench_task_modes.py`` shows the effect end to end).
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.data import Schema
from connect_spark.api.records import Headers, SinkRecord, TimestampType
from connect_spark.runtime.conversion.record_frames import whole_column_kinds
from connect_spark.runtime.conversion.sink_records import ConvertedBatch, raw_records
from connect_spark.runtime.errors import RawRecord
from connect_spark.runtime.tasks.loop import offset_ranges

__all__ = ["DirectRecordBuilder"]

_SCHEMAS = {"bytes": Schema.OPTIONAL_BYTES_SCHEMA, "utf8": Schema.OPTIONAL_STRING_SCHEMA}
_NO_TIMESTAMP = TimestampType.NO_TIMESTAMP_TYPE
_TIMESTAMP_TYPES = {t.value: t for t in TimestampType}


class _HeaderRejected(Exception):
    """The header converter failed on a header of the batch: the per-record path must convert it."""


class LazyRawIndex(Mapping):
    """``(topic, partition, offset)`` → :class:`RawRecord` of a batch, built only when first looked up.

    The errant record reporter looks records up here (to send the original bytes to the DLQ); most
    batches never report one, so most batches never pay for the index.
    """

    def __init__(self, batch: pa.RecordBatch) -> None:
        self._batch = batch
        self._index: dict[tuple[str, int, int], RawRecord] | None = None

    def _built(self) -> dict[tuple[str, int, int], RawRecord]:
        if self._index is None:
            self._index = {(r.topic, r.partition, r.offset): r for r in raw_records(self._batch)}
        return self._index

    def __getitem__(self, key: tuple[str, int, int]) -> RawRecord:
        return self._built()[key]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return self._batch.num_rows


class DirectRecordBuilder:
    """Builds a batch's records without a converter call per record (see the module docstring).

    Use :meth:`for_converter` to get one, or ``None`` when the connector's converters or
    transformations need the per-record path.
    """

    def __init__(self, key_kind: str, value_kind: str, header_converter: Any) -> None:
        self.key_kind = key_kind
        self.value_kind = value_kind
        self.header_converter = header_converter

    @classmethod
    def for_converter(cls, converter: Any) -> "DirectRecordBuilder | None":
        """``converter`` is the task's :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`."""
        kinds = whole_column_kinds(converter)
        return None if kinds is None else cls(*kinds, converter.header_converter)

    def build(self, batch: pa.RecordBatch) -> ConvertedBatch | None:
        """The records of ``batch`` (raw columns, offset order per partition), or ``None`` (see the module)."""
        keys = _decoded(batch.column("key"), self.key_kind)
        values = _decoded(batch.column("value"), self.value_kind)
        if keys is None or values is None:
            return None
        millis_column = batch.column("timestamp_ms")
        lowest = pc.min(millis_column).as_py()
        if lowest is not None and lowest < -1:
            return None  # Connect fails the task on such a timestamp; the per-record path says so
        try:
            headers = self._headers(batch)
        except _HeaderRejected:
            return None
        topics = batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist()
        offsets = batch.column("offset").to_pylist()
        # Connect has no timestamp (None, NO_TIMESTAMP_TYPE) where Kafka's is -1 or missing.
        stamped = pc.fill_null(pc.not_equal(millis_column, -1), False)
        millis = pc.if_else(stamped, millis_column, None).to_pylist()
        type_column = pc.fill_null(pc.if_else(stamped, batch.column("timestamp_type"), -1), -1)
        types = _timestamp_types(type_column)
        key_schema, value_schema = _SCHEMAS[self.key_kind], _SCHEMAS[self.value_kind]
        if headers is None:  # no header in the batch: a fresh empty Headers per record
            records = [
                SinkRecord(topic, partition, key_schema, key, value_schema, value, offset, ms, ts_type, Headers(),
                           topic, partition, offset)
                for topic, partition, offset, key, value, ms, ts_type
                in zip(topics, partitions, offsets, keys, values, millis, types)
            ]
        else:
            records = [
                SinkRecord(topic, partition, key_schema, key, value_schema, value, offset, ms, ts_type,
                           Headers() if record_headers is None else record_headers, topic, partition, offset)
                for topic, partition, offset, key, value, ms, ts_type, record_headers
                in zip(topics, partitions, offsets, keys, values, millis, types, headers)
            ]
        consumed = {tp: end for tp, (_, end) in offset_ranges(batch).items()}
        return ConvertedBatch(records, consumed, LazyRawIndex(batch))

    def _headers(self, batch: pa.RecordBatch) -> list[Headers | None] | None:
        """Per row: converted headers, or ``None`` for a row without any; ``None`` overall when no row has
        one. Raises :class:`_HeaderRejected` when the header converter fails on one."""
        column = batch.column("headers")
        if column.null_count == len(column) or len(pc.list_flatten(column)) == 0:
            return None
        topics = batch.column("topic").to_pylist()
        converted: list[Headers | None] = []
        try:
            for topic, row in zip(topics, column.to_pylist()):
                if not row:
                    converted.append(None)
                    continue
                headers = Headers()
                for header in row:
                    name, value = header["key"], header["value"]
                    result = self.header_converter.to_connect_header(topic, name, value)
                    headers.add(name, result.value, result.schema)
                converted.append(headers)
        except Exception as e:
            raise _HeaderRejected() from e
        return converted


def _decoded(column: pa.Array, kind: str) -> list[Any] | None:
    """Column values as the converter returns them (bytes, or str for UTF-8), or ``None`` if one is invalid."""
    if kind == "bytes":
        return column.cast(pa.binary()).to_pylist()
    try:
        return column.cast(pa.binary()).cast(pa.string()).to_pylist()  # validates UTF-8
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None


def _timestamp_types(types: pa.Array) -> list[TimestampType]:
    """Per row the :class:`TimestampType` of Kafka's code (-1 → no timestamp); one lookup when all rows share it."""
    bounds = pc.min_max(types)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low == high:
        return [_TIMESTAMP_TYPES.get(low, _NO_TIMESTAMP)] * len(types)
    return [_TIMESTAMP_TYPES.get(code, _NO_TIMESTAMP) for code in types.to_pylist()]
