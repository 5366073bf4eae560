"""Builds what one task needs from its connector's configuration: converters, transforms, error handling.

Called by the connector runner once per task when the connector starts (driver mode) — nothing here
touches Spark.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect_spark import plugins
from connect_spark.runtime.conversion import RecordConverter, TransformStage
from connect_spark.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorHandler,
    ErrorHandlingConfig,
    LogReporter,
)

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["TaskPlugins", "build_task_plugins"]

log = logging.getLogger(__name__)


@dataclass
class TaskPlugins:
    """The configured converter chain and error handler of one task."""

    converter: RecordConverter
    error_handler: ErrorHandler

    def close(self) -> None:
        for closeable in (self.converter.key_converter, self.converter.value_converter,
                          self.converter.header_converter, *(s.transform for s in self.converter.stages),
                          *(s.predicate for s in self.converter.stages if s.predicate is not None)):
            try:
                closeable.close()
            except Exception as e:  # closing is best effort, as in Connect
                log.warning("Could not close %s: %r", type(closeable).__name__, e)
        self.error_handler.close()


def _converter(which: str, connector: "ConnectorConfig", worker: "WorkerConfig") -> Any:
    class_name, props = connector.converter_config(which, worker)
    kind = "header_converter" if which == "header.converter" else "converter"
    instance = plugins.instantiate(kind, class_name, key=which)
    if kind == "header_converter":
        instance.configure(props)
    else:
        instance.configure(props, which == "key.converter")
    return instance


def _stages(connector: "ConnectorConfig") -> list[TransformStage]:
    predicates: dict[str, Any] = {}
    for predicate in connector.predicate_configs():
        instance = plugins.instantiate("predicate", predicate.type, key=f"predicates.{predicate.alias}.type")
        instance.configure(predicate.props)
        predicates[predicate.alias] = instance
    stages = []
    for transform in connector.transform_configs():
        instance = plugins.instantiate("transform", transform.type, key=f"transforms.{transform.alias}.type")
        instance.configure(transform.props)
        stages.append(TransformStage(transform.alias, instance,
                                     predicates.get(transform.predicate) if transform.predicate else None,
                                     transform.negate))
    return stages


def build_task_plugins(connector: "ConnectorConfig", worker: "WorkerConfig", task_id: int) -> TaskPlugins:
    """Instantiate and configure converters, transforms, predicates and error reporters for one task."""
    config = ErrorHandlingConfig.from_connector_config(connector.resolved)
    reporters: list[Any] = []
    if connector.dlq_topic:
        reporters.append(DeadLetterQueueReporter(
            worker.bootstrap_servers,
            connector.dlq_topic,
            connector.name,
            task_id,
            replication_factor=connector.errors_deadletterqueue_topic_replication_factor,
            context_headers=connector.errors_deadletterqueue_context_headers_enable,
            client_config={**worker.kafka_client_config(), **worker.producer_config(),
                           **connector.producer_overrides},
        ))
    if connector.errors_log_enable:
        reporters.append(LogReporter(connector.name, task_id, connector.errors_log_include_messages))
    handler = ErrorHandler(config, connector.name, task_id, reporters)
    converter = RecordConverter(
        _converter("key.converter", connector, worker),
        _converter("value.converter", connector, worker),
        _converter("header.converter", connector, worker),
        _stages(connector),
        handler,
    )
    return TaskPlugins(converter, handler)
