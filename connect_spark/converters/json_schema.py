"""JsonSchemaConverter: Confluent's JSON Schema converter (``io.confluent.connect.json.JsonSchemaConverter``),
for reading.

Records are in Confluent's wire format (:mod:`connect_spark.converters.schema_registry`) with a JSON
document as payload; the writer schema (a JSON Schema) is fetched by id once and turned into a Connect
schema by the rules of Confluent's ``JsonSchemaData`` (:mod:`connect_spark.converters.json_schema_data`).
Like Confluent's, a key and value converter, not a header converter; writing is not supported.
"""

from __future__ import annotations

import decimal
import json
import threading
from typing import Any, Mapping

from connect_spark.api import Converter, DataException, SchemaAndValue
from connect_spark.api.data import Schema
from connect_spark.config.definition import ConfigDef, Importance, Type
from connect_spark.converters.base import converter_config_def, converter_type
from connect_spark.converters.json_schema_data import JsonSchemaData
from connect_spark.converters.schema_registry import (
    CACHE_CONFIG,
    RegistrySettings,
    SchemaRegistryLookup,
    registry_config_def,
    split_wire_format,
)

__all__ = ["JsonSchemaConverter"]

OPTIONAL_FOR_NONREQUIRED_CONFIG = "use.optional.for.nonrequired"


class JsonSchemaConverter(Converter):
    """Confluent's JSON Schema converter, reading side (see the module docstring).

    Config: the registry keys (``schema.registry.url`` required), ``use.optional.for.nonrequired``.
    """

    kafka_class_name = "io.confluent.connect.json.JsonSchemaConverter"

    def __init__(self) -> None:
        self.is_key = False
        self.data = JsonSchemaData()
        self.lookup: SchemaRegistryLookup | None = None
        self.cache_size = 1000
        self._schemas: dict[tuple[str, int], Schema] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"is_key": self.is_key, "data": self.data, "lookup": self.lookup, "cache_size": self.cache_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._schemas = {}
        self._lock = threading.Lock()

    def config(self) -> ConfigDef:
        return registry_config_def(converter_config_def()).define(
            OPTIONAL_FOR_NONREQUIRED_CONFIG, Type.BOOLEAN, False, importance=Importance.LOW, group="JSON Schema data",
            doc="Properties not listed in the schema's required list become optional Connect fields.")

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        values = self.config().parse(converter_type(configs, is_key))
        self.is_key = bool(is_key)
        self.cache_size = values[CACHE_CONFIG]
        self.data = JsonSchemaData(optional_for_nonrequired=values[OPTIONAL_FOR_NONREQUIRED_CONFIG])
        self.lookup = SchemaRegistryLookup(RegistrySettings(values), "JSON")
        self._schemas = {}

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """Decode one record; ``None`` gives ``SchemaAndValue(None, None)``.

        Raises:
            DataException: no magic byte, an unknown id, a payload that is not JSON or does not fit.
            UnavailableException: the registry could not be reached.
        """
        if value is None:
            return SchemaAndValue(None, None)
        try:
            schema_id, payload = split_wire_format(value)
            schema = self.schema(topic, schema_id)
            try:
                node = json.loads(bytes(payload), parse_float=decimal.Decimal)
            except (ValueError, RecursionError) as e:
                raise DataException(f"The payload is not JSON: {e}") from e
            return SchemaAndValue(schema, self.data.to_connect_data(schema, node))
        except DataException as e:
            raise DataException(f"Converting byte[] to Kafka Connect data failed due to serialization error of "
                                f"topic {topic}: {e}") from e

    def schema(self, topic: str, schema_id: int) -> Schema:
        """The Connect schema of writer schema ``schema_id`` for ``topic`` (built once, then cached)."""
        key = (topic, schema_id)
        cached = self._schemas.get(key)
        if cached is not None:
            return cached
        if self.lookup is None:
            raise DataException("JsonSchemaConverter used before configure()")
        text = self.lookup.schema_text(schema_id)
        try:
            json_schema = json.loads(text)
        except ValueError as e:
            raise DataException(f"Schema id {schema_id} is not valid JSON: {e}") from e
        version = None
        if not (isinstance(json_schema, dict) and "connect.version" in json_schema):
            title = json_schema.get("title") if isinstance(json_schema, dict) else None
            subject = self.lookup.settings.subject(topic, self.is_key, title if isinstance(title, str) else None)
            version = self.lookup.version(subject, schema_id)
        schema = self.data.to_connect_schema(json_schema, version)
        with self._lock:
            if len(self._schemas) >= max(self.cache_size, 1):
                self._schemas.pop(next(iter(self._schemas)))
            self._schemas[key] = schema
        return schema

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        raise DataException("JsonSchemaConverter in connect_spark reads JSON Schema records only; writing them is "
                            "not supported")
