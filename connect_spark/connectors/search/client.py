"""One cluster connection per task, through the official client of the cluster's engine.

Called by :class:`~connect_spark.connectors.search.writer.BulkWriter` from the task's thread. OpenSearch is
spoken with opensearch-py, Elasticsearch 8 and 9 with elasticsearch-py (``search.engine``; ``auto`` asks the
cluster's ``GET /`` through opensearch-py, whose ``info()`` answers for either engine, and keeps that client
when the cluster is OpenSearch). The clients' own retries are off: the writer owns retries, with back-off and
jitter, per document. Both libraries come with the ``search`` extra.

With TLS, both clients are handed one ``ssl_context`` built from the ``elastic.https.ssl.*`` keys by
:mod:`connect_spark.connectors.search.tls` (JKS, PKCS12 and PEM stores, as for the runtime's Kafka clients),
and urllib3 is kept from changing what it trusts (:func:`_context_only`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from connect_spark.api.errors import ConnectException
from connect_spark.config.secrets import without_embedded_secrets
from connect_spark.connectors.search.config import SearchSinkConfig
from connect_spark.connectors.search.tls import check_server, search_ssl_context

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
    """The TLS arguments both clients take: one ``ssl_context`` built from the sink's keys."""
    if config.tls is None or not any(u.startswith("https:") for u in config.urls):
        return {}
    return {"ssl_context": search_ssl_context(config.tls.kafka)}


def _context_only(pools: Iterable[Any], check_hostname: bool) -> None:
    """Make urllib3 use the ``ssl_context`` as built. Called right after a client is made, before its first
    request (urllib3 connects lazily): elastic-transport hands urllib3 ``certifi``'s CA bundle along with the
    context, which urllib3 would load into it (trusting every public CA besides the truststore, in a context
    the Kafka clients of the process may share); and when the context does not check host names urllib3
    checks them itself unless ``assert_hostname`` is False, which neither library passes with a context."""
    for pool in pools:
        if pool is None or not hasattr(pool, "ca_certs"):
            continue
        pool.ca_certs = None
        pool.ca_cert_dir = None
        if not check_hostname:
            pool.assert_hostname = False


def _opensearch(config: SearchSinkConfig) -> Any:
    try:
        import opensearchpy
    except ImportError as e:
        raise ConnectException("The search sink needs opensearch-py: pip install 'connect-spark[search]'") from e
    auth = (config.username, config.password) if config.username and config.password is not None else None
    client = opensearchpy.OpenSearch(list(config.urls), http_auth=auth, timeout=config.timeout_ms / 1000.0,
                                     max_retries=0, retry_on_timeout=False, **_tls_options(config))
    if config.tls is not None:
        _context_only((getattr(c, "pool", None) for c in client.transport.connection_pool.connections),
                      config.tls.check_hostname)
    return client


def _elasticsearch(config: SearchSinkConfig) -> Any:
    try:
        import elasticsearch
    except ImportError as e:
        raise ConnectException("The search sink needs elasticsearch-py for Elasticsearch clusters: "
                               "pip install 'connect-spark[search]'") from e
    auth = (config.username, config.password) if config.username and config.password is not None else None
    options = _tls_options(config)
    if options:  # elastic-transport lowers the context's minimum version to TLS 1.2 unless told it
        options["ssl_version"] = options["ssl_context"].minimum_version
    client = elasticsearch.Elasticsearch(list(config.urls), basic_auth=auth, request_timeout=config.timeout_ms / 1000.0,
                                         max_retries=0, retry_on_timeout=False, **options)
    if config.tls is not None:
        _context_only((getattr(n, "pool", None) for n in client.transport.node_pool.all()), config.tls.check_hostname)
    return client


def connect(config: SearchSinkConfig) -> SearchClient:
    """A client for the cluster (see the module docstring).

    With TLS, the first ``https`` URL's certificate is checked first (:func:`check_server`).

    Raises:
        ConfigException: a store cannot be read, or the cluster's certificate is not trusted or does not name
            its host (the message names the key to fix).
        ConnectException: when a library is missing or the cluster answers ``GET /`` with an error other than
            not being reachable (bad credentials, say). A cluster that cannot be reached raises the library's
            transport error: the caller decides whether to wait.
    """
    if config.tls is not None:
        https = [u for u in config.urls if u.startswith("https:")]
        if https:
            check_server(config.tls.kafka, https[0], min(config.timeout_ms / 1000.0, 10.0))
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
