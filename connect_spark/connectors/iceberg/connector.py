"""The Iceberg sink connector (aliases ``IcebergSink``, ``org.apache.iceberg.connect.IcebergSinkConnector``)."""

from __future__ import annotations

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.iceberg.config import ICEBERG_SINK_CONFIG_DEF, IcebergSinkConfig
from connect_spark.connectors.iceberg.task import VERSION, IcebergSinkTask

__all__ = ["IcebergSinkConnector"]


class IcebergSinkConnector(SinkConnector):
    """Writes records to Apache Iceberg tables exactly once (see ``connect_spark.connectors.iceberg.task``).

    Takes Apache Iceberg's Kafka Connect sink configuration. Its task is a ``DataFrameSinkTask``: one
    instance on the driver sees every partition and Spark parallelises the writes, so one task
    configuration is returned whatever ``tasks.max`` is. Needs the optional ``iceberg`` JVM artifact set.
    """

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: checks the keys together (every problem reported at once)."""
        IcebergSinkConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return IcebergSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ICEBERG_SINK_CONFIG_DEF

    def required_spark_support(self) -> tuple[str, ...]:
        """Apache Iceberg's Spark runtime (the optional ``iceberg`` artifact set)."""
        return ("iceberg",)
