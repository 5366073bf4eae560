"""The Iceberg sink task: each micro-batch becomes one Iceberg commit per table, exactly once.

How exactly-once works (ARCHITECTURE.md §5, as for the Delta sink):

1. Every data commit the task makes stores, in the same snapshot, the next Kafka offset of every
   partition written to that table so far: a snapshot-summary property of the connector (``ledger.py``).
   For a batch bound for one existing table they are known before the write: the runtime gives the
   batch's ranges from the query's offset log (``put_dataframe_batch``), so the write is the batch's only
   Spark job; routed batches are aggregated first, to learn which tables they reach.
2. ``open`` reads those offsets back from the listed tables and rewinds the assigned partitions with
   ``context.offset``, so the runtime resumes from what the tables hold, not from the worker's offset
   store, which may lag behind (a crash between the Iceberg commit and the offset commit) or be lost.
3. ``put_dataframe(_batch)`` drops every record whose offset is below the table's stored next offset before
   writing. Re-delivered records are therefore never written twice, whatever Spark's batch id is.
4. ``put_dataframe(_batch)`` returns only after the commits, so everything handed over is in the tables (or was
   reported through ``errors.*``, or skipped on purpose: a tombstone for a table without id columns),
   and ``pre_commit`` returns the offsets it was given.
5. A commit refused because another writer committed first (Iceberg's optimistic concurrency) is
   retried: the task reads the table's offsets again, drops what they cover, and writes the rest.

With several tables each keeps its own offsets. ``open`` rewinds a partition to the lowest offset the
known tables hold for it — only when every known table holds one: a table that holds none (not created
yet, or a crash between the commits of two tables) leaves the partition where the worker's offset store
has it, which is never past what any table holds, since offsets are committed only after every table's
commit. The known tables are the listed ones and those this task has written. A table that dynamic
routing names later is learnt at its first write, where step 3 still prevents duplicates.

Records that reach no table (route field missing, no route-regex matching, a routed name that is not a
valid table name, or a routed table that does not exist while auto-create is off) go to the
connector's error reporters (``errors.log.enable``, ``errors.deadletterqueue.topic.name``), under
``errors.tolerance``; without a reporter they fail the task, naming the record.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import TYPE_CHECKING, Collection, Mapping

from pyspark.sql import functions as F

from connect_spark.api.bulk import DataFrameSinkTask
from connect_spark.api.errors import DataException
from connect_spark.api.records import SinkRecord, TimestampType, TopicPartition
from connect_spark.connectors.iceberg.catalog import register_catalog
from connect_spark.connectors.iceberg.config import AUTO_CREATE, COMMIT_RETRIES, IcebergSinkConfig
from connect_spark.connectors.iceberg.ledger import StoredOffsets, read_stored_offsets
from connect_spark.connectors.iceberg.rows import missing_id_reason, table_rows
from connect_spark.connectors.iceberg.target import (
    TABLE_COLUMN,
    TableTarget,
    route_value,
    routed,
    unrouted_reason,
    valid_table_name,
)
from connect_spark.connectors.iceberg.writer import TableMissing, is_commit_conflict, table_schema, write_table
from connect_spark.connectors.redelivery import not_yet_stored

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["IcebergSinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"

_MAX_REPORTED_IN_ERROR = 5


def _active_session() -> "SparkSession":
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


class IcebergSinkTask(DataFrameSinkTask):
    """Writes each micro-batch to Iceberg tables; see the module docstring for the offset protocol."""

    reads_headers = False  # rows hold the record values, never headers

    def __init__(self) -> None:
        self.config: IcebergSinkConfig | None = None
        self._stored: dict[TableTarget, StoredOffsets] = {}
        self._schemas: dict[TableTarget, "StructType | None"] = {}
        self._catalog_ready = False
        self._last_commit: float | None = None
        self._stopping = threading.Event()

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once, before ``open``: parses the configuration (no Spark work)."""
        self.config = IcebergSinkConfig.parse(props)
        self._stored.clear()
        self._schemas.clear()
        self._catalog_ready = False
        self._stopping.clear()

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are assigned: registers the catalog, then rewinds the
        partitions to the offsets the listed tables hold.

        Raises:
            TableMissing: a listed table does not exist and auto-create is off.
        """
        config = self._require_config()
        self._stopping.clear()
        spark = _active_session()
        self._ensure_catalog(spark)
        for name in config.tables:
            target = TableTarget(config.catalog, name)
            if self._schema(spark, target) is None and not config.auto_create:
                raise TableMissing(f"The Iceberg table {target} (iceberg.tables) does not exist; create it, or set "
                                   f"{AUTO_CREATE}=true")
            self._stored_offsets(spark, target)
        seeks: dict[TopicPartition, int] = {}
        for tp in partitions:
            held = [stored.offsets.get(tp) for stored in self._stored.values()]
            # A known table without an offset for tp (not created yet, or killed before its first commit while
            # another table committed) may still need every record the worker has not committed: no seek then.
            if held and None not in held:
                seeks[tp] = min(held)  # type: ignore[type-var]
        if seeks:
            log.info("%s: resuming from the offsets stored in Iceberg: %s", config.connector_name,
                     ", ".join(f"{tp}@{off}" for tp, off in sorted(seeks.items())))
            self.context.offset(seeks)

    def put_dataframe(self, frame: "DataFrame", batch_id: int) -> None:
        """Called by the runtime (or a test) on the driver per micro-batch when the batch's offset ranges are not
        used: one commit per table with new records, the tables and their offsets aggregated from the frame
        first (one Spark job)."""
        config = self._require_config()
        spark = frame.sparkSession
        self._ensure_catalog(spark)
        started = time.monotonic()
        tagged = routed(frame, config)
        summary = (tagged.groupBy(TABLE_COLUMN, "original_topic", "original_partition")
                   .agg(F.max("original_offset").alias("last")).collect())
        by_table: dict[str, dict[TopicPartition, int]] = {}
        unroutable: set[str | None] = set()
        for row in summary:
            name = row[TABLE_COLUMN]
            if name is None or not valid_table_name(name):
                unroutable.add(name)
                continue
            tp = TopicPartition(row["original_topic"], row["original_partition"])
            written = by_table.setdefault(name, {})
            written[tp] = max(written.get(tp, 0), row["last"] + 1)
        if unroutable:
            self._report(tagged, unroutable, unrouted_reason(config))
        single = self._one_table() is not None
        for name, written in sorted(by_table.items()):
            records = frame if single else tagged.where(F.col(TABLE_COLUMN) == name).drop(TABLE_COLUMN)
            self._write(spark, TableTarget(config.catalog, name), records, written)
        self._pace(started)

    def put_dataframe_batch(self, frame: "DataFrame", batch_id: int,
                            offsets: Mapping[TopicPartition, tuple[int, int]]) -> None:
        """Called by the runtime on the driver per micro-batch, with the batch's offset ranges.

        Without routing every record goes to the one table, so its commit stores the batch's next offsets
        as the runtime gives them and the write is the batch's only Spark job (the runtime's check of
        ``rejected_rows`` aside). A table still to be created is created only by a batch holding a record
        for it: a ``limit(1)`` job looks first. Routed batches are aggregated first (:meth:`put_dataframe`).
        """
        name = self._one_table()
        if name is None:
            self.put_dataframe(frame, batch_id)
            return
        config = self._require_config()
        spark = frame.sparkSession
        self._ensure_catalog(spark)
        target = TableTarget(config.catalog, name)
        if self._schema(spark, target) is None and frame.isEmpty():
            log.info("%s: no Iceberg table %s yet and no record for it in this batch", config.connector_name, target)
            return
        started = time.monotonic()
        self._write(spark, target, frame, {tp: end for tp, (_, end) in offsets.items()},
                    {tp: start for tp, (start, _) in offsets.items()})
        self._pace(started)

    def writes_atomically(self) -> bool:
        """Called by the runtime before each batch: True when the batch is appended to one table, one Iceberg
        commit (a write that fails leaves no snapshot), so the runtime may hand it over in one Spark pass.

        Routing spreads a batch over several commits. An upsert table is one commit too, but its batch is
        read several times (the null-id check of :meth:`rejected_rows`, the MERGE source's checkpoint):
        from the runtime's cache (the checked way) that is one read from Kafka instead of two (measured a
        few per cent faster, within the noise of a 2-core machine: see docs/performance.md, Iceberg sink).
        """
        name = self._one_table()
        return name is not None and not self._require_config().table_settings(name).id_columns

    def rejected_rows(self, frame: "DataFrame") -> "Column | None":
        """Called by the runtime before ``put_dataframe(_batch)``: what an upsert table cannot take is a record error.

        A record bound for a table with id columns (``iceberg.tables.default-id-columns`` or the table's
        ``id-columns``) whose id column is null — in the value, or in the key for a tombstone — is named
        with the reason (``rows.missing_id_reason``), never written as a row no upsert or delete can find.
        A record routed to several tables is named when one of them cannot take it.
        """
        config = self._require_config()
        reasons = []
        for bound_here, id_columns in _id_scopes(frame, config):
            reason = missing_id_reason(frame, id_columns)
            if reason is not None:
                reasons.append(reason if bound_here is None else F.when(bound_here, reason))
        if not reasons:
            return None
        return reasons[0] if len(reasons) == 1 else F.coalesce(*reasons)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick. ``put_dataframe(_batch)`` returns only after its Iceberg
        commits, so every offset handed over is in the tables (or was reported or skipped on purpose)."""
        return dict(current_offsets)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are revoked: ends a commit-interval wait; nothing is buffered."""
        self._stopping.set()

    def stop(self) -> None:
        """Called by the runtime once at the end: ends a commit-interval wait and forgets the cached state."""
        self._stopping.set()
        self._stored.clear()
        self._schemas.clear()

    def stored_offsets(self) -> dict[TableTarget, StoredOffsets]:
        """The offsets this task knows each table holds (for tests and diagnostics)."""
        return dict(self._stored)

    def _write(self, spark: "SparkSession", target: TableTarget, records: "DataFrame",
               written: Mapping[TopicPartition, int], firsts: Mapping[TopicPartition, int] | None = None) -> None:
        """One table's share of the batch: drop what the table holds, write the rest, retry on conflicts.

        ``written``: the next offset per partition this commit stores. ``firsts``: the batch's first offset per
        partition when known; only partitions whose records start before what the table holds are filtered
        (a re-delivery), so a batch after the table's last commit carries no filter. ``None``: every
        partition the table holds is filtered.
        """
        config = self._require_config()
        settings = config.table_settings(target.name)
        topics = ", ".join(sorted({tp.topic for tp in written}))
        for attempt in range(COMMIT_RETRIES + 1):
            schema = self._schema(spark, target)
            if schema is None and not config.auto_create and config.dynamic:
                self._report(records.withColumn(TABLE_COLUMN, F.lit(target.name)), {target.name},
                             f"the routed table {target} does not exist and {AUTO_CREATE}=false")
                return
            before = self._stored_offsets(spark, target)
            fresh = {tp: off for tp, off in written.items() if off > before.offsets.get(tp, 0)}
            if not fresh:
                log.info("%s: the batch holds only records %s already has", config.connector_name, target)
                return
            rows = table_rows(not_yet_stored(records, before.offsets, firsts), settings.id_columns, config.cdc_field)
            after = before.advanced(fresh)
            try:
                written_schema = write_table(spark, target, rows, settings, config, schema, after,
                                             f"topic(s) {topics}")
            except Exception as e:
                # The commit may or may not have happened: read the table again before any retry.
                self._stored.pop(target, None)
                self._schemas.pop(target, None)
                if is_commit_conflict(e) and attempt < COMMIT_RETRIES:
                    log.warning("%s: commit to %s conflicted with another writer (attempt %d of %d), retrying: %s",
                                config.connector_name, target, attempt + 1, COMMIT_RETRIES + 1,
                                str(e).splitlines()[0])
                    time.sleep(min(2.0, 0.1 * 2 ** attempt))
                    continue
                raise
            if written_schema is not None:
                self._schemas[target] = written_schema
                self._stored[target] = after
            return

    def _report(self, tagged: "DataFrame", names: set[str | None], reason: str) -> None:
        """Send the records routed to ``names`` (None: to no table) to the error reporters."""
        condition = None
        for name in names:
            match = F.col(TABLE_COLUMN).isNull() if name is None else F.col(TABLE_COLUMN) == name
            condition = match if condition is None else condition | match
        rows = tagged.where(condition).drop(TABLE_COLUMN).dropDuplicates(
            ["original_topic", "original_partition", "original_offset"]).collect()
        reporter = self.context.errant_record_reporter() if self.context is not None else None
        if reporter is None:
            shown = ", ".join(f"{r['original_topic']}[{r['original_partition']}]@{r['original_offset']}"
                              for r in rows[:_MAX_REPORTED_IN_ERROR])
            more = f" and {len(rows) - _MAX_REPORTED_IN_ERROR} more" if len(rows) > _MAX_REPORTED_IN_ERROR else ""
            raise DataException(
                f"{len(rows)} record(s) cannot be routed to an Iceberg table ({reason}): {shown}{more}. Set "
                "errors.tolerance=all with errors.deadletterqueue.topic.name or errors.log.enable=true to "
                "report them and go on")
        for row in rows:
            record = _sink_record(row)
            reporter.report(record, DataException(
                f"Record {record.topic}[{record.kafka_partition}]@{record.kafka_offset} cannot be routed to an "
                f"Iceberg table: {reason}"))
        log.warning("%d record(s) reported through errors.*: %s", len(rows), reason)

    def _pace(self, started: float) -> None:
        """Wait out ``iceberg.control.commit.interval-ms`` since the start of this batch's commits."""
        interval = self._require_config().commit_interval_ms
        if interval:
            remaining = interval / 1000.0 - (time.monotonic() - started)
            if remaining > 0:
                self._stopping.wait(remaining)

    def _one_table(self) -> str | None:
        """The one table every record goes to (``iceberg.tables`` names one, no routing), else ``None``."""
        config = self._require_config()
        if config.dynamic or config.route_field or len(config.tables) != 1:
            return None
        return config.tables[0]

    def _ensure_catalog(self, spark: "SparkSession") -> None:
        if not self._catalog_ready:
            register_catalog(spark, self._require_config())
            self._catalog_ready = True

    def _schema(self, spark: "SparkSession", target: TableTarget) -> "StructType | None":
        if target not in self._schemas or self._schemas[target] is None:
            self._schemas[target] = table_schema(spark, target)
        return self._schemas[target]

    def _stored_offsets(self, spark: "SparkSession", target: TableTarget) -> StoredOffsets:
        """The table's offsets, read from its snapshots the first time the task uses the table."""
        config = self._require_config()
        stored = self._stored.get(target)
        if stored is None:
            stored = (read_stored_offsets(spark, target, config.connector_name)
                      if self._schema(spark, target) is not None else StoredOffsets(config.connector_name))
            self._stored[target] = stored
        return stored

    def _require_config(self) -> IcebergSinkConfig:
        if self.config is None:
            raise RuntimeError("IcebergSinkTask used before start()")
        return self.config


