"""Record frames → table rows, column by column: what :mod:`.rows` does for records, without a record per row.

Called by the task for each chunk of a ``put_arrow``. A frame has one key schema and one value schema (read
from its field metadata, :func:`~connect_spark.columnar.records.connect_schemas`), so one
:class:`~.rows.RecordLayout` (compiled from the frame's first row, as a record) says which columns the
rows have; each column's values are then read from its Arrow column once (``to_pylist``) and the rows
zipped from them. Values have the Python types the record path gives (Timestamps as wall-clock time in
``db.timezone``, Time as ``datetime.time``, Debezium's dates and timestamps as their typed columns hold them,
...), so the dialect's typed COPY applies.

Keys, deletes and the last write per key follow the same rules as records
(:func:`connect_spark.connectors.changes.surviving`).
``SinkRecord`` objects are built only for rows the database refuses (:class:`FrameRecords`: the errant
record reporter gets them). A frame this module does not handle — a schemaless value, a key that is not
there for ``pk.mode=record_key``, two topics writing one table — returns ``None``, and the task takes the
record path for it (:func:`~connect_spark.columnar.records.frame_to_records` then :func:`~.rows.table_batches`).
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.logical import Time, Timestamp
from connect_spark.api.data.schema import TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME
from connect_spark.api.data.semantic_types import semantic_type
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.records import frame_to_records, value_reader
from connect_spark.connectors.jdbc.config import JdbcSinkConfig
from connect_spark.connectors.jdbc.dialect import TableId
from connect_spark.connectors.changes import DELETED_FIELD, surviving
from connect_spark.connectors.jdbc.rows import ColumnSource, LayoutCache, TableBatch, column_source
from connect_spark.connectors.jdbc.target import table_for_topic

__all__ = ["FrameRecords", "frame_batches", "frame_records"]

_NAIVE_MICROS = pa.timestamp("us")
_UTC_MICROS = pa.timestamp("us", tz="UTC")


def _never(arrow_type: pa.DataType) -> bool:
    return False


#: Semantic column kinds whose typed frame column's ``to_pylist`` values are the database values
#: :func:`~.rows.semantic_writer` would give, by the Arrow type that column has.
_TYPED_AS_WRITTEN = {
    "date": pa.types.is_date32,
    "timestamp_ntz": lambda t: pa.types.is_timestamp(t) and t.tz is None,
    "timestamp": lambda t: pa.types.is_timestamp(t) and t.tz is not None,
}


def frame_records(frame: pa.Table, key_schema: Schema | None, value_schema: Schema | None) -> list[SinkRecord]:
    """The records of a frame's rows (a null key or value carries no schema, as with the JsonConverter)."""
    return frame_to_records(frame, key_schema, value_schema, null_key_schema=None, null_value_schema=None)


class FrameRecords(Sequence[SinkRecord]):
    """The records of chosen rows of a frame, each built when asked for (only refused rows are)."""

    def __init__(self, frame: pa.Table, rows: Sequence[int], key_schema: Schema | None,
                 value_schema: Schema | None) -> None:
        self.frame = frame
        self.rows = list(rows)
        self.key_schema = key_schema
        self.value_schema = value_schema

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return frame_records(self.frame.slice(self.rows[index], 1), self.key_schema, self.value_schema)[0]


def frame_batches(frame: pa.Table, key_schema: Schema | None, value_schema: Schema | None,
                  config: JdbcSinkConfig, layouts: LayoutCache) -> list[TableBatch] | None:
    """One :class:`~.rows.TableBatch` per table for a frame's rows (offset order per partition), or ``None``
    when the frame takes the record path (see the module docstring)."""
    if frame.num_rows == 0:
        return []
    if value_schema is None or value_schema.type is not Type.STRUCT:
        return None
    if config.pk_mode == "record_key" and (key_schema is None or frame.column("key").null_count):
        return None
    topics = pc.unique(frame.column("topic")).to_pylist()
    per_table: dict[TableId, pa.Table] = {}
    for topic in topics:
        table = table_for_topic(config.table_name_format, topic)
        if table in per_table:
            return None
        per_table[table] = frame if len(topics) == 1 else frame.filter(pc.equal(frame.column("topic"), topic))
    batches = []
    for table, part in sorted(per_table.items()):
        batch = _table_batch(table, part, key_schema, value_schema, config, layouts)
        if batch is None:
            return None
        batches.append(batch)
    return batches


