"""Record frames (Arrow tables with :data:`~connect_spark.api.bulk.RECORD_FRAME_COLUMNS`) ⇄ ``SinkRecord``.

Called by the runtime at the border between the two conversion paths:

* :func:`frame_to_records` — a record task fed by a vectorized plan: the plan's good rows arrive as
  Arrow and the task wants ``SinkRecord`` objects. Values are rebuilt from ``to_pylist`` output with a
  converter compiled once per schema (Structs are filled without re-validation: the plan only lets
  through rows whose values the per-record path would have accepted).
* :func:`fit_records_to_frame` — a bulk task fed by the per-record fallback: converted records back into
  the record frame layout, with the records whose key or value does not fit the frame's columns set
  apart (the runtime reports them under ``errors.*``); :func:`records_to_frame` is its strict form.

Headers travel raw in a frame (``array<struct<key, value binary>>``); ``frame_to_records`` converts
them with the connector's header converter, as the per-record path does.

A frame may carry the Connect schemas of its key and value columns in their Arrow field metadata
(:func:`with_connect_schemas`, set by the runtime on every frame it hands an ``ArrowSinkTask``);
:func:`connect_schemas` reads them back.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.converters import HeaderConverter
from connect_spark.api.data import Schema, Struct, Type
from connect_spark.api.data.logical import Time, Timestamp
from connect_spark.api.data.schema import TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME
from connect_spark.api.data.semantic_types import from_column_value, semantic_type
from connect_spark.api.errors import DataException
from connect_spark.api.records import Header, Headers, SinkRecord, TimestampType
from connect_spark.columnar.record_column import fit_column, type_conflict
from connect_spark.streaming.raw_batch import HEADERS_ARROW_TYPE

__all__ = ["frame_to_records", "records_to_frame", "fit_records_to_frame", "split_conflicting", "RecordFrame", "value_reader",
           "FRAME_HEADERS_TYPE", "SCHEMA_METADATA_KEY", "with_connect_schemas", "connect_schemas"]

#: The Arrow type of a record frame's ``headers`` column.
FRAME_HEADERS_TYPE = HEADERS_ARROW_TYPE

#: The Arrow field metadata key of a frame's ``key`` / ``value`` column holding its Connect schema, in
#: the JSON form Kafka's JsonConverter writes schemas in.
SCHEMA_METADATA_KEY = b"connect.schema"

_SAME: Any = object()
_TIMESTAMP_TYPES = {t.value: t for t in TimestampType}


def _identity(value: Any) -> Any:
    return value


def value_reader(schema: Schema | None) -> Callable[[Any], Any]:
    """A function turning one ``to_pylist`` value of a frame column into the Connect value for ``schema``.

    ``None`` (schemaless data) turns structs into dicts, as a schemaless JsonConverter produces.
    Null stays ``None``. Debezium's semantic types come back to their Connect encoding
    (:func:`~connect_spark.api.data.semantic_types.from_column_value`).
    """
    if schema is None:
        return _schemaless
    found = semantic_type(schema)
    if found is not None:
        if found.column in ("int", "bigint", "string", "binary"):
            return _identity
        return lambda v: None if v is None else from_column_value(found, v, schema)
    name = schema.name
    if name == TIME_LOGICAL_NAME:
        return lambda v: Time.to_logical(schema, v) if isinstance(v, int) else v
    if name == TIMESTAMP_LOGICAL_NAME:
        return lambda v: v.astimezone(datetime.timezone.utc) if isinstance(v, datetime.datetime) \
            else (None if v is None else Timestamp.to_logical(schema, v))
    t = schema.type
    if t is Type.STRUCT:
        fields = [(f.name, value_reader(f.schema)) for f in schema.fields]
        if all(read is _identity for _, read in fields):
            names = [n for n, _ in fields]

            def read_flat_struct(v: Any) -> Any:
                if v is None:
                    return None
                return Struct.from_valid_values(schema, [v[n] for n in names])
            return read_flat_struct

        def read_struct(v: Any) -> Any:
            if v is None:
                return None
            return Struct.from_valid_values(schema, [read(v[n]) for n, read in fields])
        return read_struct
    if t is Type.ARRAY:
        read_element = value_reader(schema.value_schema)
        if read_element is _identity:
            return _identity
        return lambda v: None if v is None else [read_element(x) for x in v]
    if t is Type.MAP:
        read_key, read_value = value_reader(schema.key_schema), value_reader(schema.value_schema)
        return lambda v: None if v is None else {read_key(k): read_value(x) for k, x in v}
    return _identity


def _schemaless(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], tuple):  # an Arrow map's pairs
        return {k: _schemaless(v) for k, v in value}
    if isinstance(value, dict):
        return {k: _schemaless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_schemaless(v) for v in value]
    return value


def _has_map(arrow_type: pa.DataType) -> bool:
    if pa.types.is_map(arrow_type):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_has_map(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _has_map(arrow_type.value_type)
    return False


def _schemaless_reader(arrow_type: pa.DataType) -> Callable[[Any], Any]:
    """Arrow's ``to_pylist`` already gives fresh dicts and lists; only maps (pairs) need rebuilding."""
    return _schemaless if _has_map(arrow_type) else _identity


