"""ByLogicalTableRouter: the change events of several tables into one topic (Debezium's ``ByLogicalTableRouter``).

Debezium's ``io.debezium.transforms.ByLogicalTableRouter``, as Debezium 3.6.1 has it.

For a record whose topic matches ``topic.regex`` entirely, the topic becomes ``topic.replacement`` (Java's
``$n`` syntax, the first match replaced); a topic that does not match, or whose replacement is empty,
keeps the record unchanged. A routed record also gets:

* a key (when it has one, which must be a struct) whose schema is named ``<new topic>.Key`` and, with
  ``key.enforce.uniqueness`` (the default), an extra string field ``key.field.name`` holding the original
  topic, or the part of it ``key.field.regex`` / ``key.field.replacement`` take (the whole topic when that
  regex does not match); a record without a key keeps none (nor a key schema);
* for a change event (a value schema named ``*.Envelope``), an envelope named ``<new topic>.Envelope``
  whose ``before`` / ``after`` rows are named ``<new topic>.Value``. Tombstones, heartbeats and other
  records keep their value.

Schema names pass through ``schema.name.adjustment.mode``. The new key and envelope schemas are cached
per old schema, and the new topic and key identifier per old topic, ``logical.table.cache.size``
entries each, as Debezium caches them (so a schema seen first for one topic keeps the name it got then).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import (
    CompositeValidator,
    ConfigDef,
    Importance,
    NonEmptyString,
    Range,
    ValidString,
)
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.schema_names import MODES, adjuster_for
from connect_spark.transforms.debezium.settings import raw_string
from connect_spark.transforms.regex_router import JavaRegexValidator
from connect_spark.transforms.util import (
    BaseTransformation,
    check_java_replacement,
    java_regex,
    java_replace_first,
    require_struct,
)

__all__ = ["ByLogicalTableRouter"]

log = logging.getLogger(__name__)

TOPIC_REGEX = "topic.regex"
TOPIC_REPLACEMENT = "topic.replacement"
KEY_ENFORCE_UNIQUENESS = "key.enforce.uniqueness"
KEY_FIELD_REGEX = "key.field.regex"
KEY_FIELD_NAME = "key.field.name"
KEY_FIELD_REPLACEMENT = "key.field.replacement"
SCHEMA_NAME_ADJUSTMENT_MODE = "schema.name.adjustment.mode"
LOGICAL_TABLE_CACHE_SIZE = "logical.table.cache.size"

DEFAULT_KEY_FIELD_NAME = "__dbz__physicalTableIdentifier"
PURPOSE = "Updating schema"


def _config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(TOPIC_REGEX, ConfigType.STRING, validator=CompositeValidator.of(NonEmptyString(), JavaRegexValidator()),
                importance=Importance.LOW,
                doc="The regular expression a topic must match entirely to be routed (Java syntax).")
        .define(TOPIC_REPLACEMENT, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.LOW,
                doc="The new topic name, with <code>$n</code> for the groups of <code>topic.regex</code>.")
        .define(KEY_ENFORCE_UNIQUENESS, ConfigType.BOOLEAN, True, importance=Importance.LOW,
                doc="Add a field to each routed key telling which original topic (physical table) the record "
                    "came from, so that equal keys of different tables stay apart. Set false when the tables' "
                    "keys are unique across them.")
        .define(KEY_FIELD_REGEX, ConfigType.STRING, None, validator=JavaRegexValidator(), importance=Importance.LOW,
                doc="A regular expression over the original topic whose replacement "
                    "(<code>key.field.replacement</code>) is the table identifier put in the key; when it does not "
                    "match, the whole topic is.")
        .define(KEY_FIELD_NAME, ConfigType.STRING, DEFAULT_KEY_FIELD_NAME, importance=Importance.LOW,
                doc="The name of the key field holding the table identifier; it must not clash with a key "
                    "column.")
        .define(KEY_FIELD_REPLACEMENT, ConfigType.STRING, None, importance=Importance.LOW,
                doc="The table identifier, with <code>$n</code> for the groups of <code>key.field.regex</code>; "
                    "required when <code>key.field.regex</code> is set.")
        .define(SCHEMA_NAME_ADJUSTMENT_MODE, ConfigType.STRING, "none",
                validator=ValidString.in_(*MODES, case_insensitive=True), importance=Importance.LOW,
                doc="How the new key, value and envelope schema names are adjusted: <code>none</code> keeps "
                    "them, <code>avro</code> replaces characters Avro names cannot hold with <code>_</code>, "
                    "<code>avro_unicode</code> with <code>_uXXXX</code>.")
        .define(LOGICAL_TABLE_CACHE_SIZE, ConfigType.INT, 16, validator=Range.at_least(-1), importance=Importance.LOW,
                doc="Entries kept in each of the caches of new schemas (by old schema) and of new topics and "
                    "key identifiers (by old topic).")
    )


class ByLogicalTableRouter(BaseTransformation):
    """Route matching topics to one logical topic, renaming schemas and marking keys with their table.

    Attributes:
        topic_regex, topic_replacement: the routing rule.
        key_enforce_uniqueness, key_field_name: whether and where the table identifier goes in the key.
        key_field_regex, key_field_replacement: how the identifier is taken from the topic (``None``: the
            whole topic).
    """

    kafka_class_name = "io.debezium.transforms.ByLogicalTableRouter"

    def __init__(self) -> None:
        self.topic_regex = re.compile("")
        self.topic_replacement = ""
        self.key_enforce_uniqueness = True
        self.key_field_name = DEFAULT_KEY_FIELD_NAME
        self.key_field_regex: re.Pattern[str] | None = None
        self.key_field_replacement: str | None = None
        self.adjuster = adjuster_for("none")
        self._caches(16)

    def _caches(self, size: int) -> None:
        self._key_schemas = LruCache(size)
        self._envelope_schemas = LruCache(size)
        self._key_identifiers = LruCache(size)
        self._topics = LruCache(size)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.topic_regex = java_regex(raw_string(configs, TOPIC_REGEX))  # type: ignore[arg-type]
        self.topic_replacement = raw_string(configs, TOPIC_REPLACEMENT)  # type: ignore[assignment]
        _check_replacement(self.topic_regex, self.topic_replacement, TOPIC_REPLACEMENT)
        key_regex = raw_string(configs, KEY_FIELD_REGEX)
        self.key_field_regex = None
        self.key_field_replacement = None
        if key_regex is not None and key_regex.strip():
            replacement = raw_string(configs, KEY_FIELD_REPLACEMENT)
            if replacement is None or not replacement.strip():
                raise ConfigException(f"{KEY_FIELD_REPLACEMENT} must be non-empty if {KEY_FIELD_REGEX} is set.",
                                      KEY_FIELD_REPLACEMENT, replacement)
            self.key_field_regex = java_regex(key_regex)
            self.key_field_replacement = replacement
            _check_replacement(self.key_field_regex, replacement, KEY_FIELD_REPLACEMENT)
        self.key_field_name = raw_string(configs, KEY_FIELD_NAME, DEFAULT_KEY_FIELD_NAME)  # type: ignore[assignment]
        self.key_enforce_uniqueness = values[KEY_ENFORCE_UNIQUENESS]
        self.adjuster = adjuster_for(values[SCHEMA_NAME_ADJUSTMENT_MODE])
        self._caches(values[LOGICAL_TABLE_CACHE_SIZE])

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Called by the runtime for every record; returns it routed, or unchanged."""
        old_topic = record.topic
        new_topic = self._new_topic(old_topic)
        if new_topic is None:
            return record
        if not new_topic:
            log.warning("Routing regex returned an empty topic name, propagating original record")
            return record
        log.debug("Applying topic name transformation from %s to %s", old_topic, new_topic)
        key_schema: Schema | None = None
        key: Struct | None = None
        if record.key is not None:
            old_key = require_struct(record.key, PURPOSE)
            key_schema = self._key_schema(old_key.schema, new_topic)
            key = self._key(key_schema, old_key, old_topic)
        if record.value is None or not envelope.is_valid_envelope(record):
            return record.new_record(new_topic, record.kafka_partition, key_schema, key, record.value_schema,
                                     record.value, record.timestamp)
        old_event = require_struct(record.value, PURPOSE)
        event_schema = self._envelope_schema(old_event.schema, new_topic)
        return record.new_record(new_topic, record.kafka_partition, key_schema, key, event_schema,
                                 self._event(event_schema, old_event), record.timestamp)

    def _new_topic(self, old_topic: str) -> str | None:
        cached = self._topics.get(old_topic)
        if cached is not None:
            return cached
        if self.topic_regex.fullmatch(old_topic) is None:
            return None
        new_topic = java_replace_first(self.topic_regex, old_topic, self.topic_replacement)
        self._topics.put(old_topic, new_topic)
        return new_topic

    def _key_schema(self, old: Schema, new_topic: str) -> Schema:
        cached = self._key_schemas.get(old)
        if cached is not None:
            return cached
        builder = _copy_without_name(old, copy_fields=True)
        builder.name(self.adjuster.adjust(new_topic + ".Key"))
        if self.key_enforce_uniqueness:
            builder.field(self.key_field_name, Schema.STRING_SCHEMA)
        schema = builder.build()
        self._key_schemas.put(old, schema)
        return schema

    def _key(self, schema: Schema, old: Struct, old_topic: str) -> Struct:
        key = Struct(schema)
        for field in old.schema.fields:
            key.put(field.name, old.get_without_default(field))
        if self.key_enforce_uniqueness:
            key.put(self.key_field_name, self._table_identifier(old_topic))
        return key

    def _table_identifier(self, old_topic: str) -> str:
        if self.key_field_regex is None:
            return old_topic
        cached = self._key_identifiers.get(old_topic)
        if cached is not None:
            return cached
        if self.key_field_regex.fullmatch(old_topic) is None:
            return old_topic
        replacement: str = self.key_field_replacement  # type: ignore[assignment]
        identifier = java_replace_first(self.key_field_regex, old_topic, replacement)
        self._key_identifiers.put(old_topic, identifier)
        return identifier

    def _envelope_schema(self, old: Schema, new_topic: str) -> Schema:
        cached = self._envelope_schemas.get(old)
        if cached is not None:
            return cached
        before = old.field(envelope.BEFORE)
        if before is None:
            raise DataException(f"The change event schema {old.name} has no {envelope.BEFORE} field")
        row_builder = _copy_without_name(before.schema, copy_fields=True)
        row_builder.name(self.adjuster.adjust(new_topic + ".Value"))
        row_schema = row_builder.build()
        builder = _copy_without_name(old, copy_fields=False)
        for field in old.fields:
            builder.field(field.name, row_schema if field.name in (envelope.BEFORE, envelope.AFTER) else field.schema)
        builder.name(self.adjuster.adjust(envelope.envelope_schema_name(new_topic)))
        schema = builder.build()
        self._envelope_schemas.put(old, schema)
        return schema

    @staticmethod
    def _event(schema: Schema, old: Struct) -> Struct:
        event = Struct(schema)
        row_schema = schema.field(envelope.BEFORE).schema  # type: ignore[union-attr]
        for field in old.schema.fields:
            value = old.get(field)
            if field.name in (envelope.BEFORE, envelope.AFTER) and value is not None:
                old_row = require_struct(value, PURPOSE)
                row = Struct(row_schema)
                for row_field in old_row.schema.fields:
                    row.put(row_field.name, old_row.get_without_default(row_field))
                value = row
            event.put(field.name, value)
        return event


def _copy_without_name(source: Schema, copy_fields: bool) -> SchemaBuilder:
    """A struct builder with ``source``'s version, doc, parameters, optionality and (optionally) fields."""
    builder = SchemaBuilder.struct()
    builder.version(source.version)
    builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    if source.is_optional:
        builder.optional()
    else:
        builder.required()
    if copy_fields:
        for field in source.fields:
            builder.field(field.name, field.schema)
    return builder


def _check_replacement(regex: re.Pattern[str], replacement: str, key: str) -> None:
    try:
        check_java_replacement(regex, replacement)
    except ValueError as e:
        raise ConfigException(f"{e}; the regex has {regex.groups} group(s)", key, replacement) from None
