"""The sink connector contract: configuration, and how work is split into task configurations."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.api.task import SinkTask

if TYPE_CHECKING:
    from connect_spark.config.definition import ConfigDef

__all__ = ["SinkConnector", "ConnectorContext"]


class ConnectorContext(abc.ABC):
    """What the runtime offers a running connector. Implemented by the runtime."""

    @abc.abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs`` again and restart the tasks with the result."""

    @abc.abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector with this error (it is marked FAILED with the trace)."""


class SinkConnector(abc.ABC):
    """A sink connector: validates its configuration and produces one configuration per task.

    Lifecycle, driven by the runtime on the driver: ``initialize(context)`` → ``start(props)`` →
    ``task_configs(max_tasks)`` → (tasks run) → ``stop()``.
    """

    context: ConnectorContext | None = None

    @abc.abstractmethod
    def version(self) -> str:
        """The connector's version, shown by ``GET /connector-plugins`` and logged at start."""

    def initialize(self, context: ConnectorContext) -> None:
        """Called once by the runtime before :meth:`start`."""
        self.context = context

    @abc.abstractmethod
    def start(self, props: dict[str, str]) -> None:
        """Called once with the connector's configuration (all keys, as strings) before ``task_configs``."""

    @abc.abstractmethod
    def task_class(self) -> type[SinkTask]:
        """The :class:`SinkTask` subclass the runtime instantiates for each task."""

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Called after :meth:`start`: one configuration per task, at most ``max_tasks`` of them.

        The runtime adds ``topics``/``topics.regex`` to each when missing, as Kafka Connect does.
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Called once when the connector is stopped or deleted."""

    def config(self) -> "ConfigDef":
        """The connector's own configuration keys, validated with the runtime's before anything starts."""
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def required_spark_support(self) -> tuple[str, ...]:
        """What the connector's tasks need in the SparkSession beyond Spark's Kafka source, by name
        (``"delta"``: Delta Lake's classes; ``"iceberg"``: Apache Iceberg's). Called by the runtime before
        :meth:`initialize`; a session handed in without it is refused with a message saying how to get one
        that has it. Also called by config validation, which refuses a connector whose piece does not exist
        for the running Spark, and before a standalone worker builds its session, which then carries the
        optional artifact sets named here (``connect_spark.jvm.optional_artifact_sets()``). Default: nothing."""
        return ()

    def alter_offsets(self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]) -> bool:
        """Called when an operator alters or resets the connector's offsets (KIP-875) while it is stopped.

        Return ``True`` when the connector also moved offsets it manages itself (for example offsets
        stored with the data of an exactly-once sink); ``False`` (the default) says only the runtime's
        offsets were moved. ``None`` offsets mean reset.
        """
        return False
