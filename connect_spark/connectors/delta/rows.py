"""From a record frame to the rows of a Delta table: columns, keys, tombstones, last-wins.

Pure DataFrame expressions (no action runs here), called by the task for each table's slice of a
micro-batch. The table's columns are:

* the key columns (``pk.mode=record_key``): the key struct's fields, or the primitive key under one name;
* the value's fields when the value is a struct, otherwise the value under the column ``value``;
* the Kafka coordinate columns that are configured (``delta.column.*``).

Two helper columns travel with the rows and are never written (:mod:`connect_spark.connectors.changes`,
whose rules say which record deletes and which change of a key wins): ``DELETE`` (this change deletes its
key's row) and ``ORDER`` (the record's offset, to pick the last change per key). Without ``delete.enabled``
tombstones are left out of the rows, and the rewrite-mode delete marker is an ordinary column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StructField,
    StructType,
)

from connect_spark.api.errors import ConnectException, DataException
from connect_spark.columnar.reused_columns import reused_columns
from connect_spark.connectors.changes import DELETE, HELPER_COLUMNS, ORDER, delete_condition, last_change_per_key
from connect_spark.connectors.delta.config import DeltaSinkConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["table_rows", "last_per_key", "key_columns", "data_columns", "unusable_key", "table_type_misfits",
           "fit_to_table", "widens"]

_DEFAULT_PRIMITIVE_KEY_COLUMN = "key"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def key_columns(frame: "DataFrame", config: DeltaSinkConfig) -> list[str]:
    """The primary-key column names of the table (empty unless a pk.mode is set)."""
    if config.pk_mode == "record_value":
        return list(config.pk_fields)
    if config.pk_mode == "record_key":
        key_type = frame.schema["key"].dataType
        if isinstance(key_type, StructType):
            names = [f.name for f in key_type.fields]
            missing = [f for f in config.pk_fields if f not in names]
            if missing:
                raise DataException(f"pk.fields names {', '.join(missing)}, which the record key does not have "
                                    f"(key fields: {', '.join(names)})")
            return list(config.pk_fields) or names
        if len(config.pk_fields) > 1:
            raise DataException(f"The record key is a primitive ({key_type.simpleString()}): pk.fields must name "
                                f"one column for it, not {', '.join(config.pk_fields)}")
        return [config.pk_fields[0] if config.pk_fields else _DEFAULT_PRIMITIVE_KEY_COLUMN]
    return []


def unusable_key(frame: "DataFrame", config: DeltaSinkConfig) -> Column | None:
    """Why a record cannot be upserted or deleted (no key, a null key field), or null when it can.

    Called by the task's ``rejected_rows`` in upsert mode: such records are record errors, never rows
    keyed by null. ``None`` outside upsert mode. A tombstone is checked only when ``delete.enabled``
    (otherwise it is skipped anyway).
    """
    if not config.upsert:
        return None
    names = key_columns(frame, config)
    checked = F.lit(True) if config.delete_enabled else F.col("value").isNotNull()
    if config.pk_mode == "record_key":
        key = F.col("key")
        reason = F.when(key.isNull(), F.lit("the record has no key, and pk.mode=record_key needs one"))
        if isinstance(frame.schema["key"].dataType, StructType):
            for name in names:
                reason = reason.when(key.getField(name).isNull(), F.lit(f"the key field '{name}' (pk.fields) is null"))
    else:
        value = F.col("value")
        reason = F.when(F.lit(False), F.lit(None).cast("string"))
        value_type = frame.schema["value"].dataType
        for name in names:
            if isinstance(value_type, StructType) and name in value_type.fieldNames():
                reason = reason.when(value.getField(name).isNull(),
                                     F.lit(f"the value field '{name}' (pk.fields) is null"))
    return F.when(checked, reason)


def _table_columns(frame: "DataFrame", config: DeltaSinkConfig) -> list[tuple[str, Column, DataType]]:
    """The table's columns as (name, expression over the frame, its type), in table order; the types come
    from the frame's schema, so asking for them runs no analysis. Built once per frame schema and settings
    (:mod:`connect_spark.columnar.reused_columns`): a batch's frame has the schema of the one before."""
    schema = frame.schema
    return reused_columns(("delta.table_columns", schema.json(), *_layout_settings(config)),
                          lambda: _build_table_columns(frame, schema, config))


def _layout_settings(config: DeltaSinkConfig) -> tuple:
    """The settings the table's columns depend on."""
    return (config.pk_mode, tuple(config.pk_fields), tuple(sorted(config.coordinate_columns.items())),
            config.delete_enabled)


def _build_table_columns(frame: "DataFrame", schema: StructType,
                         config: DeltaSinkConfig) -> list[tuple[str, Column, DataType]]:
    columns: list[tuple[str, Column, DataType]] = []
    taken: set[str] = set()
    if config.pk_mode == "record_key":
        key_type = schema["key"].dataType
        names = key_columns(frame, config)
        if isinstance(key_type, StructType):
            columns += [(n, F.col("key").getField(n), key_type[n].dataType) for n in names]
        else:
            columns.append((names[0], F.col("key"), key_type))
        taken.update(names)
    value_type = schema["value"].dataType
    if isinstance(value_type, StructType):
        consumed = config.change_rules.consumed_fields(value_type.fieldNames())
        columns += [(f.name, F.col("value").getField(f.name), f.dataType) for f in value_type.fields
                    if f.name not in taken and f.name not in consumed]
        taken.update(f.name for f in value_type.fields)
    elif "value" not in taken:
        columns.append(("value", F.col("value"), value_type))
        taken.add("value")
    for source, name in config.coordinate_columns.items():
        if name in taken:
            raise ConnectException(f"delta.column.{source}={name} clashes with a record field of the same name")
        columns.append((name, F.col(source), schema[source].dataType))
    return columns


