"""Change semantics shared by the table sinks: which record deletes its row, and which change of a key wins.

A keyed topic is a change stream: each record says what became of one row (Debezium's change events after
``io.debezium.transforms.ExtractNewRecordState`` are the common case). The Delta and Iceberg sinks apply a
batch of it as one ``MERGE`` per table, the JDBC sink as one upsert transaction per table; all three follow
the rules kept here, so that the three targets of one topic hold the same rows:

1. **What deletes** (only where deletes are on: ``delete.enabled=true`` for Delta and JDBC, id columns for
   Iceberg): a tombstone (a null value); a value whose :data:`DELETED_FIELD` is ``"true"`` (the marker
   ``ExtractNewRecordState`` adds in its ``rewrite`` modes); a value whose change-operation field
   (Iceberg's ``iceberg.tables.cdc-field``) starts with ``D``.
2. **The delete marker is consumed**: where deletes are on, :data:`DELETED_FIELD` says what to do with the
   row and is not a column of the table, so the table equals the source table. Without deletes it is an
   ordinary field (a soft-delete column), written like any other.
3. **The last change per key wins**, by Kafka order (the offset within the key's partition): a delete that
   is the key's last change deletes the row; a row after a delete writes it again. A key change
   (Debezium's delete of the old key, its tombstone, then a create of the new key) therefore moves the
   row. Without deletes a tombstone is skipped and hides no earlier record of its key.

Two forms of the same rules: Spark column expressions for the frame sinks (:func:`delete_condition`,
:func:`last_change_per_key`, called by ``connectors/delta/rows.py`` and ``connectors/iceberg/rows.py``
while they build a batch's rows), and plain Python for the record sink (:func:`record_deletes`,
:func:`surviving`, called by ``connectors/jdbc/rows.py`` for each chunk of a ``put``). pyspark is imported
only by the frame form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection, Sequence

from connect_spark.api.data import Struct
from connect_spark.api.records import SinkRecord

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = ["DELETE", "ORDER", "HELPER_COLUMNS", "DELETED_FIELD", "ChangeRules", "delete_condition",
           "last_change_per_key", "record_deletes", "surviving"]

#: Helper column of a batch's rows: this change deletes its key's row. Never written to a table.
DELETE = "__connect_delete"
#: Helper column of a batch's rows: the record's offset, to keep the last change per key. Never written.
ORDER = "__connect_order"
HELPER_COLUMNS = (DELETE, ORDER)

#: The field ``ExtractNewRecordState`` adds in its ``rewrite`` modes: ``"true"`` on a delete, else ``"false"``.
DELETED_FIELD = "__deleted"


@dataclass(frozen=True)
class ChangeRules:
    """How one sink reads deletes out of its records (see the module docstring).

    Attributes:
        deletes: deletes are on (``delete.enabled=true``; for Iceberg, the table has id columns). Off, no
            record deletes: tombstones are skipped and :data:`DELETED_FIELD` is an ordinary field.
        op_field: a value field naming the change's operation (Iceberg's ``iceberg.tables.cdc-field``);
            a value starting with ``D`` (or ``d``) deletes. None: no such field.
    """

    deletes: bool
    op_field: str | None = None

    def consumed_fields(self, value_fields: Collection[str]) -> frozenset[str]:
        """The value fields that steer the change and are not table columns: the delete marker, when
        deletes are on and the value has it."""
        return frozenset({DELETED_FIELD} & set(value_fields)) if self.deletes else frozenset()


def _is_delete_marker(value: Any) -> bool:
    return isinstance(value, str) and value == "true"


def _is_delete_op(value: Any) -> bool:
    return isinstance(value, str) and value[:1] in ("D", "d")


def record_deletes(rules: ChangeRules, record: SinkRecord) -> bool:
    """Whether ``record`` deletes its key's row (rule 1), for sinks that see records one by one."""
    if not rules.deletes:
        return False
    value = record.value
    if value is None:
        return True
    fields = _fields_of(value)
    if fields is None:
        return False
    if _is_delete_marker(fields(DELETED_FIELD)):
        return True
    return rules.op_field is not None and _is_delete_op(_path_value(value, rules.op_field))


def _fields_of(value: Any):
    """A field reader for a struct or map value, else None."""
    if isinstance(value, Struct):
        names = {f.name for f in value.schema.fields}
        return lambda name: value.get_without_default(name) if name in names else None
    if isinstance(value, dict):
        return value.get
    return None


def _path_value(value: Any, path: str) -> Any:
    """The value at a dotted ``path`` of nested structs or maps, None where a step is missing."""
    for step in path.split("."):
        fields = _fields_of(value)
        if fields is None:
            return None
        value = fields(step)
    return value


def surviving(keys: Sequence[tuple], deletes: Sequence[bool], last_by_key: bool) -> tuple[list[bool], dict[tuple, int]]:
    """Which records of a batch are written, and which keys deleted (by the index of their last delete).

    Rule 3 over a batch in Kafka order: per key, the deletes happen first, then the writes after the key's
    last delete (all of them when ``last_by_key`` is false, as in insert mode; only the last one in upsert
    and update mode). A deleting record is never written.
    """
    keep: list[bool] = [True] * len(keys)
    deleted: dict[tuple, int] = {}
    seen: dict[tuple, int] = {}
    superseded = -2
    for i in range(len(keys) - 1, -1, -1):
        key = keys[i]
        if deletes[i]:
            keep[i] = False
            if key not in deleted:
                deleted[key] = i
            seen[key] = superseded  # everything earlier for this key is superseded
            continue
        state = seen.get(key)
        if state == superseded or (state is not None and last_by_key):
            keep[i] = False
        else:
            seen[key] = i
    return keep, deleted


def delete_condition(rules: ChangeRules, value_type: "DataType") -> "Column":
    """Rule 1 as a boolean column over a record frame's ``value`` column of type ``value_type``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructType

    value = F.col("value")
    if not rules.deletes:
        return F.lit(False)
    condition = value.isNull()
    if isinstance(value_type, StructType):
        fields = {f.name: f.dataType for f in value_type.fields}
        if isinstance(fields.get(DELETED_FIELD), StringType):
            condition = condition | F.coalesce(value.getField(DELETED_FIELD) == F.lit("true"), F.lit(False))
        op = _path_column(value, value_type, rules.op_field) if rules.op_field else None
        if op is not None:
            condition = condition | F.coalesce(F.upper(F.substring(op, 1, 1)) == F.lit("D"), F.lit(False))
    return condition


def _path_column(value: "Column", value_type: "DataType", path: str) -> "Column | None":
    """The string column at a dotted ``path`` of nested structs, None when the type has no such string."""
    from pyspark.sql.types import StringType, StructType

    column, data_type = value, value_type
    for step in path.split("."):
        if not isinstance(data_type, StructType) or step not in data_type.fieldNames():
            return None
        column, data_type = column.getField(step), data_type[step].dataType
    return column if isinstance(data_type, StringType) else None


def last_change_per_key(rows: "DataFrame", keys: Sequence[str]) -> "DataFrame":
    """Rule 3 over a batch's rows (carrying :data:`ORDER`): one row per key, the highest offset's.

    Records of one key share a Kafka partition, where the offset order is the write order.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = F.row_number().over(Window.partitionBy(*[F.col(_quoted(k)) for k in keys]).orderBy(F.col(ORDER).desc()))
    return rows.withColumn("__connect_rank", rank).where(F.col("__connect_rank") == 1).drop("__connect_rank")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
