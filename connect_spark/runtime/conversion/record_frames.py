"""Record frames straight from raw Arrow batches, for bulk tasks whose conversion needs no Python per record.

Called by :func:`connect_spark.runtime.tasks.generation.run_generation` for an
:class:`~connect_spark.api.bulk.ArrowSinkTask` before it falls back to per-record conversion. Applies
when the connector has no transformations and its key and value converters are ByteArrayConverter
(bytes pass through) or StringConverter with UTF-8 (bytes checked and cast by Arrow). A batch with
bytes that are not valid UTF-8 returns ``None``, and the per-record path then applies ``errors.*``
to exactly those records.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.columnar.records import FRAME_HEADERS_TYPE
from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.string import StringConverter

__all__ = ["ArrowFrameBuilder", "column_kind", "whole_column_kinds"]
_UTC_MICROS = pa.timestamp("us", tz="UTC")


def column_kind(converter: Any) -> str | None:
    """``"bytes"`` or ``"utf8"`` when Arrow can do ``converter``'s work on a whole column, else ``None``."""
    if isinstance(converter, ByteArrayConverter):
        return "bytes"
    if isinstance(converter, StringConverter) and str(getattr(converter, "encoding", "utf-8")).lower().replace("_", "-") in ("utf-8", "utf8"):
        return "utf8"
    return None


def whole_column_kinds(converter: Any) -> tuple[str, str] | None:
    """The key's and the value's :func:`column_kind` when Arrow can convert a task's records a column at a
    time: ``converter`` (the task's :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`)
    has no transformation and both converters have a kind; else ``None``."""
    if len(converter.chain):
        return None
    key_kind, value_kind = column_kind(converter.key_converter), column_kind(converter.value_converter)
    return None if key_kind is None or value_kind is None else (key_kind, value_kind)


class ArrowFrameBuilder:
    """Builds record frames from raw batches for one task's converters (see the module docstring).

    Use :meth:`for_converter` to get one, or ``None`` when the connector's converters or
    transformations need the per-record path.
    """

    def __init__(self, key_kind: str, value_kind: str) -> None:
        self.key_kind = key_kind
        self.value_kind = value_kind

    @classmethod
    def for_converter(cls, converter: Any) -> "ArrowFrameBuilder | None":
        """``converter`` is the task's :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`."""
        kinds = whole_column_kinds(converter)
        return None if kinds is None else cls(*kinds)

    def build(self, batch: pa.RecordBatch) -> pa.Table | None:
        """The record frame of ``batch`` (raw columns), or ``None`` when a value needs the per-record path."""
        key = self._convert(batch.column("key"), self.key_kind)
        value = self._convert(batch.column("value"), self.value_kind)
        if key is None or value is None:
            return None
        millis = batch.column("timestamp_ms")
        has_time = pc.fill_null(pc.greater_equal(millis, 0), False)
        if not pc.all(pc.or_(pc.invert(pc.is_valid(millis)), pc.greater_equal(millis, -1))).as_py():
            return None  # an invalid timestamp: Connect fails the task; the per-record path says so
        timestamp = pc.if_else(has_time, pc.multiply(millis, 1000), pa.scalar(None, pa.int64())).cast(_UTC_MICROS)
        ts_type = pc.if_else(has_time, batch.column("timestamp_type").cast(pa.int32()), pa.scalar(-1, pa.int32()))
        return pa.table({
            "topic": batch.column("topic"),
            "partition": batch.column("partition").cast(pa.int32()),
            "offset": batch.column("offset").cast(pa.int64()),
            "timestamp": timestamp,
            "timestamp_type": ts_type,
            "key": key,
            "value": value,
            "headers": batch.column("headers").cast(FRAME_HEADERS_TYPE),
            "original_topic": batch.column("topic"),
            "original_partition": batch.column("partition").cast(pa.int32()),
            "original_offset": batch.column("offset").cast(pa.int64()),
        })

    @staticmethod
    def _convert(column: pa.Array, kind: str) -> pa.Array | None:
        if kind == "bytes":
            return column.cast(pa.binary())
        try:
            return column.cast(pa.binary()).cast(pa.string())  # validates UTF-8
        except (pa.ArrowInvalid, UnicodeDecodeError):
            return None
