"""One Iceberg commit per table per batch: create, evolve, then append or MERGE, with the offsets in the snapshot.

Called by :class:`~connect_spark.connectors.iceberg.task.IcebergSinkTask` on the driver, once per table the
batch has records for. Every data commit carries the table's new
:class:`~connect_spark.connectors.iceberg.ledger.StoredOffsets` as a snapshot-summary property (see
``ledger.py``). Creating a table and adding columns are metadata commits of their own, made before the
data commit; they carry no offsets and are harmless to repeat.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from typing import TYPE_CHECKING, Iterator, Sequence

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StructField,
    StructType,
)

from connect_spark.api.errors import ConnectException
from connect_spark.connectors.iceberg.config import (
    AUTO_CREATE,
    CASE_INSENSITIVE,
    EVOLVE_SCHEMA,
    IcebergSinkConfig,
    TableSettings,
)
from connect_spark.connectors.iceberg.ledger import StoredOffsets
from connect_spark.connectors.changes import DELETE, HELPER_COLUMNS
from connect_spark.connectors.iceberg.rows import data_columns, last_per_id
from connect_spark.connectors.iceberg.target import TableTarget

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["write_table", "table_schema", "SchemaMismatch", "TableMissing", "is_commit_conflict"]

log = logging.getLogger(__name__)

_SESSION_SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."
# MERGE takes its snapshot properties from a session setting: set for one MERGE at a time per process.
_MERGE_SETTINGS_LOCK = threading.Lock()
_CONFLICT_MARKERS = ("CommitFailedException", "ValidationException", "Found conflicting files",
                     "Cannot commit", "CommitStateUnknownException")
_PROMOTIONS = {(IntegerType, LongType), (FloatType, DoubleType)}


class SchemaMismatch(ConnectException):
    """The records have a field the table lacks (or a wider type) and schema evolution is off."""


class TableMissing(ConnectException):
    """The table does not exist and ``iceberg.tables.auto-create-enabled`` is false."""


def is_commit_conflict(error: BaseException) -> bool:
    """True when ``error`` is Iceberg refusing a commit because another writer committed first."""
    text = f"{type(error).__name__}: {error}"
    return any(marker in text for marker in _CONFLICT_MARKERS)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_schema(spark: "SparkSession", target: TableTarget) -> StructType | None:
    """The table's schema, or ``None`` when the table does not exist."""
    try:
        return spark.table(target.identifier).schema
    except Exception as e:  # AnalysisException: TABLE_OR_VIEW_NOT_FOUND
        if "TABLE_OR_VIEW_NOT_FOUND" in str(e) or "NoSuchTableException" in str(e):
            return None
        raise


