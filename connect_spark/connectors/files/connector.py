"""The files sink connector (alias ``FilesSink``)."""

from __future__ import annotations

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.files.config import FILES_SINK_CONFIG_DEF, FilesSinkConfig
from connect_spark.connectors.files.task import VERSION, FilesSinkTask

__all__ = ["FilesSinkConnector"]


class FilesSinkConnector(SinkConnector):
    """Parquet or JSON-lines files, exactly once (see ``connect_spark.connectors.files.task``)."""

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        FilesSinkConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return FilesSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return FILES_SINK_CONFIG_DEF
