"""The Delta sink connector (alias ``DeltaSink``): configuration and task configurations."""

from __future__ import annotations

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.delta.config import DELTA_SINK_CONFIG_DEF, DeltaSinkConfig
from connect_spark.connectors.delta.task import VERSION, DeltaSinkTask

__all__ = ["DeltaSinkConnector"]


class DeltaSinkConnector(SinkConnector):
    """Writes records to Delta Lake tables exactly once (see ``connect_spark.connectors.delta.task``).

    Its task is a ``DataFrameSinkTask``: one instance on the driver sees every partition, and Spark
    parallelises the writes, so one task configuration is returned whatever ``tasks.max`` is.
    """

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: checks the keys together (every problem reported at once)."""
        DeltaSinkConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return DeltaSinkTask

    def required_spark_support(self) -> tuple[str, ...]:
        """Delta Lake's classes in the session (checked by the runtime at start)."""
        return ("delta",)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return DELTA_SINK_CONFIG_DEF
