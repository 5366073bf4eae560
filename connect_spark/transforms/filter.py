"""Filter: drop every record it is applied to (Kafka's ``Filter``); use it with a predicate."""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigDef
from connect_spark.transforms.util import BaseTransformation

__all__ = ["Filter"]


class Filter(BaseTransformation):
    """Drops all records (returns ``None``); guard it with a predicate to drop only some::

        transforms=dropTombstones
        transforms.dropTombstones.type=org.apache.kafka.connect.transforms.Filter
        transforms.dropTombstones.predicate=isTombstone
        predicates=isTombstone
        predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone
    """

    kafka_class_name = "org.apache.kafka.connect.transforms.Filter"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        return None
