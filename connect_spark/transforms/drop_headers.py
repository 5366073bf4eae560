"""DropHeaders: remove headers by name (Kafka's ``DropHeaders``)."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.records import Headers, SinkRecord
from connect_spark.config.definition import ConfigDef, Importance
from connect_spark.config.definition import Type as ConfigType
from connect_spark.transforms.util import BaseTransformation, non_empty_list

__all__ = ["DropHeaders"]

HEADERS_CONFIG = "headers"


class DropHeaders(BaseTransformation):
    """Remove every header whose key is listed in ``headers``.

    Attributes:
        headers: the header keys to drop, as a frozenset.
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.DropHeaders"

    def __init__(self) -> None:
        self.headers: frozenset[str] = frozenset()

    def config(self) -> ConfigDef:
        return ConfigDef().define(HEADERS_CONFIG, ConfigType.LIST, validator=non_empty_list,
                                  importance=Importance.HIGH, doc="The name of the headers to be removed.")

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.headers = frozenset(self.parse_config(configs)[HEADERS_CONFIG])

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        kept = Headers(h for h in record.headers if h.key not in self.headers)
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key,
                                 record.value_schema, record.value, record.timestamp, kept)
