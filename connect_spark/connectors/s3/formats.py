"""What an object holds: the records' values in Confluent's formats, as bytes ready to upload.

Called by the task when it uploads a rotated group of objects. Every format writes the same bytes for the
same records (Avro's sync marker is derived from the object's name, gzip carries no time stamp), so an
object re-written after a crash is identical to the first one:

* ``avro``: an Avro container file whose schema is the value's Connect schema mapped as Confluent's
  AvroData does (``avro_schema``), compressed per ``avro.codec``; extension ``.avro``.
* ``json``: one JSON document per line, as Kafka's JsonConverter writes a value without its schema
  (Timestamp as epoch ms, Date as days, Time as ms of the day, bytes and Decimal as base64, Debezium's
  semantic types as their encoding: a MicroTimestamp's microseconds, a ZonedTimestamp's text); ``.json``,
  ``.json.gz`` with ``s3.compression.type=gzip``.
* ``parquet``: the value's fields as columns, typed as the record frame types them (a MicroTimestamp a
  timestamp without zone, a VariableScaleDecimal a decimal(38,18): ``connect_spark.columnar.types``)
  (``parquet.codec``); ``.parquet`` after the codec's
  extension (``.snappy.parquet``), as Confluent names them.
* ``bytearray``: the raw value bytes, each followed by ``format.bytearray.separator``.

:func:`unwritable` says, before rotation, which values a format cannot hold (they go to ``errors.*``).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.semantic_types import from_column_value, semantic_type
from connect_spark.connectors.files.formats import value_table
from connect_spark.connectors.s3.avro_schema import avro_schema, avro_values
from connect_spark.connectors.s3.config import S3SinkConfig

__all__ = ["extension", "serialize", "unwritable"]

_PARQUET_EXTENSIONS = {"none": "", "snappy": ".snappy", "gzip": ".gz", "lz4": ".lz4hadoop", "zstd": ".zstd",
                       "brotli": ".br"}
_PYARROW_CODECS = {"none": "none", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "zstd": "zstd",
                   "brotli": "brotli"}


def extension(config: S3SinkConfig, fmt: str | None = None) -> str:
    """The object extension, with its leading dot, as Confluent's record writer providers give it, of
    ``fmt`` (``format.class`` when ``None``; ``keys.format.class`` for key objects)."""
    fmt = fmt or config.format
    if fmt == "avro":
        return ".avro"
    if fmt == "parquet":
        return _PARQUET_EXTENSIONS[config.parquet_codec] + ".parquet"
    base = ".json" if fmt == "json" else config.bytearray_extension
    return base + (".gz" if config.compression == "gzip" else "")


def unwritable(values: pa.Array, schema: Schema | None, config: S3SinkConfig, fmt: str | None = None) -> str | None:
    """Why none of ``values`` can be written in ``fmt`` (see :func:`extension`), or ``None`` when they can."""
    fmt = fmt or config.format
    if fmt == "avro" and schema is None:
        return "AvroFormat needs values with a Connect schema (a schemaless value has no Avro schema)"
    if fmt == "parquet" and not pa.types.is_struct(values.type) and schema is None:
        return "ParquetFormat needs struct values or values with a Connect schema"
    if fmt == "bytearray" and not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
                                             or pa.types.is_null(values.type)):
        return "ByteArrayFormat needs byte-array values (value.converter ByteArrayConverter)"
    return None


def serialize(values: pa.Array, schema: Schema | None, config: S3SinkConfig, name: str, fmt: str | None = None) -> bytes:
    """The object named ``name`` holding ``values`` (one per record, no nulls) in ``fmt`` (see :func:`extension`)."""
    fmt = fmt or config.format
    if fmt == "avro":
        assert schema is not None
        return _avro(values, schema, config, name)
    if fmt == "parquet":
        sink = pa.BufferOutputStream()
        pq.write_table(value_table(pa.table({"value": values})), sink,
                       compression=_PYARROW_CODECS[config.parquet_codec])
        return sink.getvalue().to_pybytes()
    if fmt == "json":
        encode = _json_converter(values.type, schema)
        text = "".join(json.dumps(encode(v), separators=(",", ":"), ensure_ascii=False) + "\n"
                       for v in values.to_pylist())
        data = text.encode("utf-8")
    else:
        separator = config.bytearray_separator.encode("utf-8")
        data = separator.join(values.to_pylist()) + separator if len(values) else b""
    return gzip.compress(data, mtime=0) if config.compression == "gzip" else data


def _avro(values: pa.Array, schema: Schema, config: S3SinkConfig, name: str) -> bytes:
    import fastavro

    parsed = fastavro.parse_schema(avro_schema(schema))
    convert = avro_values(schema)
    out = io.BytesIO()
    fastavro.writer(out, parsed, (convert(v) for v in values.to_pylist()), codec=config.avro_codec,
                    sync_marker=hashlib.md5(name.encode()).digest())
    return out.getvalue()


def _json_converter(arrow_type: pa.DataType, schema: Schema | None = None) -> Callable[[Any], Any]:
    """``to_pylist`` value → what Kafka's JsonConverter (schemas.enable=false) writes for it; ``schema`` (the
    column's Connect schema, when known) names Debezium's semantic types, written as their encoding."""
    convert = _json_part(arrow_type, schema)
    return convert if convert is not None else (lambda v: v)


def _semantic_json(schema: Schema | None) -> Callable[[Any], Any] | None:
    """For a Debezium semantic type: its typed column value → its Connect encoding as JSON (bytes in base64)."""
    semantic = semantic_type(schema)
    if semantic is None:
        return None
    if semantic.column == "binary":
        return lambda v: None if v is None else base64.b64encode(v).decode()
    if semantic.column in ("int", "bigint", "string"):
        return lambda v: v
    if semantic.column == "decimal":
        def decimal_json(v: Any) -> Any:
            if v is None:
                return None
            parts = from_column_value(semantic, v)  # {"scale", "value"}
            return {"scale": parts.get("scale"), "value": base64.b64encode(parts.get("value")).decode()}
        return decimal_json
    return lambda v: None if v is None else from_column_value(semantic, v)


def _child(schema: Schema | None, kind: str, name: str = "") -> Schema | None:
    """A struct field's, an array's element or a map's key/value schema of ``schema`` (``None`` when unknown)."""
    if schema is None:
        return None
    if kind == "field":
        field = schema.field(name) if schema.type is Type.STRUCT else None
        return None if field is None else field.schema
    if kind == "key":
        return schema.key_schema if schema.type is Type.MAP else None
    return schema.value_schema if schema.type in (Type.ARRAY, Type.MAP) else None