def ddl_type(data_type: DataType) -> str:
    """A Spark SQL type string for ``data_type``, field names quoted."""
    if isinstance(data_type, StructType):
        return "struct<" + ",".join(f"{_quoted(f.name)}:{ddl_type(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{ddl_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{ddl_type(data_type.keyType)},{ddl_type(data_type.valueType)}>"
    return data_type.simpleString()


def _optional(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _optional(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_optional(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(data_type.keyType, _optional(data_type.valueType), True)
    return data_type


def create_table(spark: "SparkSession", target: TableTarget, schema: StructType, settings: TableSettings,
                 config: IcebergSinkConfig) -> None:
    """Create ``target`` from the record schema with the configured partition spec and properties."""
    if config.force_optional:
        schema = _optional(schema)  # type: ignore[assignment]
    if target.namespace:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {target.namespace}")
    view = f"connect_spark_iceberg_new_{uuid.uuid4().hex}"
    spark.createDataFrame([], schema).createOrReplaceTempView(view)
    partition = f" PARTITIONED BY ({', '.join(settings.partition_by)})" if settings.partition_by else ""
    properties = ""
    if config.auto_create_properties:
        properties = " TBLPROPERTIES (" + ", ".join(
            f"'{k.replace(chr(39), '')}' = '{v.replace(chr(39), chr(92) + chr(39))}'"
            for k, v in sorted(config.auto_create_properties.items())) + ")"
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {target.identifier} USING iceberg{partition}{properties} "
                  f"AS SELECT * FROM {view}")
    except Exception as e:
        if settings.partition_by:
            raise ConnectException(
                f"Could not create the Iceberg table {target} partitioned by {', '.join(settings.partition_by)} "
                f"(columns: {', '.join(schema.fieldNames())}): {str(e).splitlines()[0]}") from e
        raise
    finally:
        spark.catalog.dropTempView(view)
    log.info("Created Iceberg table %s (%s)%s", target, ", ".join(schema.fieldNames()), partition)


def _find(fields: Sequence[StructField], name: str, case_insensitive: bool) -> StructField | None:
    for f in fields:
        if f.name == name or (case_insensitive and f.name.lower() == name.lower()):
            return f
    return None


def schema_changes(table: StructType, records: StructType, case_insensitive: bool,
                   path: str = "") -> tuple[list[tuple[str, DataType]], list[tuple[str, DataType]]]:
    """What the table lacks for the records: (new columns, promoted columns), each as (dotted path, type)."""
    added: list[tuple[str, DataType]] = []
    promoted: list[tuple[str, DataType]] = []
    for field in records.fields:
        column = _find(table.fields, field.name, case_insensitive)
        name = f"{path}{_quoted(column.name if column else field.name)}"
        if column is None:
            added.append((name, field.dataType))
        elif isinstance(column.dataType, StructType) and isinstance(field.dataType, StructType):
            more_added, more_promoted = schema_changes(column.dataType, field.dataType, case_insensitive, name + ".")
            added += more_added
            promoted += more_promoted
        elif (type(column.dataType), type(field.dataType)) in _PROMOTIONS:
            promoted.append((name, field.dataType))
        elif (isinstance(column.dataType, DecimalType) and isinstance(field.dataType, DecimalType)
              and column.dataType.scale == field.dataType.scale
              and field.dataType.precision > column.dataType.precision):
            promoted.append((name, field.dataType))
    return added, promoted


def evolve(spark: "SparkSession", target: TableTarget, table: StructType, records: StructType,
           config: IcebergSinkConfig, topic_hint: str) -> bool:
    """Add the columns the records have and the table lacks, and widen promoted types.

    Returns:
        True when the table's schema changed.

    Raises:
        SchemaMismatch: changes are needed and ``iceberg.tables.evolve-schema-enabled`` is false.
    """
    added, promoted = schema_changes(table, records, config.case_insensitive)
    if not added and not promoted:
        return False
    if not config.evolve_schema:
        described = [f"{n.replace('`', '')} ({ddl_type(t)})" for n, t in added]
        described += [f"{n.replace('`', '')} (wider type {ddl_type(t)})" for n, t in promoted]
        hint = ""
        lowered = {f.name.lower() for f in table.fields}
        if not config.case_insensitive and any(n.strip("`").lower() in lowered for n, _ in added):
            hint = f"; or {CASE_INSENSITIVE}=true to match fields to columns ignoring case"
        raise SchemaMismatch(
            f"Record field(s) {', '.join(described)} of {topic_hint} do not fit the Iceberg table {target}; "
            f"set {EVOLVE_SCHEMA}=true to add or widen them{hint}")
    if added:
        force = config.force_optional
        columns = ", ".join(f"{n} {ddl_type(_optional(t) if force else t)}" for n, t in added)
        spark.sql(f"ALTER TABLE {target.identifier} ADD COLUMNS ({columns})")
    for name, data_type in promoted:
        spark.sql(f"ALTER TABLE {target.identifier} ALTER COLUMN {name} TYPE {ddl_type(data_type)}")
    log.info("Evolved Iceberg table %s: added %s, widened %s", target,
             ", ".join(n for n, _ in added) or "nothing", ", ".join(n for n, _ in promoted) or "nothing")
    return True


def _aligned(rows: "DataFrame", table: StructType, case_insensitive: bool) -> "DataFrame":
    """``rows`` with the table's columns in the table's order and spelling (nulls for columns the records lack)."""
    available = {c: c for c in data_columns(rows)}
    lookup = {c.lower(): c for c in available} if case_insensitive else available
    columns = []
    for column in table.fields:
        source = lookup.get(column.name.lower() if case_insensitive else column.name)
        if source is None:
            columns.append(F.lit(None).cast(column.dataType).alias(column.name))
        else:
            columns.append(F.col(_quoted(source)).alias(column.name))
    return rows.select(*columns, *HELPER_COLUMNS)


def write_table(spark: "SparkSession", target: TableTarget, rows: "DataFrame", settings: TableSettings,
                config: IcebergSinkConfig, schema: StructType | None, after: StoredOffsets,
                topic_hint: str) -> StructType | None:
    """Write ``rows`` (from ``rows.table_rows``, already stripped of stored records) in one data commit.

    Args:
        schema: the table's schema as the task last saw it, ``None`` when the table does not exist.
        after: the offsets and sequence this commit records.
        topic_hint: where the records come from, for error messages.

    Returns:
        The table's schema after the write (cached by the task); ``None`` when nothing was written
        (no table yet and only tombstones, which create nothing).

    Raises:
        TableMissing: no table and auto-create is off.
        SchemaMismatch: a field the table lacks while evolution is off.
    """
    record_schema = StructType([f for f in rows.schema.fields if f.name not in HELPER_COLUMNS])
    if schema is None and not record_schema.fields:
        log.info("No Iceberg table %s yet and only tombstones for it: nothing to create or write", target)
        return None
    if schema is None:
        if not config.auto_create:
            raise TableMissing(f"The Iceberg table {target} does not exist; create it, or set {AUTO_CREATE}=true")
        create_table(spark, target, record_schema, settings, config)
        schema = table_schema(spark, target)
        assert schema is not None
    elif evolve(spark, target, schema, record_schema, config, topic_hint):
        schema = table_schema(spark, target)
        assert schema is not None
    aligned = _aligned(rows, schema, config.case_insensitive)
    if settings.id_columns:
        ids = [c.name for c in schema.fields if any(
            c.name == i or (config.case_insensitive and c.name.lower() == i.lower()) for i in settings.id_columns)]
        _merge(spark, target, aligned, ids, schema.fieldNames(), after)
    else:
        _append(target, aligned.where(~F.col(DELETE)), schema.fieldNames(), after)
    log.info("Iceberg commit to %s: sequence %d, offsets %s", target, after.sequence,
             ", ".join(f"{tp}@{off}" for tp, off in sorted(after.offsets.items())))
    return schema


def _append(target: TableTarget, rows: "DataFrame", columns: list[str], after: StoredOffsets) -> None:
    (rows.select(*map(_quoted, columns)).writeTo(target.identifier)
     .option(f"snapshot-property.{after.property_key}", after.to_property())
     .append())


@contextlib.contextmanager
def _snapshot_property(spark: "SparkSession", stored: StoredOffsets) -> Iterator[None]:
    key = _SESSION_SNAPSHOT_PROPERTY + stored.property_key
    with _MERGE_SETTINGS_LOCK:
        spark.conf.set(key, stored.to_property())
        try:
            yield
        finally:
            spark.conf.unset(key)


def _merge(spark: "SparkSession", target: TableTarget, rows: "DataFrame", ids: list[str], columns: list[str],
           after: StoredOffsets) -> None:
    """MERGE the last change per id: a deleting change deletes, others update or insert the whole row.

    The source is materialised first (``localCheckpoint``): a record frame may carry non-deterministic
    expressions (the runtime's conversion plan does), and MERGE refuses a join over those.
    """
    source = last_per_id(rows, ids).localCheckpoint(eager=True)
    view = f"connect_spark_iceberg_merge_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    on = " AND ".join(f"t.{_quoted(i)} = s.{_quoted(i)}" for i in ids)
    assignments = ", ".join(f"t.{_quoted(c)} = s.{_quoted(c)}" for c in columns)
    names = ", ".join(map(_quoted, columns))
    values = ", ".join(f"s.{_quoted(c)}" for c in columns)
    statement = (f"MERGE INTO {target.identifier} t USING {view} s ON {on} "
                 f"WHEN MATCHED AND s.{DELETE} THEN DELETE "
                 f"WHEN MATCHED THEN UPDATE SET {assignments} "
                 f"WHEN NOT MATCHED AND NOT s.{DELETE} THEN INSERT ({names}) VALUES ({values})")
    try:
        with _snapshot_property(spark, after):
            spark.sql(statement)
    finally:
        spark.catalog.dropTempView(view)
        source.unpersist()
