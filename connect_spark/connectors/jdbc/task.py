"""The JDBC sink task: records into database tables in bulk, exactly once, from wherever the task runs.

An :class:`~connect_spark.api.bulk.ArrowSinkTask`: in executor mode (the default) each task runs in a Spark
executor's Python worker with its own connection and writes its own partitions; in driver mode it lives on
the driver. ``put_arrow`` receives a record frame — in executor mode with a JSON, Avro, String or
ByteArray converter, rows Spark itself converted (:mod:`connect_spark.runtime.processors.executor_vectorized`) — and
writes it before it returns, so nothing is buffered between calls. Rows come straight from the frame's
Arrow columns (:mod:`.frame_rows`); ``SinkRecord`` objects are built only for rows the database refuses,
and for frames the column path does not handle (schemaless values with ``fields.whitelist``). ``put``
(records) works too, for callers that have records.

How exactly-once works:

1. Each chunk of a ``put_arrow`` or ``put`` (at most ``batch.size`` rows) is one database transaction that writes the
   rows of every table it touches (``writer.py``) *and* the next Kafka offset of every partition it
   covers into the offsets table (``offsets.table.name``, default ``connect_offsets``; one row per
   connector, topic and partition). Either both are in the database or neither is.
2. ``open`` reads the stored offsets back and rewinds the assigned partitions to them with
   ``context.offset``, so the runtime resumes from what the database holds, not from
   ``connect-offsets``, which may lag behind (a crash between the database commit and the Kafka commit)
   or be lost. In executor mode ``open`` runs once per micro-batch; the stored offsets only advance, so
   the seeks do too. As in Connect, a seek counts as committed without being written, so after such a
   crash ``connect-offsets`` stays behind until the task writes the next records.
3. ``put_arrow`` and ``put`` drop every record below its partition's stored offset before writing, so a record
   delivered again is never written twice, in insert mode too. After a failure whose outcome is unknown
   (the connection broke during COMMIT) the stored offsets are read again before the next write.
4. ``pre_commit`` returns only offsets the database holds. Records that reached no ``put`` (dropped by a
   transform, sent to the dead letter queue by a converter) leave the offsets table behind the delivered
   position; ``pre_commit`` stores those offsets too (a one-row-per-partition transaction), so ``open``
   never rewinds behind the committed position.

Errors: a lost connection, a deadlock or a serialization failure raises ``RetriableException`` (the runtime
delivers the same records again after ``retry.backoff.ms``) up to ``max.retries`` times, and beyond while
``errors.retry.timeout`` has not run out (-1: forever); then the task fails. A row the database refuses is
found by halving and goes to the errant record reporter (the dead letter queue gets the database's
message in its ``__connect.errors.exception.message`` header); without a reporter the task fails.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

import pyarrow.compute as pc

from connect_spark.api.errors import ConnectException, DataException, RetriableException
from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.columnar.records import connect_schemas
from connect_spark.connectors.jdbc.config import JdbcSinkConfig
from connect_spark.connectors.jdbc.dialect import DatabaseDialect, ErrorKind, dialect_for
from connect_spark.connectors.jdbc.frame_rows import frame_batches, frame_records
from connect_spark.connectors.jdbc.rows import LayoutCache, TableBatch, table_batches
from connect_spark.connectors.jdbc.writer import BatchWriter

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JdbcSinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"


class JdbcSinkTask(ArrowSinkTask):
    """Writes records to a database; see the module docstring for the offset protocol."""

    reads_headers = False  # rows hold key and value fields and Kafka coordinates, never headers

    def __init__(self) -> None:
        self.config: JdbcSinkConfig | None = None
        self.dialect: DatabaseDialect | None = None
        self.writer: BatchWriter | None = None
        self.layouts: LayoutCache | None = None
        self._conn: Any = None
        self._stored: dict[TopicPartition, int] = {}
        self._reload = True
        self._failures = 0
        self._first_failure: float | None = None

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once per task instance: parses the keys (the connection opens lazily)."""
        self.config = JdbcSinkConfig.parse(props)
        self.dialect = dialect_for(self.config)
        self.writer = BatchWriter(self.dialect, self.config)
        self.layouts = LayoutCache(self.config)

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are assigned (executor mode: every micro-batch): rewind
        them to the offsets stored in the database. If the database cannot be reached, ``put`` reads the
        offsets before it writes anything instead."""
        config = self._require_config()
        try:
            self._read_stored()
        except Exception as e:
            if self._error_kind(e) != ErrorKind.RETRIABLE:
                raise ConnectException(f"{config.connector_name}: cannot read the offsets table "
                                       f"{config.offsets_table}: {self._describe(e)}") from e
            log.warning("%s: cannot read the stored offsets now (%s); put will before writing",
                        config.connector_name, self._describe(e))
            self._drop_connection()
            return
        seeks = {tp: self._stored[tp] for tp in partitions if tp in self._stored}
        if seeks:
            log.debug("%s: resuming from the offsets stored in %s: %s", config.connector_name,
                      config.offsets_table, ", ".join(f"{tp}@{off}" for tp, off in sorted(seeks.items())))
            self.context.offset(seeks)

    def put(self, records: Collection[SinkRecord]) -> None:
        """Records written in transactions of ``batch.size`` (for callers holding records; the runtime calls
        :meth:`put_arrow`)."""
        if not records:
            return
        config = self._require_config()
        try:
            if self._reload:
                self._read_stored()
            stored = self._stored  # keyed by TopicPartition, a named tuple: a plain tuple finds its entry
            fresh = [r for r in records
                     if r.original_kafka_offset >= stored.get((r.original_topic, r.original_kafka_partition), 0)]
            for start in range(0, len(fresh), config.batch_size):
                self._write_chunk(fresh[start:start + config.batch_size])
        except ConnectException:
            raise
        except Exception as e:
            self._on_failure(e)
        self._failures, self._first_failure = 0, None

    def put_arrow(self, table: "pa.Table") -> None:
        """Called by the runtime with a record frame of this task's partitions: written in transactions of
        ``batch.size`` rows, rows read from the frame's columns."""
        if table.num_rows == 0:
            return
        config = self._require_config()
        try:
            if self._reload:
                self._read_stored()
            fresh = self._fresh_rows(table)
            for start in range(0, fresh.num_rows, config.batch_size):
                self._write_frame_chunk(fresh.slice(start, config.batch_size))
        except ConnectException:
            raise
        except Exception as e:
            self._on_failure(e)
        self._failures, self._first_failure = 0, None

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick: the offsets the database holds (see step 4)."""
        config = self._require_config()
        behind = {tp: off for tp, off in current_offsets.items() if off > self._stored.get(tp, -1)}
        if behind and not self._reload:
            try:
                self._require_writer().store_offsets(self._connection(), behind)
                self._stored.update(behind)
            except Exception as e:
                log.warning("%s: could not store the offsets of records that reached no table (%s); "
                            "committing what the database holds", config.connector_name, self._describe(e))
                self._drop_connection()
                self._reload = True
        if self._reload:
            return {}
        return {tp: off for tp, off in current_offsets.items() if self._stored.get(tp, -1) >= off}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Nothing is buffered; the connection stays open for the next generation."""

    def stop(self) -> None:
        self._drop_connection()

    # -- one transaction -----------------------------------------------------------------------

    def _fresh_rows(self, table: "pa.Table") -> "pa.Table":
        """The frame's rows at or above their partition's stored offset (rows delivered again are dropped)."""
        keep = None
        for (topic, partition), (first, _) in _frame_ranges(table).items():
            stored = self._stored.get(TopicPartition(topic, partition), 0)
            if first >= stored:
                continue
            stale = pc.and_(pc.and_(pc.equal(table.column("original_topic"), topic),
                                    pc.equal(table.column("original_partition"), partition)),
                            pc.less(table.column("original_offset"), stored))
            keep = pc.invert(stale) if keep is None else pc.and_(keep, pc.invert(stale))
        return table if keep is None else table.filter(keep)

    def _write_frame_chunk(self, frame: "pa.Table") -> None:
        config = self._require_config()
        assert self.layouts is not None
        offsets = {TopicPartition(topic, partition): end for (topic, partition), (_, end) in _frame_ranges(frame).items()}
        key_schema, value_schema = connect_schemas(frame)
        batches = frame_batches(frame, key_schema, value_schema, config, self.layouts)
        if batches is None:
            batches = table_batches(frame_records(frame, key_schema, value_schema), config, self.layouts)
        self._write_batches(batches, offsets, frame.num_rows)

    def _write_chunk(self, records: Sequence[SinkRecord]) -> None:
        config = self._require_config()
        ends: dict[tuple[str, int], int] = {}
        for r in records:
            coordinates = (r.original_topic, r.original_kafka_partition)
            end = r.original_kafka_offset + 1
            if end > ends.get(coordinates, 0):
                ends[coordinates] = end
        offsets = {TopicPartition(topic, partition): end for (topic, partition), end in ends.items()}
        assert self.layouts is not None
        self._write_batches(table_batches(records, config, self.layouts), offsets, len(records))

    def _write_batches(self, batches: Sequence[TableBatch], offsets: Mapping[TopicPartition, int], count: int) -> None:
        """One transaction: ``batches`` written and ``offsets`` stored (see the module docstring)."""
        config = self._require_config()
        writer = self._require_writer()
        conn = self._connection()
        writer.prepare(conn, batches)
        reporter = self.context.errant_record_reporter()
        reject = None
        if reporter is not None:
            reject = lambda record, message: reporter.report(record, DataException(message))  # noqa: E731
        refused = writer.write(conn, batches, offsets, reject)
        self._stored.update(offsets)
        if refused:
            log.warning("%s: %d of %d records refused by the database went to the error reporter",
                        config.connector_name, refused, count)

    def _on_failure(self, error: Exception) -> None:
        """A retriable error raises ``RetriableException`` while retries remain; anything else fails the task."""
        config = self._require_config()
        self._drop_connection()
        self._reload = True  # the commit may or may not have happened: read the stored offsets again
        self._require_writer().forget_tables()
        kind = self._error_kind(error)
        message = self._describe(error)
        if kind != ErrorKind.RETRIABLE:
            raise ConnectException(f"{config.connector_name}: writing to the database failed: {message}") from error
        now = time.monotonic()
        if self._first_failure is None:
            self._first_failure = now
        self._failures += 1
        timeout_ms = config.errors_retry_timeout_ms
        within_timeout = timeout_ms < 0 or (now - self._first_failure) * 1000 < timeout_ms
        if self._failures > config.max_retries and not within_timeout:
            raise ConnectException(f"{config.connector_name}: writing to the database failed {self._failures} times "
                                   f"(max.retries={config.max_retries}): {message}") from error
        log.warning("%s: retriable database error (attempt %d of %d, next in %d ms): %s", config.connector_name,
                    self._failures, config.max_retries, config.retry_backoff_ms, message)
        self.context.timeout(config.retry_backoff_ms)
        raise RetriableException(f"{config.connector_name}: {message}") from error

    # -- connection and stored offsets ------------------------------------------------------------

    def _read_stored(self) -> None:
        self._stored = self._require_writer().read_offsets(self._connection())
        self._reload = False

    def _connection(self) -> Any:
        """The task's connection, opened with ``connection.attempts`` tries ``connection.backoff.ms`` apart."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        config = self._require_config()
        dialect = self._require_dialect()
        for attempt in range(1, config.connection_attempts + 1):
            try:
                self._conn = dialect.connect(config.connection)
                return self._conn
            except Exception as e:
                if attempt == config.connection_attempts or self._error_kind(e) != ErrorKind.RETRIABLE:
                    raise
                log.warning("%s: cannot connect to %s (attempt %d of %d): %s", config.connector_name,
                            config.connection.describe(), attempt, config.connection_attempts, self._describe(e))
                time.sleep(config.connection_backoff_ms / 1000.0)
        raise AssertionError("unreachable")

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already broken: nothing to release
                pass

    def _error_kind(self, error: BaseException) -> str:
        return self._require_dialect().error_kind(error)

    def _describe(self, error: BaseException) -> str:
        return self._require_dialect().describe_error(error)

    def _require_config(self) -> JdbcSinkConfig:
        if self.config is None:
            raise RuntimeError("JdbcSinkTask used before start()")
        return self.config

    def _require_dialect(self) -> DatabaseDialect:
        if self.dialect is None:
            raise RuntimeError("JdbcSinkTask used before start()")
        return self.dialect

    def _require_writer(self) -> BatchWriter:
        if self.writer is None:
            raise RuntimeError("JdbcSinkTask used before start()")
        return self.writer


def _frame_ranges(table: "pa.Table") -> dict[tuple[str, int], tuple[int, int]]:
    """Per original topic-partition of a frame: its first offset and the offset after its last."""
    grouped = (table.select(["original_topic", "original_partition", "original_offset"])
               .group_by(["original_topic", "original_partition"])
               .aggregate([("original_offset", "min"), ("original_offset", "max")]))
    return {(t, p): (lo, hi + 1) for t, p, lo, hi in zip(grouped.column("original_topic").to_pylist(),
                                                         grouped.column("original_partition").to_pylist(),
                                                         grouped.column("original_offset_min").to_pylist(),
                                                         grouped.column("original_offset_max").to_pylist())}