def table_rows(frame: "DataFrame", config: DeltaSinkConfig) -> "DataFrame":
    """The frame as table columns plus the helper columns (see the module docstring)."""
    def build() -> list[Column]:
        columns = [c.alias(name) for name, c, _ in _table_columns(frame, config)]
        columns.append(delete_condition(config.change_rules, frame.schema["value"].dataType).alias(DELETE))
        columns.append(F.col("original_offset").alias(ORDER))
        return columns

    if not config.delete_enabled:
        frame = frame.where(F.col("value").isNotNull())  # a skipped tombstone must not hide its key's record
    return frame.select(*reused_columns(("delta.table_rows", frame.schema.json(), *_layout_settings(config)), build))


_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_NESTED = (StructType, ArrayType, MapType)


def widens(source: DataType, target: DataType) -> bool:
    """True when every value of ``source`` is a value of ``target``: equal types, nulls only, a narrower
    integer, an integer or float into double. Nested types are compared by Delta itself."""
    if source == target or isinstance(source, NullType):
        return True
    if isinstance(source, _INTEGRAL) and isinstance(target, _INTEGRAL):
        return _INTEGRAL.index(type(source)) <= _INTEGRAL.index(type(target))
    return isinstance(target, DoubleType) and isinstance(source, (*_INTEGRAL, FloatType))


def _mismatched(source: DataType, target: DataType) -> bool:
    """A column type the table's column cannot take, not even by widening (nested pairs left to Delta)."""
    if isinstance(source, _NESTED) and type(source) is type(target):
        return False
    return not widens(source, target)


def table_type_misfits(frame: "DataFrame", config: DeltaSinkConfig, table: StructType) -> Column | None:
    """Why a record's field cannot go into the existing table's column (its type neither equals nor widens
    into the column's), or null when it can; ``None`` when every column fits.

    Called by the task's ``rejected_rows``: a table column keeps its type, so a value of another type is a
    record error, never a silent cast or a failed commit.
    """
    table_types = {f.name.lower(): f.dataType for f in table.fields}
    reason: Column | None = None
    for name, column, column_type in _table_columns(frame, config):
        target = table_types.get(name.lower())
        if target is None or not _mismatched(column_type, target):
            continue
        if _fractions_into_integers(column_type, target):
            # a schemaless batch holding one fraction types the whole field double: its whole numbers
            # still go into the integer column, the fractions (and numbers beyond it) do not
            bound = float(2 ** (8 * {ByteType: 1, ShortType: 2, IntegerType: 4, LongType: 8}[type(target)] - 1))
            refused = column.isNotNull() & (F.isnan(column) | (column != F.floor(column))
                                            | (column < -bound) | (column >= bound))
            text = (f"field '{name}' is a fraction or a number beyond the range of the Delta table's column "
                    f"({target.simpleString()})")
        else:
            refused = column.isNotNull()
            text = (f"field '{name}' is a {column_type.simpleString()} where the Delta table's column is "
                    f"{target.simpleString()}")
        reason = F.when(refused, F.lit(text)) if reason is None else reason.when(refused, F.lit(text))
    return reason


def _fractions_into_integers(source: DataType, target: DataType) -> bool:
    return isinstance(source, (DoubleType, FloatType)) and isinstance(target, _INTEGRAL)


def fit_to_table(rows: "DataFrame", table: StructType) -> "DataFrame":
    """``rows`` (from :func:`table_rows`) with columns cast to the existing table's types where they widen
    (or are whole numbers typed double, see :func:`table_type_misfits`); a column that does not fit holds
    only nulls here (its values were rejected) and is typed as the table's."""
    table_types = {f.name.lower(): f.dataType for f in table.fields}

    def target_of(field: StructField) -> DataType | None:
        """The table's type when the column must be cast to it, else ``None``."""
        target = table_types.get(field.name.lower()) if field.name not in HELPER_COLUMNS else None
        if target is None or field.dataType == target or (isinstance(field.dataType, _NESTED)
                                                           and type(field.dataType) is type(target)):
            return None
        return target

    fields = rows.schema.fields
    if all(target_of(f) is None for f in fields):
        return rows
    columns = []
    for field in fields:
        target = target_of(field)
        if target is None:
            columns.append(F.col(_quoted(field.name)))
            continue
        fits = widens(field.dataType, target) or _fractions_into_integers(field.dataType, target)
        source = F.col(_quoted(field.name)) if fits else F.lit(None)
        columns.append(source.cast(target).alias(field.name))
    return rows.select(*columns)


def data_columns(rows: "DataFrame") -> list[str]:
    """The columns of ``rows`` that go to the table (helper columns left out)."""
    return [c for c in rows.columns if c not in HELPER_COLUMNS]


def last_per_key(rows: "DataFrame", keys: list[str]) -> "DataFrame":
    """One row per key, the key's last change (:func:`connect_spark.connectors.changes.last_change_per_key`).

    Raises:
        DataException: a key column is not among the rows' columns.
    """
    missing = [k for k in keys if k not in rows.columns]
    if missing:
        raise DataException(f"The upsert key field(s) {', '.join(missing)} are not in the records "
                            f"(columns: {', '.join(data_columns(rows))})")
    return last_change_per_key(rows, keys)
