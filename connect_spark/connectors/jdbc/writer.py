"""One batch into the database: tables made ready, rows written in bulk, offsets stored, one commit.

Called by the task for each chunk of a ``put`` (at most ``batch.size`` records):

1. :meth:`BatchWriter.prepare` — before the data transaction, each table is created (``auto.create``) or
   given the columns it lacks (``auto.evolve``), in its own short transaction. DDL is idempotent
   (``IF NOT EXISTS``), so tasks racing to create the same table do no harm.
2. :meth:`BatchWriter.write` — one transaction: for every table, the deletes then the rows, each in bulk
   (the dialect's COPY); then the Kafka offsets the chunk covers; then COMMIT. A write the database
   refuses because of one row (a constraint, a type, a value too long) is rolled back to a savepoint
   and retried in halves until the refused rows stand alone; those go to ``reject`` (the errant record
   reporter), the rest is written, and the transaction waits for the reports before it commits.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable, Mapping, Sequence

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.connectors.jdbc.config import JdbcSinkConfig
from connect_spark.connectors.jdbc.dialect import DatabaseDialect, ErrorKind, TableId
from connect_spark.connectors.jdbc.rows import TableBatch

__all__ = ["BatchWriter", "Reject"]

log = logging.getLogger(__name__)

#: Called with a record the database refused and the database's message; returns the report's future
#: (or ``None`` when there is nothing to wait for).
Reject = Callable[[SinkRecord, str], "Future[Any] | None"]


class BatchWriter:
    """Writes table batches for one task over the task's connection."""

    def __init__(self, dialect: DatabaseDialect, config: JdbcSinkConfig) -> None:
        self.dialect = dialect
        self.config = config
        self.offsets_table = TableId.parse(config.offsets_table)
        self._known: dict[TableId, dict[str, str]] = {}  # per table: its columns' names and types
        self._offsets_table_seen_by: Any = None  # the connection that made sure the offsets table exists

    def forget_tables(self) -> None:
        """Drop what is known of the tables' columns (after a failure: read them again)."""
        self._known.clear()

    # -- DDL -----------------------------------------------------------------------------------

    def prepare(self, conn: Any, batches: Sequence[TableBatch]) -> None:
        """Create or evolve each batch's table as the configuration allows."""
        for batch in batches:
            if not batch.columns:
                continue
            wanted = {self.dialect.column_name(c.name): c for c in batch.columns}
            known = self._known.get(batch.table)
            if known is not None and wanted.keys() <= known.keys():
                continue
            for attempt in (1, 2):
                try:
                    existing = self._prepare_table(conn, batch, wanted)
                    break
                except ConnectException:
                    raise
                except Exception as e:
                    # Another task created or altered the same table at the same moment (PostgreSQL reports a
                    # unique violation in its catalog): the second look finds the table as the other task left it.
                    if attempt == 2 or self.dialect.error_kind(e) == ErrorKind.RETRIABLE:
                        raise
                    log.info("%s: concurrent DDL on %s (%s); looking again", self.config.connector_name,
                             batch.table, self.dialect.describe_error(e))
            self._known[batch.table] = dict(existing)

    def _prepare_table(self, conn: Any, batch: TableBatch, wanted: dict[str, Any]) -> dict[str, str]:
        """One look at ``batch.table`` in its own transaction: create it or add columns as allowed."""
        with conn.transaction():
            existing = self.dialect.table_columns(conn, batch.table)
            if existing is None:
                if not self.config.auto_create:
                    raise ConnectException(f"Table {batch.table} does not exist; create it or set auto.create=true")
                for column in batch.columns:
                    self.dialect.sql_type(column)  # a struct or map is refused here, naming the field
                log.info("%s: creating table %s", self.config.connector_name, batch.table)
                self.dialect.create_table(conn, batch.table, batch.columns)
                existing = self.dialect.table_columns(conn, batch.table) or {}
            missing = [c for name, c in wanted.items() if name not in existing]
            if missing:
                if not self.config.auto_evolve:
                    raise ConnectException(
                        f"Table {batch.table} has no column for the record fields "
                        f"{', '.join(repr(c.name) for c in missing)}; add them or set auto.evolve=true")
                log.info("%s: adding columns %s to %s", self.config.connector_name,
                         ", ".join(c.name for c in missing), batch.table)
                self.dialect.add_columns(conn, batch.table, missing)
                existing = self.dialect.table_columns(conn, batch.table) or {}
        return existing

    # -- data and offsets ------------------------------------------------------------------------

    def write(self, conn: Any, batches: Sequence[TableBatch], offsets: Mapping[TopicPartition, int],
              reject: Reject | None) -> int:
        """Write ``batches`` and store ``offsets`` in one transaction; returns how many rows were refused.

        Raises:
            ConnectException: a refused row with no errant record reporter (``reject`` is ``None``).
            the driver's error: a retriable or fatal database error (the transaction is rolled back).
        """
        reports: list[Future[Any]] = []
        refused = 0

        def on_refused(record: SinkRecord, summary: str, message: str) -> None:
            nonlocal refused
            refused += 1
            if reject is None:
                raise ConnectException(f"{self.config.connector_name}: the database refused the row of record "
                                       f"{record.original_topic}[{record.original_kafka_partition}]@"
                                       f"{record.original_kafka_offset}: {summary} (configure "
                                       "errors.tolerance=all and errors.deadletterqueue.topic.name to keep going)")
            future = reject(record, message)
            if future is not None:
                reports.append(future)

        with conn.transaction():
            for batch in batches:
                if batch.delete_keys:
                    keys = batch.key_columns
                    self._halving(conn, batch.table, lambda rows, keys=keys, batch=batch: self.dialect.delete(
                        conn, batch.table, keys, rows), batch.delete_keys, batch.delete_records, on_refused)
                if batch.rows:
                    types = self._known.get(batch.table) if batch.typed else None
                    self._halving(conn, batch.table, lambda rows, batch=batch, types=types: self.dialect.write(
                        conn, batch.table, self.config.insert_mode, batch.columns, rows, types),
                        batch.rows, batch.row_records, on_refused)
            for future in reports:
                future.result()  # the dead letter queue holds them before their offsets are committed
            self.dialect.write_offsets(conn, self.offsets_table, self.config.connector_name, offsets)
        return refused

    def store_offsets(self, conn: Any, offsets: Mapping[TopicPartition, int]) -> None:
        """Store ``offsets`` alone (records that reached no table: filtered or dropped before ``put``)."""
        with conn.transaction():
            self.dialect.write_offsets(conn, self.offsets_table, self.config.connector_name, offsets)

    def read_offsets(self, conn: Any) -> dict[TopicPartition, int]:
        """The offsets stored for this connector (the offsets table is created when missing)."""
        if self._offsets_table_seen_by is not conn:
            with conn.transaction():
                self.dialect.ensure_offsets_table(conn, self.offsets_table)
            self._offsets_table_seen_by = conn
        return self.dialect.read_offsets(conn, self.offsets_table, self.config.connector_name)

    def _halving(self, conn: Any, table: TableId, write: Callable[[Sequence[tuple]], None], rows: Sequence[tuple],
                 records: Sequence[SinkRecord], refused: Callable[[SinkRecord, str, str], None]) -> None:
        """``write(rows)`` in a savepoint; a row-level refusal splits the rows in halves, down to single rows.

        ``refused`` gets each refused row's record, the database's message without and with its detail
        (the detail may quote the row's values: it goes to the dead letter queue, never to the log).
        """
        pending = [(0, len(rows))]
        while pending:
            start, stop = pending.pop()
            try:
                with conn.transaction():
                    write(rows[start:stop])
            except Exception as e:
                if self.dialect.error_kind(e) != ErrorKind.ROW:
                    raise
                if stop - start == 1:
                    log.warning("%s: row of %s[%s]@%s refused by %s: %s", self.config.connector_name,
                                records[start].original_topic, records[start].original_kafka_partition,
                                records[start].original_kafka_offset, table, self.dialect.describe_error(e))
                    refused(records[start], f"{table}: {self.dialect.describe_error(e)}",
                            f"{table}: {self.dialect.describe_error(e, detail=True)}")
                    continue
                middle = (start + stop) // 2
                pending.append((middle, stop))
                pending.append((start, middle))  # popped first: rows keep their order

