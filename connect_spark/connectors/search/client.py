"""One cluster connection per task, through the official client of the cluster's engine.

Called by :class:`~connect_spark.connectors.search.writer.BulkWriter` from the task's thread. OpenSearch is
spoken with opensearch-py, Elasticsearch 8 and 9 with elasticsearch-py (``search.engine``; ``auto`` asks the
cluster's ``GET /`` through opensearch-py, whose ``info()`` answers for either engine, and keeps that client
when the cluster is OpenSearch). The clients' own retries are off: the writer owns retries, with back-off and
jitter, per document. Both libraries come with the ``search`` extra.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from connect_spark.api.errors import ConnectException
from connect_spark.config.secrets import without_embedded_secrets
from connect_spark.connectors.search.config import SearchSinkConfig

__all__ = ["SearchClient", "connect", "ENGINES"]

log = logging.getLogger(__name__)

ENGINES = ("opensearch", "elasticsearch")


@dataclass
class SearchClient:
    """A client and the bulk helper of its library.

    Attributes:
        engine: ``opensearch`` or ``elasticsearch``.
        version: the cluster's version number, as it reports it.
        client: the library's client object.
        transport_errors: exception classes meaning "no answer" (connection refused, timeout): retriable.
    """

    engine: str
    version: str
    client: Any
    bulk_helper: Callable[..., Iterator[tuple[bool, dict[str, Any]]]]
    parallel_helper: Callable[..., Iterator[tuple[bool, dict[str, Any]]]]
    transport_errors: tuple[type[BaseException], ...]

    def bulk(self, actions: Iterable[dict[str, Any]], config: SearchSinkConfig) -> Iterator[tuple[bool, dict[str, Any]]]:
        """One result per action, in action order: ``batch.size`` / ``bulk.size.bytes`` requests,
        ``max.in.flight.requests`` of them at once. Errors come back as results, not exceptions, except a
        failure to reach the cluster in the elasticsearch-py helper (raised: the caller retries)."""
        options = dict(chunk_size=config.batch_size, max_chunk_bytes=config.bulk_size_bytes,
                       raise_on_error=False, raise_on_exception=False)
        if config.max_in_flight > 1:
            return self.parallel_helper(self.client, actions, thread_count=config.max_in_flight,
                                        queue_size=config.max_in_flight, **options)
        return self.bulk_helper(self.client, actions, max_retries=0, **options)

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # closing a broken connection: nothing left to release
            pass


def _tls_options(config: SearchSinkConfig) -> dict[str, Any]:
    """The TLS arguments both clients take (PEM file paths)."""
    tls = config.tls
    if tls is None:
        return {}
    options: dict[str, Any] = {"verify_certs": True}
    if tls.ca_certs:
        options["ca_certs"] = tls.ca_certs
    if tls.client_cert:
        options["client_cert"] = tls.client_cert
    if tls.client_key:
        options["client_key"] = tls.client_key
    if not tls.check_hostname:
        options["ssl_assert_hostname"] = False
    return options


def _opensearch(config: SearchSinkConfig) -> Any:
    try:
        import opensearchpy
    except ImportError as e:
        raise ConnectException("The search sink needs opensearch-py: pip install 'connect-spark[search]'") from e
    auth = (config.username, config.password) if config.username and config.password is not None else None
    return opensearchpy.OpenSearch(list(config.urls), http_auth=auth, timeout=config.timeout_ms / 1000.0,
                                   max_retries=0, retry_on_timeout=False, **_tls_options(config))


def _elasticsearch(config: SearchSinkConfig) -> Any:
    try:
        import elasticsearch
    except ImportError as e:
        raise ConnectException("The search sink needs elasticsearch-py for Elasticsearch clusters: "
                               "pip install 'connect-spark[search]'") from e
    auth = (config.username, config.password) if config.username and config.password is not None else None
    return elasticsearch.Elasticsearch(list(config.urls), basic_auth=auth, request_timeout=config.timeout_ms / 1000.0,
                                       max_retries=0, retry_on_timeout=False, **_tls_options(config))


def connect(config: SearchSinkConfig) -> SearchClient:
    """A client for the cluster (see the module docstring).

    Raises:
        ConnectException: when a library is missing or the cluster answers ``GET /`` with an error other than
            not being reachable (bad credentials, say). A cluster that cannot be reached raises the library's
            transport error: the caller decides whether to wait.
    """
    engine = config.engine
    version = "?"
    if engine in ("auto", "opensearch"):
        probe = _opensearch(config)
        if engine == "auto":
            info = probe.info()
            version_info = info.get("version", {})
            version = str(version_info.get("number", "?"))
            engine = "opensearch" if version_info.get("distribution") == "opensearch" else "elasticsearch"
            log.info("%s: the cluster at %s is %s %s", config.connector_name,
                     without_embedded_secrets(config.urls[0]), engine, version)
        if engine == "opensearch":
            import opensearchpy
            from opensearchpy import helpers

            return SearchClient("opensearch", version, probe, helpers.streaming_bulk, helpers.parallel_bulk,
                                (opensearchpy.ConnectionError, opensearchpy.ConnectionTimeout))
        probe.close()
    import elasticsearch
    from elasticsearch import helpers as es_helpers

    client = _elasticsearch(config)
    return SearchClient("elasticsearch", version, client, es_helpers.streaming_bulk, es_helpers.parallel_bulk,
                        (elasticsearch.ConnectionError, elasticsearch.ConnectionTimeout))
