"""The search sink task: record frames into OpenSearch or Elasticsearch indexes in bulk, idempotently.

An :class:`~connect_spark.api.bulk.ArrowSinkTask`: in executor mode (the default) each of the ``tasks.max``
tasks runs in a Spark executor's Python worker with its own client and its own bulk stream; in driver mode it
lives on the driver. ``put_arrow`` turns the frame's columns into bulk actions (:mod:`.documents`) and sends
them (:mod:`.writer`) before it returns, so nothing is buffered between calls.

How exactly-once (in effect) works — the index itself is the ledger:

1. Every document has a deterministic id: ``topic+partition+offset`` when the key is ignored, the record key
   otherwise. Writing a record twice writes the same document twice, never two documents.
2. Keyed documents carry an external version: the record's offset (or ``external.version.header``). The
   cluster keeps the highest version it has seen and answers 409 to an older one, which the writer counts as
   acknowledged. So re-delivered records — the runtime re-delivers ``[committed, position)`` after any crash —
   never put an older value over a newer one, and the index ends with each key's newest record. Deletes are
   versioned the same way. (A cluster forgets a deleted document's version after ``index.gc_deletes``, 60 s
   by default; a re-delivery older than that could bring the document back.)
3. ``pre_commit`` returns the offsets it was given only when the last ``put_arrow`` had every document
   acknowledged (or rejected and reported); after a failed put it returns nothing, so nothing past what the
   cluster acknowledged is committed.
4. Upserts (``write.method=upsert``) cannot be versioned by the cluster; a put sends one action per id (the
   newest) and puts apply in offset order, so a replay after a crash ends at the newest value as well.

Errors: 429, 5xx and no answer are retried inside the put (:mod:`.writer`); when those retries run out the put
raises ``RetriableException`` (the runtime delivers the same frame again after ``retry.backoff.ms``) while
``errors.retry.timeout`` has not run out (-1: forever), then the task fails. A document the cluster rejects
goes where ``behavior.on.malformed.documents`` says; a record that cannot become a document (a null key used
as id, a tombstone under ``behavior.on.null.values=fail``) is dropped under ``drop.invalid.message=true`` and
is otherwise a record error for the errant record reporter (the dead letter queue gets the reason); without a
reporter (``errors.tolerance=none``) the task fails.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Collection, Mapping

from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.errors import ConnectException, DataException, RetriableException
from connect_spark.api.records import TopicPartition
from connect_spark.columnar.records import connect_schemas, frame_to_records
from connect_spark.connectors.retry_budget import RetryBudget
from connect_spark.connectors.search.client import SearchClient, connect
from connect_spark.connectors.search.config import SearchSinkConfig
from connect_spark.connectors.search.documents import build_actions
from connect_spark.connectors.search.writer import BulkWriter, RetriesExhausted

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SearchSinkTask", "HeaderVersionedSearchSinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"


class SearchSinkTask(ArrowSinkTask):
    """Writes record frames to a search cluster; see the module docstring for the offset protocol."""

    reads_headers = False  # documents hold key and value only (see HeaderVersionedSearchSinkTask)

    def __init__(self) -> None:
        self.config: SearchSinkConfig | None = None
        self.writer: BulkWriter | None = None
        self._client: SearchClient | None = None
        self._in_doubt = False
        self._budget: RetryBudget | None = None

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once per task instance: parses the keys (the client connects lazily)."""
        self.config = SearchSinkConfig.parse(props)
        self.writer = BulkWriter(self.config)
        self._budget = RetryBudget(self.config.max_retries, self.config.errors_retry_timeout_ms)

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are assigned: nothing to rewind (writes are idempotent)."""

    def put_arrow(self, table: "pa.Table") -> None:
        """Called by the runtime with a record frame of this task's partitions; returns when every document
        is acknowledged, or rejected and handled (see the module docstring)."""
        if table.num_rows == 0:
            return
        config = self._require_config()
        self._in_doubt = True
        key_schema, value_schema = connect_schemas(table)
        batch = build_actions(table, config, schemaless_value=value_schema is None)
        for row, reason in batch.invalid:
            self._invalid_record(table, row, reason, key_schema, value_schema)
        if batch.actions:
            try:
                outcome = self._require_writer().write(self._connected(), batch.actions)
            except RetriesExhausted as e:
                self._on_failure(e)
            for position, reason in outcome.rejected:
                self._malformed(table, batch.rows[position], reason, key_schema, value_schema)
        self._in_doubt = False
        if self._budget is not None:
            self._budget.succeeded()

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick: everything handed over, unless the last put failed."""
        return {} if self._in_doubt else dict(current_offsets)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Nothing is buffered; the client stays open for the next generation."""

    def stop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- record errors ------------------------------------------------------------------------------

    def _report(self, table: "pa.Table", row: int, reason: str, key_schema, value_schema) -> None:
        config = self._require_config()
        reporter = self.context.errant_record_reporter()
        record = frame_to_records(table.slice(row, 1), key_schema, value_schema,
                                  null_key_schema=None, null_value_schema=None)[0]
        where = f"{record.topic}[{record.kafka_partition}]@{record.kafka_offset}"
        if reporter is None:
            raise DataException(f"{config.connector_name}: {where}: {reason}")
        reporter.report(record, DataException(reason))

    def _invalid_record(self, table: "pa.Table", row: int, reason: str, key_schema, value_schema) -> None:
        config = self._require_config()
        if config.drop_invalid_message:
            log.warning("%s: dropping a record that cannot be indexed (drop.invalid.message=true): %s",
                        config.connector_name, reason)
            return
        self._report(table, row, reason, key_schema, value_schema)

    def _malformed(self, table: "pa.Table", row: int, reason: str, key_schema, value_schema) -> None:
        config = self._require_config()
        behavior = config.behavior_on_malformed
        if behavior == "ignore":
            log.debug("%s: the cluster rejected a document (ignored): %s", config.connector_name, reason)
            return
        if behavior == "warn":
            log.warning("%s: the cluster rejected a document: %s", config.connector_name, reason)
            if self.context.errant_record_reporter() is None:
                return
        self._report(table, row, f"The cluster rejected the document: {reason}", key_schema, value_schema)

    # -- the client and retriable failures -----------------------------------------------------------

    def _connected(self) -> SearchClient:
        if self._client is None:
            try:
                self._client = connect(self._require_config())
            except ConnectException:
                raise
            except Exception as e:
                status = getattr(e, "status_code", None)
                if isinstance(status, int) and 400 <= status < 500 and status != 429:
                    raise ConnectException(f"{self._require_config().connector_name}: the cluster refused the "
                                           f"connection: {type(e).__name__}: {e}") from e
                self._on_failure(RetriesExhausted(f"cannot reach the cluster: {type(e).__name__}: {e}"))
        assert self._client is not None
        return self._client

    def _on_failure(self, error: Exception) -> None:
        """Raise ``RetriableException`` while retries remain, else fail the task (see the module docstring)."""
        config = self._require_config()
        budget = self._budget
        assert budget is not None
        if not budget.failed():
            raise ConnectException(f"{config.connector_name}: writing to the cluster failed {budget.failures} times "
                                   f"(max.retries={config.max_retries}, errors.retry.timeout="
                                   f"{config.errors_retry_timeout_ms}): {error}") from error
        log.warning("%s: the cluster is unavailable (put attempt %d, again in %d ms): %s", config.connector_name,
                    budget.failures, config.retry_backoff_ms, error)
        self.context.timeout(config.retry_backoff_ms)
        raise RetriableException(f"{config.connector_name}: {error}") from error

    def _require_config(self) -> SearchSinkConfig:
        if self.config is None:
            raise RuntimeError("SearchSinkTask used before start()")
        return self.config

    def _require_writer(self) -> BulkWriter:
        if self.writer is None:
            raise RuntimeError("SearchSinkTask used before start()")
        return self.writer


class HeaderVersionedSearchSinkTask(SearchSinkTask):
    """The task when ``external.version.header`` is set: the same, reading the records' headers (the runtime
    leaves them out for a task that does not read them)."""

    reads_headers = True
