"""Builds what one task needs from its connector's configuration: converters, transforms, error handling.

Called by :class:`connect_spark.runtime.tasks.loop.TaskUnit` once per task instance: on the driver when
the connector starts, on an executor when a Python worker first runs the task — nothing here touches
Spark. The driver processors call :meth:`TaskPlugins.stop` when the task is asked to stop and
:meth:`TaskPlugins.close` after the task's final commit (an executor's cached task at worker exit).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect_spark import plugins
from connect_spark.runtime.conversion.sink_records import RecordConverter
from connect_spark.runtime.errors import (
    DeadLetterQueueReporter,
    ErrorHandler,
    ErrorHandlingConfig,
    LogReporter,
    Reporter,
    converter_serializer,
)
from connect_spark.transforms.chain import TransformationChain, TransformationStage

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["TaskPlugins", "build_task_plugins"]

log = logging.getLogger(__name__)


@dataclass
class TaskPlugins:
    """The configured converter chain and error handler of one task.

    Built by :func:`build_task_plugins`; the task loop gives ``converter`` every batch of the task and
    ``error_handler`` to the task's errant record reporter and commit hook.
    """

    converter: RecordConverter
    error_handler: ErrorHandler

    def stop(self) -> None:
        """Interrupt a retry back-off in progress. Called by the driver processors as soon as the task is asked
        to stop."""
        self.error_handler.stop()

    def close(self) -> None:
        """Close the converters, transforms and predicates, then the error handler. Never raises.

        Called once per task at shutdown, after the task's final commit. Closing the
        handler stops any retry and closes its reporters: the dead letter queue producer flushes what it
        still holds (the records of a batch that was never committed) and closes. Failures are logged:
        every write covered by a commit was already acknowledged before that commit.
        """
        self.converter.close()
        try:
            self.error_handler.close()
        except Exception as e:
            log.error("Closing the error reporters of task %s failed: %r", self.error_handler.label, e)


def _transformation_chain(connector: "ConnectorConfig") -> TransformationChain:
    """The configured transforms in order, each with its predicate (one instance per predicate alias)."""
    predicates: dict[str, Any] = {}
    for predicate in connector.predicate_configs():
        instance = plugins.instantiate("predicate", predicate.type, key=f"predicates.{predicate.alias}.type")
        instance.configure(predicate.props)
        predicates[predicate.alias] = instance
    stages = []
    for transform in connector.transform_configs():
        instance = plugins.instantiate("transform", transform.type, key=f"transforms.{transform.alias}.type")
        instance.configure(transform.props)
        predicate = predicates.get(transform.predicate) if transform.predicate else None
        stages.append(TransformationStage(instance, predicate, transform.negate if predicate is not None else False))
    return TransformationChain(stages)


def _reporters(connector: "ConnectorConfig", worker: "WorkerConfig", task_id: int) -> list[Reporter]:
    """Kafka Connect's order: the dead letter queue reporter, then the log reporter."""
    reporters: list[Reporter] = []
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
            admin_config={**worker.kafka_client_config(), **worker.admin_config(), **connector.admin_overrides},
        ))
    if connector.errors_log_enable:
        reporters.append(LogReporter(connector.name, task_id, connector.errors_log_include_messages))
    return reporters


def build_task_plugins(connector: "ConnectorConfig", worker: "WorkerConfig", task_id: int) -> TaskPlugins:
    """Instantiate and configure converters, transforms, predicates and error reporters for one task.

    Records a task reports through the errant record reporter without a consumed original (records it
    built itself) are serialized with this task's converters for the dead letter queue, as Connect does.
    """
    key_converter = plugins.configured_converter("key.converter", connector, worker)
    value_converter = plugins.configured_converter("value.converter", connector, worker)
    header_converter = plugins.configured_converter("header.converter", connector, worker)
    handler = ErrorHandler(
        ErrorHandlingConfig.from_connector_config(connector.resolved),
        connector.name,
        task_id,
        _reporters(connector, worker, task_id),
        serialize=converter_serializer(key_converter, value_converter, header_converter),
    )
    converter = RecordConverter(key_converter, value_converter, header_converter,
                                _transformation_chain(connector), handler)
    return TaskPlugins(converter, handler)
