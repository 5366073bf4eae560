"""InsertField: add record metadata or a static value as fields (Kafka's ``InsertField$Key`` / ``$Value``)."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from connect_spark.api.data import Schema, SchemaBuilder, Struct, Timestamp
from connect_spark.api.data.java_map import hash_map_copy
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeyOrValueTransformation,
    OperatesOnKey,
    OperatesOnValue,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    require_map,
    require_sink_record,
    require_struct,
)

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue", "InsertionSpec"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"
PURPOSE = "field insertion"

_OPTIONALITY_DOC = ("Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional "
                    "(the default).")
_OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()


class InsertionSpec(NamedTuple):
    """A field to insert: its name and whether its schema is optional (``name?``, the default) or not (``name!``)."""

    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> "InsertionSpec | None":
        if spec is None:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


def _config_def() -> ConfigDef:
    config = ConfigDef()
    for key, what in ((TOPIC_FIELD, "Field name for Kafka topic."),
                      (PARTITION_FIELD, "Field name for Kafka partition."),
                      (OFFSET_FIELD, "Field name for Kafka offset - only applicable to sink connectors."),
                      (TIMESTAMP_FIELD, "Field name for record timestamp."),
                      (STATIC_FIELD, "Field name for static data field.")):
        config.define(key, ConfigType.STRING, None, importance=Importance.MEDIUM, doc=f"{what}\n{_OPTIONALITY_DOC}")
    config.define(STATIC_VALUE, ConfigType.STRING, None, importance=Importance.MEDIUM,
                  doc="Static field value, if field name configured.")
    return define_replace_null_with_default(config)


class InsertField(KeyOrValueTransformation):
    """Insert the topic, partition, offset, timestamp and/or a static string as fields.

    Each ``*.field`` names the new field; a ``!`` suffix makes its schema required, ``?`` (the
    default) optional. Partition and timestamp are only inserted when the record has them; the
    timestamp is a Timestamp logical value (with a schema) or epoch milliseconds (schemaless). A
    null key/value passes through.

    Attributes:
        topic_field, partition_field, offset_field, timestamp_field, static_field: the
            :class:`InsertionSpec` of each, or ``None``.
        static_value: the static string, or ``None``.
        replace_null_with_default: whether copied null struct fields take their defaults.
    """

    def __init__(self) -> None:
        self.topic_field: InsertionSpec | None = None
        self.partition_field: InsertionSpec | None = None
        self.offset_field: InsertionSpec | None = None
        self.timestamp_field: InsertionSpec | None = None
        self.static_field: InsertionSpec | None = None
        self.static_value: str | None = None
        self.replace_null_with_default = True
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.parse_config(configs)
        self.topic_field = InsertionSpec.parse(values[TOPIC_FIELD])
        self.partition_field = InsertionSpec.parse(values[PARTITION_FIELD])
        self.offset_field = InsertionSpec.parse(values[OFFSET_FIELD])
        self.timestamp_field = InsertionSpec.parse(values[TIMESTAMP_FIELD])
        self.static_field = InsertionSpec.parse(values[STATIC_FIELD])
        self.static_value = values[STATIC_VALUE]
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            return self._apply_schemaless(record, value)
        return self._apply_with_schema(record, value)

    def _apply_schemaless(self, record: SinkRecord, value: Any) -> SinkRecord:
        updated = hash_map_copy(require_map(value, PURPOSE))  # Kafka: new HashMap<>(value)
        if self.topic_field is not None:
            updated[self.topic_field.name] = record.topic
        if self.partition_field is not None and record.kafka_partition is not None:
            updated[self.partition_field.name] = record.kafka_partition
        if self.offset_field is not None:
            updated[self.offset_field.name] = require_sink_record(record, PURPOSE).kafka_offset
        if self.timestamp_field is not None and record.timestamp is not None:
            updated[self.timestamp_field.name] = record.timestamp
        if self.static_field is not None and self.static_value is not None:
            updated[self.static_field.name] = self.static_value
        return self.new_record(record, None, updated)

    def _apply_with_schema(self, record: SinkRecord, value: Any) -> SinkRecord:
        struct = require_struct(value, PURPOSE)
        updated_schema = self._schema_cache.get_or_compute(struct.schema, self._updated_schema)
        updated = Struct(updated_schema)
        for field in struct.schema.fields:
            updated.put(field.name, field_value(struct, field, self.replace_null_with_default))
        if self.topic_field is not None:
            updated.put(self.topic_field.name, record.topic)
        if self.partition_field is not None and record.kafka_partition is not None:
            updated.put(self.partition_field.name, record.kafka_partition)
        if self.offset_field is not None:
            updated.put(self.offset_field.name, require_sink_record(record, PURPOSE).kafka_offset)
        if self.timestamp_field is not None and record.timestamp is not None:
            updated.put(self.timestamp_field.name, Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp))
        if self.static_field is not None and self.static_value is not None:
            updated.put(self.static_field.name, self.static_value)
        return self.new_record(record, updated_schema, updated)

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._updated_schema)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        for spec, optional_schema, required_schema in (
            (self.topic_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
            (self.partition_field, Schema.OPTIONAL_INT32_SCHEMA, Schema.INT32_SCHEMA),
            (self.offset_field, Schema.OPTIONAL_INT64_SCHEMA, Schema.INT64_SCHEMA),
            (self.timestamp_field, _OPTIONAL_TIMESTAMP_SCHEMA, Timestamp.SCHEMA),
            (self.static_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
        ):
            if spec is not None:
                builder.field(spec.name, optional_schema if spec.optional else required_schema)
        return builder.build()


class InsertFieldKey(OperatesOnKey, InsertField):
    """InsertField on the record key (``org.apache.kafka.connect.transforms.InsertField$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.InsertField$Key"


class InsertFieldValue(OperatesOnValue, InsertField):
    """InsertField on the record value (``org.apache.kafka.connect.transforms.InsertField$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.InsertField$Value"
