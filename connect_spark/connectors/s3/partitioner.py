"""Confluent's partitioners: the encoded partition (the folder) of every record, computed with Arrow.

Called by the task for each partition's rows before rotation. Each partitioner gives, per row, the
encoded partition string or null for a row it cannot place (a missing partition field or timestamp),
which the task reports under ``errors.*``:

* ``default``: ``partition=<kafka partition>``;
* ``field``: ``<field>=<value>`` per ``partition.field.name``, joined by ``directory.delim`` (numbers,
  strings and booleans, as Confluent accepts);
* ``time`` / ``hourly`` / ``daily``: the record's timestamp (``timestamp.extractor``) floored to
  ``partition.duration.ms`` in ``timezone``'s local time and formatted with ``path.format`` (a Joda-Time
  pattern, translated once by :func:`strftime_pattern`).

The object's folder is ``<topic><directory.delim><encoded partition>`` (Confluent's
``generatePartitionedPath``).
"""

from __future__ import annotations

import time
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.errors import ConfigException
from connect_spark.connectors.s3.config import PATH_FORMAT, S3SinkConfig

__all__ = ["Partitioner", "strftime_pattern", "record_times"]

# Joda-Time pattern letters → strftime (numeric fields only: locale-independent).
_JODA = {"YYYY": "%Y", "yyyy": "%Y", "xxxx": "%Y", "YY": "%y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H",
         "mm": "%M", "ss": "%S", "DDD": "%j", "ww": "%V"}


def strftime_pattern(path_format: str) -> str:
    """The strftime pattern of a Joda-Time ``path.format`` (quoted text kept literally).

    Raises:
        ConfigException: a pattern letter this translation does not support.
    """
    out: list[str] = []
    i = 0
    while i < len(path_format):
        char = path_format[i]
        if char == "'":
            end = path_format.find("'", i + 1)
            if end < 0:
                raise ConfigException("Unterminated quote in the path format", PATH_FORMAT, path_format)
            out.append("'" if end == i + 1 else path_format[i + 1:end].replace("%", "%%"))
            i = end + 1
            continue
        if char.isalpha():
            run = i
            while run < len(path_format) and path_format[run] == char:
                run += 1
            token = path_format[i:run]
            if token not in _JODA:
                raise ConfigException(f"Pattern {token!r} is not supported (supported: {', '.join(_JODA)})",
                                      PATH_FORMAT, path_format)
            out.append(_JODA[token])
            i = run
            continue
        out.append("%%" if char == "%" else char)
        i += 1
    return "".join(out)


def record_times(rows: pa.Table, config: S3SinkConfig, clock: Callable[[], float] = time.time) -> pa.Array:
    """Each row's timestamp in epoch ms (int64, null when the record has none), per ``timestamp.extractor``."""
    if config.extractor == "wallclock":
        return pa.array([int(clock() * 1000)] * rows.num_rows, pa.int64())
    if config.extractor == "record":
        column = rows.column("timestamp").combine_chunks()
    else:
        column = _nested_field(rows.column("value").combine_chunks(), config.timestamp_field)
        if column is None:
            return pa.nulls(rows.num_rows, pa.int64())
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            column = pc.cast(column, pa.timestamp("ms", tz="UTC"), safe=False)
    if pa.types.is_timestamp(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("ms", tz=column.type.tz), safe=False), pa.int64())
    if pa.types.is_integer(column.type):
        return pc.cast(column, pa.int64())
    return pa.nulls(rows.num_rows, pa.int64())


def _nested_field(column: pa.Array, dotted: str) -> pa.Array | None:
    for name in dotted.split("."):
        if not pa.types.is_struct(column.type) or column.type.get_field_index(name) < 0:
            return None
        column = pc.struct_field(column, name)
    return column


class Partitioner:
    """Encodes the partition of rows for one connector's ``partitioner.class``."""

    def __init__(self, config: S3SinkConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.pattern = strftime_pattern(config.path_format) if config.time_based else ""

    def folder(self, topic: str, encoded: str) -> str:
        """``<topic><delim><encoded>`` (Confluent's ``generatePartitionedPath``)."""
        return f"{topic}{self.config.directory_delim}{encoded}"

    def encode(self, rows: pa.Table, kafka_partition: int, times: pa.Array | None) -> pa.Array:
        """The encoded partition of each row (string, null where it cannot be placed).

        ``times``: the rows' timestamps from :func:`record_times` (time partitioners only).
        """
        kind = self.config.partitioner
        if kind == "default":
            return pa.repeat(pa.scalar(f"partition={kafka_partition}"), rows.num_rows)
        if kind == "field":
            return self._fields(rows)
        assert times is not None
        return self._times(times)

    def _fields(self, rows: pa.Table) -> pa.Array:
        value = rows.column("value").combine_chunks()
        parts = []
        for name in self.config.partition_fields:
            column = _nested_field(value, name)
            if column is None or not (pa.types.is_integer(column.type) or pa.types.is_string(column.type)
                                      or pa.types.is_boolean(column.type)):
                return pa.nulls(rows.num_rows, pa.string())
            parts.append(pc.binary_join_element_wise(f"{name.split('.')[-1]}=", pc.cast(column, pa.string()), ""))
        if len(parts) == 1:
            return parts[0]
        return pc.binary_join_element_wise(*parts, self.config.directory_delim)

    def _times(self, times: pa.Array) -> pa.Array:
        zoned = pc.cast(times, pa.timestamp("ms", tz=self.config.timezone))
        local = pc.cast(pc.local_timestamp(zoned), pa.int64())
        duration = self.config.partition_duration_ms
        bucket = pc.subtract(local, _floor_mod(local, duration))
        naive = pc.cast(pc.cast(bucket, pa.timestamp("ms")), pa.timestamp("s"), safe=False)
        return pc.strftime(naive, format=self.pattern)


def _floor_mod(values: pa.Array, divisor: int) -> pa.Array:
    """``values mod divisor`` rounded towards minus infinity (times before 1970 floor correctly)."""
    remainder = pc.subtract(values, pc.multiply(pc.divide(values, divisor), divisor))
    return pc.if_else(pc.less(remainder, 0), pc.add(remainder, divisor), remainder)
