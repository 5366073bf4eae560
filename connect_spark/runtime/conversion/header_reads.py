"""Whether a connector's micro-batches must read Kafka record headers at all.

Spark's Kafka source builds a headers array for every record when ``includeHeaders`` is on. Handed to
Python as Spark gives it (a null list for a record without headers), that tripled the cost of reading the
benchmark topic into ``mapInArrow`` (4 partitions, 1M records: 3.6 s without headers, 10.2 s with), nearly all
of it Spark's Arrow writer on the null lists; since :func:`~connect_spark.streaming.source.raw_columns` makes
them empty lists, reading headers costs 3.7 s. Most sinks never look at headers, so the connector runner
still asks :func:`headers_needed` once at start and reads them only when something would notice their absence:

* the task: :attr:`connect_spark.api.task.SinkTask.reads_headers` (``True`` unless the task says otherwise);
* a dead letter queue, whose records carry the original headers, and ``errors.log.include.messages``,
  which logs them;
* a header converter that can fail (Connect would route the record through ``errors.*``): only
  ``SimpleHeaderConverter`` and ``ByteArrayConverter`` never fail, so only they can go unread;
* a predicate that looks at headers (``HasHeaderKey``) or any predicate or transform that is not one of
  Kafka's built-ins (a custom one may read them). Kafka's built-in transforms only add or drop headers,
  which matters to no one when the task ignores headers.

When headers are left unread, every record arrives with an empty header list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connect_spark import plugins

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["headers_needed"]

_BUILT_IN_PACKAGE = "connect_spark."
_NEVER_FAILING_HEADER_CONVERTERS = ("SimpleHeaderConverter", "ByteArrayConverter")
_HEADER_BLIND_PREDICATES = ("TopicNameMatches", "RecordIsTombstone")


def _built_in(cls: type) -> bool:
    return cls.__module__.startswith(_BUILT_IN_PACKAGE)


def headers_needed(task_class: type, connector: "ConnectorConfig", worker: "WorkerConfig") -> tuple[bool, str]:
    """``(needed, why)``: whether records must carry their headers, and the first reason (for the log)."""
    if getattr(task_class, "reads_headers", True):
        return True, f"{task_class.__name__} reads headers"
    if connector.dlq_topic:
        return True, "dead letter queue records carry the original headers"
    if connector.errors_log_include_messages:
        return True, "errors.log.include.messages logs the headers"
    class_name, _ = connector.converter_config("header.converter", worker)
    header_converter = plugins.resolve("header_converter", class_name, key="header.converter")
    if not (_built_in(header_converter) and header_converter.__name__ in _NEVER_FAILING_HEADER_CONVERTERS):
        return True, f"header.converter {header_converter.__name__} may fail on a header"
    for predicate in connector.predicate_configs():
        cls = plugins.resolve("predicate", predicate.type, key=f"predicates.{predicate.alias}.type")
        if not (_built_in(cls) and cls.__name__ in _HEADER_BLIND_PREDICATES):
            return True, f"predicate {predicate.alias} ({cls.__name__}) may read headers"
    for transform in connector.transform_configs():
        cls = plugins.resolve("transform", transform.type, key=f"transforms.{transform.alias}.type")
        if not _built_in(cls):
            return True, f"transform {transform.alias} ({cls.__name__}) may read headers"
    return False, f"{task_class.__name__} does not read headers and nothing else needs them"