def _id_scopes(frame: "DataFrame", config: IcebergSinkConfig) -> list[tuple["Column | None", tuple[str, ...]]]:
    """Per set of id columns, which records go to a table upserted on it (``None``: every record)."""
    scopes: list[tuple["Column | None", tuple[str, ...]]] = []
    if config.dynamic:
        assert config.route_field is not None
        table = F.lower(route_value(frame, config.route_field))
        own = {name: config.table_settings(name).id_columns for name in config.per_table}
        for name, id_columns in sorted(own.items()):
            scopes.append((table == F.lit(name), id_columns))
        if config.default_id_columns:
            others = ~table.isin(*own) if own else None
            scopes.append((others, config.default_id_columns))
        return scopes
    value = route_value(frame, config.route_field) if config.route_field else None
    for name in config.tables:
        settings = config.table_settings(name)
        if value is None:
            scopes.append((None, settings.id_columns))
        elif settings.route_regex is not None:
            scopes.append((value.rlike(f"^(?:{settings.route_regex.pattern})$"), settings.id_columns))
    return scopes


def _sink_record(row: "Row") -> SinkRecord:
    """A record of the frame as the error reporters take it (schemaless key and value)."""
    data = row.asDict(recursive=True)
    timestamp = data.get("timestamp")
    millis = None
    if isinstance(timestamp, dt.datetime):
        # pyspark hands timestamps over as naive local times; .timestamp() reads them back as such.
        millis = int(timestamp.timestamp() * 1000)
    timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    if millis is not None and data.get("timestamp_type") in (0, 1):
        timestamp_type = TimestampType.CREATE_TIME if data["timestamp_type"] == 0 else TimestampType.LOG_APPEND_TIME
    return SinkRecord(
        topic=data["topic"], kafka_partition=data["partition"], key_schema=None, key=data.get("key"),
        value_schema=None, value=data.get("value"), kafka_offset=data["offset"], timestamp=millis,
        timestamp_type=timestamp_type, original_topic=data["original_topic"],
        original_kafka_partition=data["original_partition"], original_kafka_offset=data["original_offset"])
