"""AvroConverter: Confluent's Avro converter (``io.confluent.connect.avro.AvroConverter``), for reading.

Reads records in Confluent's wire format (see :mod:`connect_spark.converters.schema_registry`): the writer
schema is fetched from the registry by the id in the record, once, and turned into a Connect schema by the
rules of Confluent's ``AvroData`` (:mod:`connect_spark.converters.avro_data`); the Connect schema's version
is the writer schema's version under the record's subject, as Confluent's deserializer sets it.

Like Confluent's, it is a key and value converter, not a header converter. Writing Avro (needed only when
a task hands back records of its own for the dead letter queue) is not supported: records that failed in
the converter go to the dead letter queue with their original bytes.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Mapping

from connect_spark.api import Converter, DataException, SchemaAndValue
from connect_spark.api.data import Schema
from connect_spark.config.definition import ConfigDef, Importance, Type
from connect_spark.converters.avro_data import AvroData, AvroReader
from connect_spark.converters.base import converter_config_def, converter_type
from connect_spark.converters.schema_registry import (
    CACHE_CONFIG,
    RegistrySettings,
    SchemaRegistryLookup,
    registry_config_def,
    split_wire_format,
)

__all__ = ["AvroConverter", "avro_data_config_def"]

log = logging.getLogger(__name__)

CONNECT_META_DATA_CONFIG = "connect.meta.data"
ENHANCED_SCHEMA_SUPPORT_CONFIG = "enhanced.avro.schema.support"
SCRUB_INVALID_NAMES_CONFIG = "scrub.invalid.names"
GENERALIZED_SUM_TYPE_CONFIG = "generalized.sum.type.support"


def avro_data_config_def(config: ConfigDef) -> ConfigDef:
    """Add the keys of Confluent's ``AvroDataConfig`` that shape Avro → Connect data."""
    return (config
            .define(CONNECT_META_DATA_CONFIG, Type.BOOLEAN, True, importance=Importance.LOW, group="Avro data",
                    doc="Keep Avro docs, connect.parameters and default flags as Connect schema docs and parameters.")
            .define(ENHANCED_SCHEMA_SUPPORT_CONFIG, Type.BOOLEAN, False, importance=Importance.LOW,
                    group="Avro data",
                    doc="Union member fields of records, enums and fixed types are named by their full name "
                        "(namespace included) instead of their simple name.")
            .define(SCRUB_INVALID_NAMES_CONFIG, Type.BOOLEAN, False, importance=Importance.LOW, group="Avro data",
                    doc="Names that are not valid Avro names are scrubbed (invalid characters become _).")
            .define(GENERALIZED_SUM_TYPE_CONFIG, Type.BOOLEAN, False, importance=Importance.LOW, group="Avro data",
                    doc="Unions become structs named connect_union_<n> with fields connect_union_field_<i>, and "
                        "enums carry org.apache.kafka.connect.data.Enum parameters."))


class AvroConverter(Converter):
    """Confluent's Avro converter, reading side (see the module docstring).

    Config: ``schema.registry.url`` (required) and the other registry keys of
    :func:`~connect_spark.converters.schema_registry.registry_config_def`; ``connect.meta.data``,
    ``enhanced.avro.schema.support``, ``scrub.invalid.names``, ``generalized.sum.type.support``. Keys only
    Confluent's serializer reads (``auto.register.schemas``...) are accepted and ignored.

    Attributes:
        avro_data: the Avro → Connect rules in force (read by the vectorized Avro step).
        lookup: the registry lookups (read by the vectorized Avro step).
    """

    kafka_class_name = "io.confluent.connect.avro.AvroConverter"

    def __init__(self) -> None:
        self.is_key = False
        self.avro_data = AvroData()
        self.lookup: SchemaRegistryLookup | None = None
        self.cache_size = 1000
        self._readers: dict[tuple[str, int], AvroReader] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # Readers (compiled fastavro schemas) are rebuilt where the converter runs.
        return {"is_key": self.is_key, "avro_data": self.avro_data, "lookup": self.lookup,
                "cache_size": self.cache_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._readers = {}
        self._lock = threading.Lock()

    def config(self) -> ConfigDef:
        return avro_data_config_def(registry_config_def(converter_config_def()))

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Parse the settings; the registry is first asked when the first record arrives."""
        values = self.config().parse(converter_type(configs, is_key))
        self.is_key = bool(is_key)
        self.cache_size = values[CACHE_CONFIG]
        self.avro_data = AvroData(
            connect_meta_data=values[CONNECT_META_DATA_CONFIG],
            enhanced_schema_support=values[ENHANCED_SCHEMA_SUPPORT_CONFIG],
            scrub_invalid_names=values[SCRUB_INVALID_NAMES_CONFIG],
            generalized_sum_type_support=values[GENERALIZED_SUM_TYPE_CONFIG],
        )
        self.lookup = SchemaRegistryLookup(RegistrySettings(values), "AVRO")
        self._readers = {}

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """Decode one record; ``None`` gives ``SchemaAndValue(None, None)``.

        Raises:
            DataException: no magic byte, an id the registry does not know, bytes that do not decode.
            UnavailableException: the registry could not be reached (retriable; never a skipped record).
        """
        if value is None:
            return SchemaAndValue(None, None)
        try:
            schema_id, payload = split_wire_format(value)
            reader = self.reader(topic, schema_id)
            return SchemaAndValue(reader.schema, reader.read(payload))
        except DataException as e:
            raise DataException(f"Failed to deserialize data for topic {topic} to Avro: {e}") from e

    def reader(self, topic: str, schema_id: int) -> AvroReader:
        """The reader of writer schema ``schema_id`` for ``topic`` (built once, then cached)."""
        key = (topic, schema_id)
        reader = self._readers.get(key)
        if reader is not None:
            return reader
        if self.lookup is None:
            raise DataException("AvroConverter used before configure()")
        text = self.lookup.schema_text(schema_id)
        try:
            avro_schema = json.loads(text)
        except ValueError as e:
            raise DataException(f"Schema id {schema_id} is not valid JSON: {e}") from e
        version = None
        if not (isinstance(avro_schema, dict) and "connect.version" in avro_schema):
            record_name = _record_full_name(avro_schema)
            subject = self.lookup.settings.subject(topic, self.is_key, record_name)
            version = self.lookup.version(subject, schema_id)
        reader = self.avro_data.compile(avro_schema, version)
        with self._lock:
            if len(self._readers) >= max(self.cache_size, 1):
                self._readers.pop(next(iter(self._readers)))
            self._readers[key] = reader
        return reader

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        raise DataException(
            "AvroConverter in connect_spark reads Avro only; writing Avro (registering schemas) is not supported")


def _record_full_name(avro_schema: Any) -> str | None:
    if isinstance(avro_schema, dict) and avro_schema.get("type") in ("record", "error"):
        name = avro_schema["name"]
        namespace = avro_schema.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    return None