def _table_batch(table: TableId, frame: pa.Table, key_schema: Schema | None, value_schema: Schema,
                 config: JdbcSinkConfig, layouts: LayoutCache) -> TableBatch | None:
    tombstone_mask = pc.is_null(frame.column("value"))
    tombstones = frame.column("value").null_count
    if config.delete_enabled and DELETED_FIELD in {f.name for f in value_schema.fields}:
        marked = pc.equal(pc.struct_field(frame.column("value"), DELETED_FIELD), "true")
        tombstone_mask = pc.or_(tombstone_mask, pc.fill_null(marked, False))
        tombstones = pc.sum(tombstone_mask).as_py() or 0
    if tombstones and not config.delete_enabled:
        frame = frame.filter(pc.invert(tombstone_mask))  # skipped, their offsets covered by the chunk
        tombstones = 0
        tombstone_mask = None
    if frame.num_rows == 0:
        return TableBatch(table, [])
    first = 0
    if tombstones:
        first = next((i for i, t in enumerate(tombstone_mask.to_pylist()) if not t), 0)  # type: ignore[union-attr]
    layout = layouts.layout(frame_records(frame.slice(first, 1), key_schema, value_schema)[0])
    sources = [column_source(g) for g in layout.getters]
    key_sources = [column_source(g) for g in layout.key_getters]
    if any(s is None for s in sources) or any(s is None for s in key_sources):
        return None
    reader = _ColumnReader(frame, config)
    columns = [reader.values(s) for s in sources]  # type: ignore[arg-type]
    rows = list(zip(*columns)) if columns else [()] * frame.num_rows
    last_by_key = config.insert_mode in ("upsert", "update")
    keyed = config.pk_mode != "none" and (last_by_key or config.delete_enabled)
    batch = TableBatch(table, list(layout.columns), typed=layout.typed)
    if not keyed:
        batch.rows = rows
        batch.row_records = FrameRecords(frame, range(frame.num_rows), key_schema, value_schema)  # type: ignore[assignment]
        return batch
    positions = {id(s): columns[i] for i, s in enumerate(sources)}
    key_columns = [positions[id(s)] if id(s) in positions else reader.values(s)  # type: ignore[arg-type]
                   for s in key_sources]
    keys = list(zip(*key_columns))
    flags = tombstone_mask.to_pylist() if tombstones else [False] * frame.num_rows  # type: ignore[union-attr]
    keep, deleted = surviving(keys, flags, last_by_key)
    kept = [i for i, k in enumerate(keep) if k]
    batch.rows = [rows[i] for i in kept]
    batch.row_records = FrameRecords(frame, kept, key_schema, value_schema)  # type: ignore[assignment]
    if deleted:
        if not kept:
            batch.columns = [c for c in layout.columns if c.primary]
        batch.delete_keys = list(deleted)
        batch.delete_records = FrameRecords(frame, list(deleted.values()), key_schema, value_schema)  # type: ignore[assignment]
    return batch


class _ColumnReader:
    """Reads one layout column's values from a frame, as the record path's getters would."""

    def __init__(self, frame: pa.Table, config: JdbcSinkConfig) -> None:
        self.frame = frame
        self.utc = config.db_timezone == "UTC"

    def values(self, source: ColumnSource) -> list[Any]:
        frame = self.frame
        if source.kind == "kafka":
            return frame.column(source.name).to_pylist()
        column = frame.column(source.side)
        if source.kind == "field":
            column = pc.struct_field(column, source.name)
        schema = source.schema
        convert = source.convert
        if schema is not None and schema.name == TIMESTAMP_LOGICAL_NAME and pa.types.is_timestamp(column.type):
            if self.utc:  # wall-clock time in UTC: Arrow drops the zone, no per-value conversion
                return column.cast(_UTC_MICROS).cast(_NAIVE_MICROS).to_pylist()
            values = column.cast(_NAIVE_MICROS).to_pylist()  # naive UTC: the writer moves them to db.timezone
        elif schema is not None and schema.name == TIMESTAMP_LOGICAL_NAME:
            values = [None if v is None else Timestamp.to_logical(schema, v) for v in column.to_pylist()]
        elif schema is not None and schema.name == TIME_LOGICAL_NAME and pa.types.is_integer(column.type):
            values = [None if v is None else Time.to_logical(schema, v) for v in column.to_pylist()]
        elif (schema is not None and _TYPED_AS_WRITTEN.get(getattr(semantic_type(schema), "column", None),
                                                           _never)(column.type)):
            return column.to_pylist()  # a date, a local date-time, a UTC instant: already what the writer writes
        else:
            values = column.to_pylist()
            if schema is not None and (schema.name is not None or schema.type in (Type.ARRAY, Type.MAP)):
                read = value_reader(schema)
                values = [None if v is None else read(v) for v in values]
        return values if convert is None else [convert(v) for v in values]
