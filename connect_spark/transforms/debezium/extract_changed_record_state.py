"""ExtractChangedRecordState: headers naming the changed and unchanged columns of an update.

Debezium's ``io.debezium.transforms.ExtractChangedRecordState``, as Debezium 3.6.1 has it.

For a change event with both ``before`` and ``after``, the columns of ``after`` are compared with the
same columns of ``before`` (values as they are, no defaults; compared as Java's ``Objects.equals``
compares them, so a ``bytes`` column always counts as changed and ``NaN`` equals ``NaN``). The names of
the columns that differ go in the header ``header.changed.name``, the others in
``header.unchanged.name``, each an optional array of optional strings whose schema is named after the
header; a header whose name is not set (or blank) is not added. A change event without ``before`` or
``after`` (an insert, a delete, a snapshot read) gets both headers, empty. Tombstones and records that
are no change events pass unchanged.

Chained before HeaderToValue and ExtractNewRecordState, the lists end up in the row.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data.java_semantics import is_blank
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.settings import raw_string
from connect_spark.transforms.util import BaseTransformation, require_struct

__all__ = ["ExtractChangedRecordState", "java_equals"]

HEADER_CHANGED_NAME = "header.changed.name"
HEADER_UNCHANGED_NAME = "header.unchanged.name"


def _config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(HEADER_CHANGED_NAME, ConfigType.STRING, None, importance=Importance.LOW,
                doc="The header that lists the changed columns; not set: no such header.")
        .define(HEADER_UNCHANGED_NAME, ConfigType.STRING, None, importance=Importance.LOW,
                doc="The header that lists the unchanged columns; not set: no such header.")
    )


def _list_schema(name: str) -> Schema:
    return SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().name(name).build()


def java_equals(a: Any, b: Any) -> bool:
    """``Objects.equals(a, b)`` for Connect values as Java holds them.

    A byte array equals only itself (two columns never hold the same array), doubles compare as
    ``Double.equals`` (``NaN`` equals ``NaN``, ``0.0`` differs from ``-0.0``), lists and maps element by
    element the same way, structs by schema and values (arrays in them by content, as ``Arrays.deepEquals``).
    """
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (bytes, bytearray, memoryview)) or isinstance(b, (bytes, bytearray, memoryview)):
        return False
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is not type(b) and not (isinstance(a, Struct) and isinstance(b, Struct)):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(java_equals(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(java_equals(a[k], b[k]) for k in a)
    return bool(a == b)


class ExtractChangedRecordState(BaseTransformation):
    """Add headers listing which columns an update changed (see the module docstring).

    Attributes:
        header_changed_name, header_unchanged_name: the header names, or ``None``.
    """

    kafka_class_name = "io.debezium.transforms.ExtractChangedRecordState"

    def __init__(self) -> None:
        self.header_changed_name: str | None = None
        self.header_unchanged_name: str | None = None
        self._changed_schema: Schema | None = None
        self._unchanged_schema: Schema | None = None

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.parse_config(configs)
        self.header_changed_name = raw_string(configs, HEADER_CHANGED_NAME)
        self.header_unchanged_name = raw_string(configs, HEADER_UNCHANGED_NAME)
        self._changed_schema = None if self.header_changed_name is None else _list_schema(self.header_changed_name)
        self._unchanged_schema = (None if self.header_unchanged_name is None
                                  else _list_schema(self.header_unchanged_name))

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Called by the runtime for every record."""
        if record.value is None or not envelope.is_valid_envelope(record):
            return record
        event = require_struct(record.value, "Record value should be struct.")
        after = event.get(envelope.AFTER)
        before = event.get(envelope.BEFORE)
        changed: list[str] = []
        unchanged: list[str] = []
        if after is not None and before is not None:
            after_row = require_struct(after, "After value should be struct.")
            before_row = require_struct(before, "Before value should be struct.")
            for field in after_row.schema.fields:
                same = java_equals(after_row.get_without_default(field.name),
                                   before_row.get_without_default(field.name))
                (unchanged if same else changed).append(field.name)
        headers = record.headers.copy()
        if not is_blank(self.header_changed_name):
            headers.add(self.header_changed_name, changed, self._changed_schema)  # type: ignore[arg-type]
        if not is_blank(self.header_unchanged_name):
            headers.add(self.header_unchanged_name, unchanged, self._unchanged_schema)  # type: ignore[arg-type]
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp, headers)
