"""The JDBC sink connector (``io.confluent.connect.jdbc.JdbcSinkConnector``, alias ``JdbcSinkConnector``)."""

from __future__ import annotations

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.jdbc.config import JDBC_SINK_CONFIG_DEF, JdbcSinkConfig
from connect_spark.connectors.jdbc.task import VERSION, JdbcSinkTask

__all__ = ["JdbcSinkConnector"]


class JdbcSinkConnector(SinkConnector):
    """Writes records to PostgreSQL tables exactly once (see ``connect_spark.connectors.jdbc.task``).

    Its task is a record ``SinkTask``: ``tasks.max`` tasks, each with its own connection, each writing
    the partitions the runtime assigns it (in executor mode, from the Spark executors).
    """

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: checks the keys together (every problem reported at once)."""
        JdbcSinkConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return JDBC_SINK_CONFIG_DEF
