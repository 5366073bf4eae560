"""One Delta commit per table per batch: create, evolve, append or MERGE, with the offsets in the commit.

Called by :class:`~connect_spark.connectors.delta.task.DeltaSinkTask` on the driver, once per table
that the batch has records for. Every data commit carries the table's new
:class:`~connect_spark.connectors.delta.ledger.StoredOffsets` (``userMetadata``) and the connector's
transaction identifier (``txnAppId``/``txnVersion``), see ``ledger.py`` for why both.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from typing import TYPE_CHECKING, Iterator

from pyspark.sql import functions as F

from connect_spark.api.errors import ConnectException
from connect_spark.connectors.delta.config import DeltaSinkConfig
from connect_spark.connectors.delta.ledger import StoredOffsets
from connect_spark.connectors.changes import DELETE, HELPER_COLUMNS
from connect_spark.connectors.delta.rows import data_columns, last_per_key
from connect_spark.connectors.delta.target import TableTarget

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["write_batch", "compact", "SchemaMismatch"]

log = logging.getLogger(__name__)

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"

# MERGE takes its transaction identifier and commit metadata from session settings; they are set
# for the duration of one MERGE, one at a time per process.
_MERGE_SETTINGS_LOCK = threading.Lock()


class SchemaMismatch(ConnectException):
    """The records have a field the table lacks and ``auto.evolve`` is false."""


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def write_batch(spark: "SparkSession", target: TableTarget, rows: "DataFrame", keys: list[str],
                config: DeltaSinkConfig, before: StoredOffsets, after: StoredOffsets, topic: str,
                table: "StructType | None" = None) -> None:
    """Write ``rows`` (from ``rows.table_rows``, already stripped of stored records) in one commit.

    Args:
        target: the table.
        rows: table columns plus helper columns.
        keys: the upsert key columns (unused in append mode).
        before: the table's offsets before this write (carried by a schema-evolution commit).
        after: the offsets and sequence this commit records.
        topic: the records' topic, for error messages.
        table: the table's schema when the caller knows it (the table then exists and is not looked up
            again: a batch on the 1 s trigger is spared two reads of the Delta log).

    Raises:
        SchemaMismatch: a new field while ``auto.evolve=false``.
        ConnectException: ``partition.by`` names a column the records do not have.
    """
    columns = data_columns(rows)
    current = None if table is not None else target.frame_if_exists(spark)
    exists = table is not None or current is not None
    new_columns: list[str] = []
    if exists:
        known = table.fieldNames() if table is not None else current.columns
        table_columns = {c.lower() for c in known}
        new_columns = [c for c in columns if c.lower() not in table_columns]
        if new_columns and not config.auto_evolve:
            raise SchemaMismatch(
                f"Record field(s) {', '.join(new_columns)} of topic {topic} are not columns of the Delta table "
                f"{target}; set auto.evolve=true to add them"
            )
    else:
        missing = [c for c in config.partition_by if c not in columns]
        if missing:
            raise ConnectException(f"partition.by names {', '.join(missing)}, which the records of topic {topic} "
                                   f"do not have (columns: {', '.join(columns)})")
    if config.upsert and exists:
        if new_columns:
            _evolve(target, rows.select(*map(_quoted, columns)).limit(0), before)
        _merge(spark, target, rows, keys, columns, config, after)
    else:
        source = last_per_key(rows, keys) if config.upsert else rows
        written = source.where(~F.col(DELETE)) if config.delete_enabled else source
        # the data columns in their order: dropping the helper columns by name is one JVM call
        _append(target, written.drop(*HELPER_COLUMNS), config, after, create=not exists, evolve=bool(new_columns))
    log.info("Delta commit to %s: sequence %d, offsets %s", target, after.sequence,
             ", ".join(f"{tp}@{off}" for tp, off in sorted(after.offsets.items())))


def _options(writer, stored: StoredOffsets):
    return (writer.option("txnAppId", stored.app_id)
            .option("txnVersion", str(stored.sequence))
            .option("userMetadata", stored.to_metadata()))


def _append(target: TableTarget, rows: "DataFrame", config: DeltaSinkConfig, after: StoredOffsets,
            create: bool, evolve: bool) -> None:
    if config.files_per_commit:
        rows = rows.coalesce(config.files_per_commit)
    writer = _options(rows.write.format("delta").mode("append"), after)
    if create and config.partition_by:
        writer = writer.partitionBy(*config.partition_by)
    if evolve:
        writer = writer.option("mergeSchema", "true")
    target.save(writer)


def _evolve(target: TableTarget, empty: "DataFrame", before: StoredOffsets) -> None:
    """Add the new columns with an empty append (its commit repeats the table's current offsets)."""
    writer = (empty.write.format("delta").mode("append").option("mergeSchema", "true")
              .option("userMetadata", before.to_metadata()))
    target.save(writer)


@contextlib.contextmanager
def _merge_settings(spark: "SparkSession", stored: StoredOffsets) -> Iterator[None]:
    with _MERGE_SETTINGS_LOCK:
        spark.conf.set(_TXN_APP_ID, stored.app_id)
        spark.conf.set(_TXN_VERSION, str(stored.sequence))
        spark.conf.set(_USER_METADATA, stored.to_metadata())
        try:
            yield
        finally:
            for key in (_TXN_APP_ID, _TXN_VERSION, _USER_METADATA):
                spark.conf.unset(key)


def _merge(spark: "SparkSession", target: TableTarget, rows: "DataFrame", keys: list[str], columns: list[str],
           config: DeltaSinkConfig, after: StoredOffsets) -> None:
    """One ``MERGE INTO`` of the batch's last change per key (a deleting change deletes), carrying the offsets."""
    source = last_per_key(rows, keys)
    if config.files_per_commit:
        source = source.coalesce(config.files_per_commit)
    spark = source.sparkSession  # the batch's session: its temporary view and the statement live there
    view = f"connect_spark_merge_{uuid.uuid4().hex}"
    on = " AND ".join(f"t.{_quoted(k)} <=> s.{_quoted(k)}" for k in keys)
    names = ", ".join(_quoted(c) for c in columns)
    values = ", ".join(f"s.{_quoted(c)}" for c in columns)
    updates = ", ".join(f"{_quoted(c)} = s.{_quoted(c)}" for c in columns)
    statement = (f"MERGE INTO {target.sql_name} t USING {view} s ON {on} "
                 + (f"WHEN MATCHED AND s.{DELETE} THEN DELETE " if config.delete_enabled else "")
                 + f"WHEN MATCHED AND NOT s.{DELETE} THEN UPDATE SET {updates} "
                 f"WHEN NOT MATCHED AND NOT s.{DELETE} THEN INSERT ({names}) VALUES ({values})")
    source.createOrReplaceTempView(view)
    try:
        with _merge_settings(spark, after):
            spark.sql(statement)
    finally:
        spark.catalog.dropTempView(view)


def compact(spark: "SparkSession", target: TableTarget) -> None:
    """Compact the table's small files (Delta OPTIMIZE); called every ``delta.optimize.every.commits``."""
    log.info("Optimizing Delta table %s", target)
    spark.sql(f"OPTIMIZE {target.sql_name}")
