"""From a record frame to the rows of an Iceberg table: columns, id columns, tombstones, last-wins.

Pure DataFrame expressions (no action runs here), called by the task for each table's slice of a
micro-batch. As in Apache Iceberg's sink, a table's columns are the record value's fields (a value that
is not a struct is written under the column ``value``); the key is not written. For a tombstone (null
value) the id columns are taken from the key — its fields of the same names, or the key itself when it
is a primitive and there is one id column — so the row it deletes can be found.

Two helper columns travel with the rows and are never written (:mod:`connect_spark.connectors.changes`,
whose rules say which record deletes and which change of an id wins): ``DELETE`` (this change deletes its
id's row: a tombstone, a rewrite-mode delete marker, a ``D`` in ``iceberg.tables.cdc-field``) and ``ORDER``
(the record's offset, to keep the last change per id). A table without id columns takes no deletes: its
tombstones are left out of the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import NullType, StructType

from connect_spark.api.errors import DataException
from connect_spark.connectors.changes import DELETE, HELPER_COLUMNS, ORDER, ChangeRules, delete_condition, last_change_per_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["table_rows", "last_per_id", "data_columns", "missing_id_reason"]


def table_rows(frame: "DataFrame", id_columns: Sequence[str], op_field: str | None = None) -> "DataFrame":
    """The frame as table columns plus the helper columns (see the module docstring).

    Args:
        id_columns: the table's id columns; none: an append-only table.
        op_field: ``iceberg.tables.cdc-field``, the value field naming each change's operation.
    """
    rules = ChangeRules(deletes=bool(id_columns), op_field=op_field)
    value_type = frame.schema["value"].dataType
    key_type = frame.schema["key"].dataType
    columns: list[Column] = []
    if isinstance(value_type, StructType):
        consumed = rules.consumed_fields(value_type.fieldNames())
        names = [n for n in value_type.fieldNames() if n not in consumed]
        for name in names:
            column = F.col("value").getField(name)
            if name in id_columns:
                column = _with_key_fallback(column, name, value_type, key_type, id_columns)
            columns.append(column.alias(name))
    elif isinstance(value_type, NullType):
        # Only tombstones in this batch (a schemaless value typed from nulls): the ids come from the key.
        names = list(id_columns)
        columns += [_with_key_fallback(F.lit(None), n, None, key_type, id_columns).alias(n) for n in id_columns]
    else:
        names = ["value"]
        columns.append(F.col("value").alias("value"))
    missing = [c for c in id_columns if c not in names]
    if missing:
        raise DataException(f"The id column(s) {', '.join(missing)} are not fields of the record values "
                            f"(fields: {', '.join(names)})")
    columns.append(delete_condition(rules, value_type).alias(DELETE))
    columns.append(F.col("original_offset").alias(ORDER))
    if not rules.deletes:
        frame = frame.where(F.col("value").isNotNull())
    return frame.select(*columns)


def missing_id_reason(frame: "DataFrame", id_columns: Sequence[str]) -> Column | None:
    """Why a record cannot be upserted or deleted by ``id_columns`` (an id column is null), or null when it can.

    The id columns are read as :func:`table_rows` writes them: from the value, or from the key for a
    tombstone. A null id matches no row: such a record would be inserted again on every write, or, in a
    batch holding several, all but one dropped by :func:`last_per_id`. ``None`` without id columns or when
    the value has none of them (the write names those).
    """
    if not id_columns:
        return None
    value_type = frame.schema["value"].dataType
    key_type = frame.schema["key"].dataType
    reason: Column | None = None
    for name in id_columns:
        if isinstance(value_type, StructType):
            if name not in value_type.fieldNames():
                continue
            column = _with_key_fallback(F.col("value").getField(name), name, value_type, key_type, id_columns)
        elif isinstance(value_type, NullType):
            column = _with_key_fallback(F.lit(None), name, None, key_type, id_columns)
        else:
            continue
        what = (F.when(F.col("value").isNull(), F.lit(f"the tombstone's key gives no id column '{name}'"))
                .otherwise(F.lit(f"the id column '{name}' is null")))
        reason = (F.when(column.isNull(), what) if reason is None
                  else reason.when(column.isNull(), what))  # type: ignore[attr-defined]
    return reason


def _with_key_fallback(column: Column, name: str, value_type: StructType | None, key_type,
                       id_columns: Sequence[str]) -> Column:
    """The id column from the value, or from the key when the value is null (a tombstone)."""
    if isinstance(key_type, StructType):
        if name not in key_type.fieldNames():
            return column
        from_key = F.col("key").getField(name)
    elif len(id_columns) == 1:
        from_key = F.col("key")
    else:
        return column
    if value_type is not None:
        from_key = from_key.cast(value_type[name].dataType)
    return F.when(F.col("value").isNull(), from_key).otherwise(column)


def data_columns(rows: "DataFrame") -> list[str]:
    """The columns of ``rows`` that go to the table (helper columns left out)."""
    return [c for c in rows.columns if c not in HELPER_COLUMNS]


def last_per_id(rows: "DataFrame", id_columns: Sequence[str]) -> "DataFrame":
    """One row per id, the id's last change (:func:`connect_spark.connectors.changes.last_change_per_key`)."""
    return last_change_per_key(rows, id_columns)
