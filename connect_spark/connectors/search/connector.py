"""The search sink connector (``io.confluent.connect.elasticsearch.ElasticsearchSinkConnector``, aliases
``ElasticsearchSinkConnector``, ``SearchSink``)."""

from __future__ import annotations

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.search.config import EXTERNAL_VERSION_HEADER, SEARCH_SINK_CONFIG_DEF, SearchSinkConfig
from connect_spark.connectors.search.task import VERSION, HeaderVersionedSearchSinkTask, SearchSinkTask

__all__ = ["SearchSinkConnector"]


class SearchSinkConnector(SinkConnector):
    """Indexes records into OpenSearch or Elasticsearch, idempotently (see ``connect_spark.connectors.search.task``).

    Its task is an Arrow bulk task: ``tasks.max`` tasks, each with its own client and bulk stream, each writing
    the partitions the runtime assigns it (in executor mode, from the Spark executors).
    """

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: checks the keys together (every problem reported at once)."""
        SearchSinkConfig.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        """Called by the runtime after :meth:`start`: a task that reads headers only when versions come from one."""
        if self.props.get(EXTERNAL_VERSION_HEADER):
            return HeaderVersionedSearchSinkTask
        return SearchSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return SEARCH_SINK_CONFIG_DEF