def _millis(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Epoch milliseconds of a timestamp column (floored, as Kafka's timestamps are whole millis)."""
    if not pa.types.is_timestamp(column.type):
        return column.to_pylist()
    ints = pc.cast(column, pa.int64()).to_pylist()
    unit = column.type.unit
    if unit == "ms":
        return ints
    if unit == "s":
        return [None if x is None else x * 1000 for x in ints]
    per_ms = 1000 if unit == "us" else 1_000_000
    return [None if x is None else x // per_ms for x in ints]


def frame_to_records(
    table: pa.Table,
    key_schema: Schema | None,
    value_schema: Schema | None,
    *,
    null_key_schema: Schema | None = _SAME,
    null_value_schema: Schema | None = _SAME,
    header_converter: HeaderConverter | None = None,
) -> list[SinkRecord]:
    """``SinkRecord``s for the rows of a record frame, in row order.

    Args:
        table: a record frame (the columns of ``RECORD_FRAME_COLUMNS``).
        key_schema, value_schema: the Connect schemas of the key and value columns (``None`` for
            schemaless data).
        null_key_schema, null_value_schema: the schema a record with a null key / value carries
            (a converter decides: a StringConverter gives OPTIONAL_STRING, a JsonConverter none);
            the same as ``key_schema`` / ``value_schema`` when not given.
        header_converter: turns the raw header bytes into Connect headers; Kafka's default
            (SimpleHeaderConverter) when not given.
    """
    if header_converter is None:
        from connect_spark.converters.header import SimpleHeaderConverter
        header_converter = SimpleHeaderConverter()
    null_key_schema = key_schema if null_key_schema is _SAME else null_key_schema
    null_value_schema = value_schema if null_value_schema is _SAME else null_value_schema
    col = table.column
    read_key = _schemaless_reader(col("key").type) if key_schema is None else value_reader(key_schema)
    read_value = _schemaless_reader(col("value").type) if value_schema is None else value_reader(value_schema)
    topics, partitions, offsets = col("topic").to_pylist(), col("partition").to_pylist(), col("offset").to_pylist()
    timestamps, ts_types = _millis(col("timestamp")), col("timestamp_type").to_pylist()
    keys, values, headers = col("key").to_pylist(), col("value").to_pylist(), col("headers").to_pylist()
    o_topics, o_partitions = col("original_topic").to_pylist(), col("original_partition").to_pylist()
    o_offsets = col("original_offset").to_pylist()
    no_type = TimestampType.NO_TIMESTAMP_TYPE
    records = []
    for i in range(table.num_rows):
        key, value, raw_headers, original_topic = keys[i], values[i], headers[i], o_topics[i]
        converted = Headers()
        if raw_headers:
            for h in raw_headers:
                hv = header_converter.to_connect_header(original_topic, h["key"], h["value"])
                converted.add_header(Header(h["key"], hv.value, hv.schema))
        timestamp = timestamps[i]
        records.append(SinkRecord(
            topic=topics[i],
            kafka_partition=partitions[i],
            key_schema=key_schema if key is not None else null_key_schema,
            key=read_key(key) if key is not None else None,
            value_schema=value_schema if value is not None else null_value_schema,
            value=read_value(value) if value is not None else None,
            kafka_offset=offsets[i],
            timestamp=timestamp,
            timestamp_type=no_type if timestamp is None else _TIMESTAMP_TYPES.get(ts_types[i], no_type),
            headers=converted,
            original_topic=original_topic,
            original_kafka_partition=o_partitions[i],
            original_kafka_offset=o_offsets[i],
        ))
    return records


@dataclass
class RecordFrame:
    """A record frame built from records, and the records that could not be part of it.

    Attributes:
        table: the frame (``RECORD_FRAME_COLUMNS``) of the records that fit, in the order given.
        misfits: ``(record, reason)`` for each record whose key or value does not fit the frame's
            column (see :mod:`~connect_spark.columnar.record_column`); the reason starts with the
            record's ``topic[partition]@offset`` and names the field, the value's type and the column's.
        value_schema: the Connect schema of the value column (merged over the records), ``None`` when
            schemaless.
    """

    table: pa.Table
    misfits: list[tuple[SinkRecord, str]]
    value_schema: Schema | None = None
    key_schema: Schema | None = None


def fit_records_to_frame(records: Sequence[SinkRecord], header_converter: HeaderConverter | None = None) -> RecordFrame:
    """The record frame of ``records``, leaving out (and naming) those whose key or value does not fit.

    Called by the runtime where a bulk task's frame is built from converted records. Key and value
    columns cover every record's schema where the schemas merge, and the shape most records have for
    schemaless data (:func:`~connect_spark.columnar.record_column.fit_column`). Headers are written back to
    bytes with ``header_converter`` (SimpleHeaderConverter by default).
    """
    if header_converter is None:
        from connect_spark.converters.header import SimpleHeaderConverter
        header_converter = SimpleHeaderConverter()
    key = fit_column([r.key for r in records], [r.key_schema for r in records], "key")
    value = fit_column([r.value for r in records], [r.value_schema for r in records], "value")
    reasons: dict[int, str] = {}
    for misfit in key.misfits + value.misfits:
        reasons.setdefault(misfit.index, misfit.reason)
    table = _frame(records, key.array, value.array, header_converter)
    if not reasons:
        return RecordFrame(table, [], value.schema, key.schema)
    keep = pa.array([i not in reasons for i in range(len(records))])
    misfits = [(records[i], f"{records[i].coordinates()}: {reasons[i]}") for i in sorted(reasons)]
    return RecordFrame(table.filter(keep), misfits, value.schema, key.schema)


def split_conflicting(records: Sequence[SinkRecord], key_type: pa.DataType, value_type: pa.DataType
                      ) -> tuple[list[SinkRecord], list[tuple[SinkRecord, str]]]:
    """``records`` (converted per record) parted into those that can join a frame whose key and value
    columns have ``key_type`` and ``value_type``, and those that conflict with them, with the reason.

    Called where the records of a batch that fell back to the per-record path are put beside the rows
    Spark converted: a schemaless key or value of another kind than the frame's column (a string where the
    others hold a double) is a misfit of the whole batch, so it is reported at once instead of making the
    batch be rebuilt from records. Fields the columns lack are not conflicts (the frame may gain a column);
    records with Connect schemas are never parted here (their schemas are merged when the frame is built).
    """
    fitting: list[SinkRecord] = []
    conflicts: list[tuple[SinkRecord, str]] = []
    for record in records:
        reason = None
        if record.key_schema is None and not pa.types.is_null(key_type):
            reason = type_conflict(record.key, key_type, "key")
        if reason is None and record.value_schema is None and not pa.types.is_null(value_type):
            reason = type_conflict(record.value, value_type, "value")
        if reason is None:
            fitting.append(record)
        else:
            conflicts.append((record, f"{record.coordinates()}: {reason}"))
    return fitting, conflicts


def records_to_frame(records: Sequence[SinkRecord], header_converter: HeaderConverter | None = None) -> pa.Table:
    """A record frame holding ``records`` (as a bulk task receives them); see :func:`fit_records_to_frame`.

    Raises:
        DataException: when a record does not fit the frame (the message names the first one).
    """
    built = fit_records_to_frame(records, header_converter)
    if built.misfits:
        raise DataException(built.misfits[0][1])
    return built.table


def _frame(records: Sequence[SinkRecord], key: pa.Array, value: pa.Array, header_converter: HeaderConverter) -> pa.Table:
    ts_type = pa.timestamp("us", tz="UTC")
    headers = [[{"key": h.key, "value": header_converter.from_connect_header(r.topic, h.key, h.schema, h.value)}
                for h in r.headers] for r in records]
    columns = {
        "topic": pa.array([r.topic for r in records], pa.string()),
        "partition": pa.array([r.kafka_partition for r in records], pa.int32()),
        "offset": pa.array([r.kafka_offset for r in records], pa.int64()),
        "timestamp": pa.array([None if r.timestamp is None else r.timestamp * 1000 for r in records],
                              pa.int64()).cast(ts_type),
        "timestamp_type": pa.array([r.timestamp_type.value for r in records], pa.int32()),
        "key": key,
        "value": value,
        "headers": pa.array(headers, FRAME_HEADERS_TYPE),
        "original_topic": pa.array([r.original_topic for r in records], pa.string()),
        "original_partition": pa.array([r.original_kafka_partition for r in records], pa.int32()),
        "original_offset": pa.array([r.original_kafka_offset for r in records], pa.int64()),
    }
    return pa.table(columns)


_schema_json: Any = None
_schemas_by_text: dict[bytes, Schema | None] = {}


def _schema_codec() -> Any:
    global _schema_json
    if _schema_json is None:
        from connect_spark.converters.json import JsonConverter

        _schema_json = JsonConverter()
        _schema_json.configure({"schemas.enable": "true"}, False)
    return _schema_json


def with_connect_schemas(table: pa.Table, key_schema: Schema | None, value_schema: Schema | None) -> pa.Table:
    """``table`` (a record frame) with ``key_schema`` / ``value_schema`` in its key / value field metadata
    (under :data:`SCHEMA_METADATA_KEY`; a ``None`` schema sets nothing). Called by the runtime before
    ``put_arrow``; the data is not copied."""
    import json

    fields = list(table.schema)
    changed = False
    for name, schema in (("key", key_schema), ("value", value_schema)):
        if schema is None:
            continue
        at = table.schema.get_field_index(name)
        text = json.dumps(_schema_codec().as_json_schema(schema), separators=(",", ":")).encode()
        fields[at] = fields[at].with_metadata({SCHEMA_METADATA_KEY: text})
        _schemas_by_text.setdefault(text, schema)
        changed = True
    return table.cast(pa.schema(fields, table.schema.metadata)) if changed else table


def connect_schemas(table: pa.Table) -> tuple[Schema | None, Schema | None]:
    """The Connect schemas of a record frame's key and value columns (called by Arrow sink tasks).

    Read from the fields' metadata (:func:`with_connect_schemas`; the same text always gives the same
    ``Schema`` object, so tasks may cache by identity). ``None`` for a column without one: schemaless data
    (e.g. JSON without schemas), whose Arrow type was inferred from the values.
    """
    import json

    found: list[Schema | None] = []
    for name in ("key", "value"):
        text = (table.schema.field(name).metadata or {}).get(SCHEMA_METADATA_KEY)
        if text is not None and text not in _schemas_by_text:
            _schemas_by_text[text] = _schema_codec().as_connect_schema(json.loads(text))
        found.append(None if text is None else _schemas_by_text[text])
    return found[0], found[1]
