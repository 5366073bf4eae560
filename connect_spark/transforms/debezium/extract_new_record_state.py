"""ExtractNewRecordState: a change event becomes the row it carries (``io.debezium.transforms.ExtractNewRecordState``).

For a Debezium change event (a value whose schema is named ``*.Envelope``) the record's value becomes the
``after`` row; deletes, tombstones and truncates are handled by ``delete.tombstone.handling.mode`` (see
:mod:`connect_spark.transforms.debezium.delete_handling`). Every other record (heartbeats, schema change
events, schemaless values, anything without an envelope schema) passes unchanged, except a tombstone,
which the mode decides on whatever its key.

Per record, in Debezium's order:

1. ``add.headers``: for a change event or a tombstone, add a header per entry (a tombstone only gets the
   ``op`` entry, with ``d``); headers already on the record are kept;
2. a tombstone is dropped or kept by the mode; a record that is no change event passes;
3. a change event with neither ``before`` nor ``after`` is dropped;
4. a delete (``after`` null): the mode's record; then ``route.by.field`` (read from ``before``), the
   ``drop.fields.header.name`` fields, and ``add.fields`` when the result has a value;
5. otherwise (insert, update, snapshot read): the ``after`` row; then ``route.by.field``, ``add.fields``,
   and the ``drop.fields.header.name`` fields.

The row is rebuilt for ``add.fields`` even when it lists nothing: its schema is a required copy of
``after``'s, its values taken as they are (no defaults). The new schema is cached per row schema and
operation (64 entries), as Debezium caches it.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data.java_semantics import is_blank
from connect_spark.api.errors import DataException
from connect_spark.api.records import Headers, SinkRecord
from connect_spark.config.definition import ConfigDef, Importance, ValidString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.delete_handling import (
    DEFAULT_MODE,
    MODES,
    DeleteHandling,
    ExtractRecordStrategy,
)
from connect_spark.transforms.debezium.field_reference import FieldReference, field_references
from connect_spark.transforms.debezium.settings import java_list, raw_string
from connect_spark.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connect_spark.transforms.util import BaseTransformation, copy_schema_basics, require_struct

__all__ = ["ExtractNewRecordState"]

log = logging.getLogger(__name__)

HANDLE_TOMBSTONE_DELETES = "delete.tombstone.handling.mode"
ROUTE_BY_FIELD = "route.by.field"
ADD_FIELDS_PREFIX = "add.fields.prefix"
ADD_FIELDS = "add.fields"
ADD_HEADERS_PREFIX = "add.headers.prefix"
ADD_HEADERS = "add.headers"
DROP_FIELDS_HEADER = "drop.fields.header.name"
DROP_FIELDS_FROM_KEY = "drop.fields.from.key"
DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE = "drop.fields.keep.schema.compatible"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
DROP_TOMBSTONES = "drop.tombstones"
HANDLE_DELETES = "delete.handling.mode"

METADATA_FIELD_PREFIX = "__"
PURPOSE = "source field insertion"
SCHEMA_CACHE_SIZE = 64


class _FieldReferences:
    """Every entry of ``add.fields``/``add.headers`` parses (``[struct.]field[:new_name]``)."""

    def __call__(self, name: str, value: Any) -> None:
        for entry in value:
            FieldReference("", entry, name)

    def __str__(self) -> str:
        return "list of [struct.]field[:new_name]"


def _config_def() -> ConfigDef:
    entries_doc = ("Example: <code>version,connector,source.ts_ms</code> adds {what} <code>__version</code>, "
                   "<code>__connector</code> and <code>__source_ts_ms</code>; <code>source.ts_ms:event_ts</code> "
                   "names it <code>__event_ts</code> (the new name is case-sensitive). A plain name is a field of "
                   "<code>source</code>, except <code>op</code>, <code>ts_ms</code>, <code>ts_us</code>, "
                   "<code>ts_ns</code> (of the event) and <code>id</code>, <code>total_order</code>, "
                   "<code>data_collection_order</code> (of <code>transaction</code>). Fields the event lacks are "
                   "left out.")
    return (
        ConfigDef()
        .define(HANDLE_TOMBSTONE_DELETES, ConfigType.STRING, DEFAULT_MODE,
                validator=ValidString.in_(*MODES, case_insensitive=True), importance=Importance.MEDIUM,
                doc="How to handle delete events and tombstones. <code>drop</code>: drop both. "
                    "<code>tombstone</code> (default): a delete becomes a record with a null value, tombstones are "
                    "dropped. <code>rewrite</code>: a delete becomes its <code>before</code> row with "
                    "<code>__deleted=true</code> (other rows get <code>__deleted=false</code>), tombstones are "
                    "dropped. <code>rewrite-with-tombstone</code>: as <code>rewrite</code>, tombstones kept. "
                    "<code>delete-to-tombstone</code>: a delete becomes a tombstone, tombstones are dropped. "
                    "Change events with neither before nor after (truncates, messages) are always dropped.")
        .define(ROUTE_BY_FIELD, ConfigType.STRING, "", importance=Importance.LOW,
                doc="A column of the row whose value replaces the topic name (read from <code>before</code> for a "
                    "delete); a null or blank value keeps the topic.")
        .define(ADD_FIELDS_PREFIX, ConfigType.STRING, METADATA_FIELD_PREFIX, importance=Importance.LOW,
                doc="Prefix of the fields <code>add.fields</code> adds.")
        .define(ADD_FIELDS, ConfigType.LIST, "", validator=_FieldReferences(), importance=Importance.LOW,
                doc="Fields of the change event to add to the row, prefixed with <code>add.fields.prefix</code> "
                    "(<code>__struct_field</code> when the struct is named). " + entries_doc.format(what="fields"))
        .define(ADD_HEADERS_PREFIX, ConfigType.STRING, METADATA_FIELD_PREFIX, importance=Importance.LOW,
                doc="Prefix of the headers <code>add.headers</code> adds.")
        .define(ADD_HEADERS, ConfigType.LIST, "", validator=_FieldReferences(), importance=Importance.LOW,
                doc="Fields of the change event to add as headers, named like <code>add.fields</code> with "
                    "<code>add.headers.prefix</code>; a tombstone gets only <code>op</code>, as <code>d</code>. "
                    + entries_doc.format(what="headers"))
        .define(DROP_FIELDS_HEADER, ConfigType.STRING, None, importance=Importance.LOW,
                doc="A header holding a list of field names to remove from the row (the first header of that "
                    "name counts).")
        .define(DROP_FIELDS_FROM_KEY, ConfigType.BOOLEAN, False, importance=Importance.LOW,
                doc="Remove the <code>drop.fields.header.name</code> fields from the key too.")
        .define(DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE, ConfigType.BOOLEAN, True, importance=Importance.LOW,
                doc="<code>true</code>: remove only the listed fields whose schema is optional, so the schema "
                    "stays compatible; <code>false</code>: remove every listed field.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, importance=Importance.LOW,
                doc="In the rewrite modes, give null fields of the row their schema's default value.")
        .define(HANDLE_DELETES, ConfigType.STRING, None,
                validator=ValidString.in_("drop", "none", "rewrite", case_insensitive=True), importance=Importance.LOW,
                doc="Debezium 2.x's key, removed in Debezium 3.2 (which ignores it); read as Debezium 2.x-3.1 "
                    "read it when <code>delete.tombstone.handling.mode</code> is not set: <code>drop</code> (their "
                    "default) drops deletes, <code>none</code> gives them a null value, <code>rewrite</code> "
                    "marks rows with <code>__deleted</code>. Use <code>delete.tombstone.handling.mode</code>.")
        .define(DROP_TOMBSTONES, ConfigType.BOOLEAN, None, importance=Importance.LOW,
                doc="Debezium 2.x's key, removed in Debezium 3.2 (which ignores it); read as Debezium 2.x-3.1 "
                    "read it when <code>delete.tombstone.handling.mode</code> is not set: <code>true</code> (their "
                    "default) drops tombstones, <code>false</code> keeps them. Use "
                    "<code>delete.tombstone.handling.mode</code>.")
    )


class ExtractNewRecordState(BaseTransformation):
    """Replace each Debezium change event by the row it carries (see the module docstring for the steps).

    Attributes:
        handling: the delete handling in force.
        additional_fields, additional_headers: the ``add.fields`` / ``add.headers`` references.
        route_by_field: the routing column, or ``None``.
        drop_fields_header: the ``drop.fields.header.name`` header, or ``None``.
        drop_fields_from_key, drop_fields_keep_schema_compatible: how that header is applied.
    """

    kafka_class_name = "io.debezium.transforms.ExtractNewRecordState"

    def __init__(self) -> None:
        self.handling = MODES[DEFAULT_MODE]
        self.additional_fields: list[FieldReference] = []
        self.additional_headers: list[FieldReference] = []
        self.route_by_field: str | None = None
        self.drop_fields_header: str | None = None
        self.drop_fields_from_key = False
        self.drop_fields_keep_schema_compatible = True
        self._strategy = ExtractRecordStrategy(self.handling, True)
        self._schema_cache = LruCache(SCHEMA_CACHE_SIZE)
        self._droppers = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Parse and check the keys (raising ``ConfigValidationError``), then read them as Debezium does."""
        values = self.parse_config(configs)
        if configs.get(HANDLE_TOMBSTONE_DELETES) is None and (
                configs.get(HANDLE_DELETES) is not None or configs.get(DROP_TOMBSTONES) is not None):
            self.handling = DeleteHandling.legacy(values[HANDLE_DELETES], values[DROP_TOMBSTONES])
            log.warning("%s and %s were removed in Debezium 3.2 (which ignores them); they are read as Debezium "
                        "2.x-3.1 read them. Use %s.", HANDLE_DELETES, DROP_TOMBSTONES, HANDLE_TOMBSTONE_DELETES)
        else:
            self.handling = DeleteHandling.of_mode(values[HANDLE_TOMBSTONE_DELETES])
        fields = raw_string(configs, ADD_FIELDS)
        headers = raw_string(configs, ADD_HEADERS)
        self.additional_fields = field_references(raw_string(configs, ADD_FIELDS_PREFIX, METADATA_FIELD_PREFIX),
                                                  java_list(fields) if fields else [], ADD_FIELDS)
        self.additional_headers = field_references(raw_string(configs, ADD_HEADERS_PREFIX, METADATA_FIELD_PREFIX),
                                                   java_list(headers) if headers else [], ADD_HEADERS)
        self.route_by_field = raw_string(configs, ROUTE_BY_FIELD) or None
        self.drop_fields_header = raw_string(configs, DROP_FIELDS_HEADER)
        self.drop_fields_from_key = values[DROP_FIELDS_FROM_KEY]
        self.drop_fields_keep_schema_compatible = values[DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE]
        self._strategy = ExtractRecordStrategy(self.handling, values[REPLACE_NULL_WITH_DEFAULT])
        self._schema_cache = LruCache(SCHEMA_CACHE_SIZE)
        self._droppers = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Called by the runtime for every record; ``None`` drops it."""
        is_tombstone = record.value is None
        is_envelope = envelope.is_valid_envelope(record)
        if (is_envelope or is_tombstone) and self.additional_headers:
            record = self._with_headers(record)
        if is_tombstone:
            return self._strategy.handle_tombstone(record)
        if not is_envelope:
            log.debug("Expected a change event envelope; passing %s unchanged", record.coordinates())
            return record

        strategy = self._strategy
        if strategy.after(record).value is None:
            if strategy.before(record).value is None:
                return strategy.handle_truncate(record)
            new = strategy.handle_delete(record)
            if new is None:
                return None
            if self.route_by_field is not None:
                event = require_struct(record.value, "Read record to set topic routing for DELETE")
                new = self._routed(new, event.get_struct(envelope.BEFORE).get_string(self.route_by_field))
            if not is_blank(self.drop_fields_header):
                new = self._drop_fields(new)
            if new.value is not None:
                new = self._add_fields(record, new)
            return new

        new = strategy.handle_record(record)
        if self.route_by_field is not None:
            row = require_struct(new.value, "Read record to set topic routing for CREATE / UPDATE")
            new = self._routed(new, row.get_string(self.route_by_field))
        new = self._add_fields(record, new)
        if not is_blank(self.drop_fields_header):
            new = self._drop_fields(new)
        return new

    @property
    def strategy(self) -> ExtractRecordStrategy:
        """How rows are taken out of change events (the delete handling in force)."""
        return self._strategy

    def close(self) -> None:
        self._strategy.close()

    # -- headers --------------------------------------------------------------------------------------

    def _with_headers(self, record: SinkRecord) -> SinkRecord:
        """The record with the ``add.headers`` headers appended (a tombstone gets only ``op``, as ``d``)."""
        headers = record.headers.copy()
        event = record.value
        for reference in self.additional_headers:
            if event is None:
                if reference.field == envelope.OPERATION:
                    headers.add(reference.new_field, envelope.Operation.DELETE.value, Schema.STRING_SCHEMA)
                continue
            event = require_struct(event, "header insertion")
            schema = reference.schema_in(event.schema)
            if schema is not None:
                headers.add(reference.new_field, reference.value_in(event), schema)
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp, headers)

    # -- topic ----------------------------------------------------------------------------------------

    @staticmethod
    def _routed(record: SinkRecord, topic: str | None) -> SinkRecord:
        if is_blank(topic):
            return record
        return record.new_record(topic, record.kafka_partition, record.key_schema, record.key,  # type: ignore[arg-type]
                                 record.value_schema, record.value, record.timestamp)

    # -- add.fields -----------------------------------------------------------------------------------

    def _add_fields(self, original: SinkRecord, unwrapped: SinkRecord) -> SinkRecord:
        """The row rebuilt with a required copy of its schema plus the ``add.fields`` fields."""
        row = require_struct(unwrapped.value, PURPOSE)
        event: Struct = original.value
        cache_key = (row.schema, event.get_string(envelope.OPERATION))
        schema = self._schema_cache.get(cache_key)
        if schema is None:
            schema = self.row_schema(row.schema, event.schema)
            self._schema_cache.put(cache_key, schema)
        updated = Struct(schema)
        for field in row.schema.fields:
            updated.put(field.name, row.get_without_default(field))
        for reference in self.additional_fields:
            if reference.schema_in(event.schema) is not None:
                updated.put(reference.new_field, reference.value_in(event))
        return unwrapped.new_record(unwrapped.topic, unwrapped.kafka_partition, unwrapped.key_schema, unwrapped.key,
                                    schema, updated, unwrapped.timestamp)

    def row_schema(self, schema: Schema, envelope_schema: Schema) -> Schema:
        """The schema of the row ``add.fields`` rebuilds from a row of ``schema`` taken out of a change event of
        ``envelope_schema``: a required copy with the added fields; called per record (cached) and by the column
        form (:mod:`connect_spark.columnar.debezium_transforms`).

        Raises:
            DataException: an ``add.fields`` entry names a struct the envelope lacks.
        """
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        for reference in self.additional_fields:
            field_schema = reference.schema_in(envelope_schema)
            if field_schema is not None:
                builder.field(reference.new_field, field_schema)
        return builder.build()

    # -- drop.fields.header.name ----------------------------------------------------------------------

    def _drop_fields(self, record: SinkRecord) -> SinkRecord:
        """Remove the fields the ``drop.fields.header.name`` header lists from the value (and the key)."""
        header = next((h for h in record.headers if h.key == self.drop_fields_header), None)
        if header is None or header.value is None:
            return record
        names = header.value
        if not isinstance(names, list):
            raise DataException(f"Header {self.drop_fields_header} must hold a list of field names, "
                                f"found: {type(names).__name__}")
        if not names:
            return record
        if self.drop_fields_from_key and record.key is not None:
            to_drop = self._fields_to_drop(record.key_schema, names, "key")
            if to_drop:
                record = self._dropper(ReplaceFieldKey, to_drop).apply(record)  # type: ignore[assignment]
        to_drop = self._fields_to_drop(record.value_schema, names, "value")
        if to_drop:
            record = self._dropper(ReplaceFieldValue, to_drop).apply(record)  # type: ignore[assignment]
        return record

    def _fields_to_drop(self, schema: Schema | None, names: list[Any], part: str) -> list[Any]:
        if not self.drop_fields_keep_schema_compatible:
            return names
        if schema is None:
            raise DataException(f"Cannot tell which fields of a schemaless {part} are optional "
                                f"({DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE}=true)")
        return [field.name for field in schema.fields if field.schema.is_optional and field.name in names]

    def _dropper(self, kind: type, names: list[Any]) -> Any:
        """A ReplaceField excluding ``names`` (Debezium configures one per record; these are cached)."""
        exclude = ",".join(str(name) for name in names)
        key = (kind, exclude)
        dropper = self._droppers.get(key)
        if dropper is None:
            dropper = kind()
            dropper.configure({"exclude": exclude})
            self._droppers.put(key, dropper)
        return dropper
