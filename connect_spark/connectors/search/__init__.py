"""Search sink (Confluent's ``ElasticsearchSinkConnector`` keys): idempotent bulk writes into OpenSearch and
Elasticsearch.

Modules: ``config`` (the keys), ``documents`` (frames → bulk actions: ids, versions, deletes), ``client`` (the
official client of the cluster's engine), ``writer`` (bulk requests, retries, verdicts), ``task``,
``connector``.
"""

from connect_spark.connectors.search.connector import SearchSinkConnector
from connect_spark.connectors.search.task import SearchSinkTask

__all__ = ["SearchSinkConnector", "SearchSinkTask"]
