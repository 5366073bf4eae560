"""HoistField: wrap the key/value in a one-field struct or map (Kafka's ``HoistField$Key`` / ``$Value``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import KeyOrValueTransformation, OperatesOnKey, OperatesOnValue

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD_CONFIG = "field"


def _config_def() -> ConfigDef:
    return ConfigDef().define(FIELD_CONFIG, ConfigType.STRING, importance=Importance.MEDIUM,
                              doc="Field name for the single field that will be created in the resulting Struct or "
                                  "Map.")


class HoistField(KeyOrValueTransformation):
    """Wrap the key/value: a struct with one field when there is a schema, else ``{field: value}``.

    A null is wrapped too (it needs an optional schema when there is one).

    Attributes:
        field_name: the name of the single field.
    """

    def __init__(self) -> None:
        self.field_name = ""
        self._schema_cache = LruCache(16)

    def config(self) -> ConfigDef:
        return _config_def()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.field_name = self.parse_config(configs)[FIELD_CONFIG]
        self._schema_cache = LruCache(16)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self.field_name: value})
        updated_schema = self._schema_cache.get_or_compute(schema, self._wrapped_schema)
        return self.new_record(record, updated_schema, Struct(updated_schema).put(self.field_name, value))

    def output_schema(self, schema: Schema) -> Schema:
        """The schema this transform gives a record whose operated-on schema is ``schema`` (cached).

        Called by the column compiler (:mod:`connect_spark.columnar.transforms`), which must produce
        exactly the schema the per-record path produces.
        """
        return self._schema_cache.get_or_compute(schema, self._wrapped_schema)

    def _wrapped_schema(self, schema: Schema) -> Schema:
        return SchemaBuilder.struct().field(self.field_name, schema).build()


class HoistFieldKey(OperatesOnKey, HoistField):
    """HoistField on the record key (``org.apache.kafka.connect.transforms.HoistField$Key``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.HoistField$Key"


class HoistFieldValue(OperatesOnValue, HoistField):
    """HoistField on the record value (``org.apache.kafka.connect.transforms.HoistField$Value``)."""

    kafka_class_name = "org.apache.kafka.connect.transforms.HoistField$Value"
