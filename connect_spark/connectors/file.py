"""Kafka's FileStreamSinkConnector: one line per record, written exactly as Kafka Connect writes it.

Kafka's ``FileStreamSinkTask`` opens ``file`` for appending (created when missing; standard output
when ``file`` is not set), prints ``String.valueOf(record.value())`` followed by a newline for every
record in ``put``, and flushes the stream in ``flush`` (called by the default ``pre_commit``), so
its ``pre_commit`` returns every offset it was given. Nothing else: no key, no headers, ``null`` for a
tombstone. A ``connect-file-sink.properties`` from a Kafka distribution runs unchanged::

    name=local-file-sink
    connector.class=FileStreamSink
    tasks.max=1
    file=test.sink.txt
    topics=connect-test

The string form follows Java's ``toString`` of the Connect value: ``Struct{a=1,b=x}`` (null fields
left out), lists as ``[1, 2]``, maps as ``{k=v, k2=v2}`` in the iteration order of the Java map Kafka Connect
would hold (a ``HashMap`` from ``JsonConverter``, the maps the transforms rebuild: see
:mod:`connect_spark.api.data.java_map`), floats as ``Double.toString``/``Float.toString``, ``true``/``false``,
``BigDecimal.toString`` for decimals, and ``java.util.Date.toString`` in UTC for Date/Time/Timestamp
values. Byte arrays print as Java prints them (``[B@`` and a hash): the hash here is derived from the
content, not an identity hash.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import sys
import zlib
from typing import IO, Any, Collection, Mapping

from connect_spark.api.connector import SinkConnector
from connect_spark.api.data.java_semantics import java_double_str, java_float_str
from connect_spark.api.data.java_map import java_items
from connect_spark.api.data.schema import Schema, Type
from connect_spark.api.data.struct import Struct
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType

__all__ = ["FileStreamSinkConnector", "FileStreamSinkTask", "java_string", "FILE_CONFIG"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
VERSION = "4.1.1"

CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG, ConfigType.STRING, None, importance=Importance.HIGH,
    doc="Destination filename. If not specified, the standard output will be used.",
)


class FileStreamSinkTask(SinkTask):
    """Appends ``String.valueOf(value)`` of each record as one line; flushes on ``flush``."""

    reads_headers = False  # only the value is written

    def __init__(self) -> None:
        self.filename: str | None = None
        self.out: IO[str] | None = None

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: opens ``file`` for appending (UTF-8), or uses standard output."""
        self.filename = CONFIG_DEF.parse(props)[FILE_CONFIG]
        if self.filename is None:
            self.out = sys.stdout
            return
        try:
            self.out = open(self.filename, "a", encoding="utf-8", newline="\n")
        except OSError as e:
            raise ConnectException(f"Couldn't find or create file '{self.filename}' for FileStreamSinkTask") from e

    def put(self, records: Collection[SinkRecord]) -> None:
        """Called by the runtime with each batch: one line per record, buffered until ``flush``."""
        assert self.out is not None
        if not records:
            return
        # one write per batch; a str value (StringConverter) is its own String.valueOf
        lines = [r.value if type(r.value) is str else java_string(r.value, r.value_schema) for r in records]
        lines.append("")  # every line ends with a newline
        self.out.write("\n".join(lines))

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Called by the default ``pre_commit``: makes every line written so far durable in the file."""
        if self.out is not None:
            self.out.flush()

    def stop(self) -> None:
        if self.out is not None and self.out is not sys.stdout:
            self.out.close()
        self.out = None


class FileStreamSinkConnector(SinkConnector):
    """Kafka's FileStreamSinkConnector: every task gets the connector's configuration."""

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG_DEF


# --- Java's String.valueOf for Connect values ----------------------------------------------------

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def java_string(value: Any, schema: Schema | None = None) -> str:
    """``String.valueOf(value)`` of a Connect value as the JVM prints it (see the module docstring).

    Args:
        value: the Connect value.
        schema: its schema when known; tells FLOAT32 from FLOAT64.
    """
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if schema is not None and schema.type is Type.FLOAT32:
            return java_float_str(value)
        return java_double_str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Struct):
        parts = []
        for f in value.schema.fields:
            field_value = value.get_without_default(f)
            if field_value is not None:
                parts.append(f"{f.name}={java_string(field_value, f.schema)}")
        return "Struct{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        element = _child(schema, "value_schema")
        return "[" + ", ".join(java_string(v, element) for v in value) + "]"
    if isinstance(value, dict):
        key_schema, value_schema = _child(schema, "key_schema"), _child(schema, "value_schema")
        return "{" + ", ".join(f"{java_string(k, key_schema)}={java_string(v, value_schema)}"
                               for k, v in java_items(value)) + "}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"[B@{zlib.crc32(bytes(value)):x}"
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return _java_date(value)
    return str(value)


def _child(schema: Schema | None, attribute: str) -> Schema | None:
    if schema is None:
        return None
    try:
        return getattr(schema, attribute)
    except Exception:
        return None


def _java_date(value: datetime.date | datetime.time) -> str:
    """``java.util.Date.toString()`` in UTC: ``Mon Jan 01 00:00:00 UTC 2024``."""
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        moment = moment.astimezone(datetime.timezone.utc)
    elif isinstance(value, datetime.date):
        moment = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.timezone.utc)
    else:
        moment = datetime.datetime.combine(_EPOCH.date(), value.replace(tzinfo=None), datetime.timezone.utc)
    return (f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} UTC {moment.year}")