def _json_part(arrow_type: pa.DataType, schema: Schema | None = None) -> Callable[[Any], Any] | None:
    semantic = _semantic_json(schema)
    if semantic is not None:
        return semantic
    if pa.types.is_timestamp(arrow_type):
        return lambda v: None if v is None else _epoch_ms(v)
    if pa.types.is_date(arrow_type):
        return lambda v: None if v is None else (v.toordinal() - 719163)
    if pa.types.is_time(arrow_type):
        return lambda v: None if v is None else (
            ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000)
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return lambda v: None if v is None else base64.b64encode(v).decode()
    if pa.types.is_decimal(arrow_type):
        return lambda v: None if v is None else base64.b64encode(_unscaled_bytes(v)).decode()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = _json_part(arrow_type.value_type, _child(schema, "value"))
        return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
    if pa.types.is_map(arrow_type):
        key = _json_part(arrow_type.key_type, _child(schema, "key")) or (lambda x: x)
        value = _json_part(arrow_type.item_type, _child(schema, "value")) or (lambda x: x)
        if pa.types.is_string(arrow_type.key_type):
            return lambda v: None if v is None else {k: value(x) for k, x in v}
        return lambda v: None if v is None else [[key(k), value(x)] for k, x in v]
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _json_part(f.type, _child(schema, "field", f.name))) for f in arrow_type]
        if all(c is None for _, c in fields):
            return None
        return lambda v: None if v is None else {n: (v[n] if c is None else c(v[n])) for n, c in fields}
    return None


def _epoch_ms(value: Any) -> int:
    import datetime

    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _unscaled_bytes(value: Any) -> bytes:
    """A Decimal's unscaled value as big-endian two's complement bytes (Connect's Decimal encoding)."""
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)
