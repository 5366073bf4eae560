"""Which Iceberg tables a record goes to: a static list, route-regex filters, or the route field's value.

Called by the task once per micro-batch (:func:`routed`) to tag every record with its table, as Apache
Iceberg's sink routes:

* ``iceberg.tables`` without ``iceberg.tables.route-field``: every record goes to every listed table;
* with a route field: a record goes to each listed table whose ``iceberg.table.<table>.route-regex``
  matches the field's whole value;
* ``iceberg.tables.dynamic-enabled``: a record goes to the table its route field names (lower-cased).

The route field is read from the record's value (dots reach nested fields); for a tombstone, whose value
is null, from its key. A record that reaches no table gets a null table: the task reports it through
``errors.*`` (:func:`unrouted_reason`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from connect_spark.connectors.iceberg.config import IcebergSinkConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["TableTarget", "routed", "TABLE_COLUMN", "valid_table_name", "unrouted_reason"]

#: The helper column holding a record's destination table name (null: no table).
TABLE_COLUMN = "__connect_table"

_NAME_PART = re.compile(r"^[A-Za-z0-9_\-]+$")


@dataclass(frozen=True)
class TableTarget:
    """One Iceberg table: the catalog and the table name (``namespace.table``) as configured or routed."""

    catalog: str
    name: str

    def __str__(self) -> str:
        return f"{self.catalog}.{self.name}"

    @property
    def identifier(self) -> str:
        """The quoted Spark identifier: ```catalog`.`namespace`.`table```."""
        return ".".join(f"`{p.replace('`', '``')}`" for p in (self.catalog, *self.name.split(".")))

    @property
    def namespace(self) -> str | None:
        """The quoted Spark identifier of the table's namespace, ``None`` when the name has none."""
        parts = self.name.split(".")
        if len(parts) < 2:
            return None
        return ".".join(f"`{p.replace('`', '``')}`" for p in (self.catalog, *parts[:-1]))


def valid_table_name(name: str) -> bool:
    """True for ``namespace.table`` names made of letters, digits, ``_`` and ``-`` (what routing may create)."""
    return bool(name) and all(_NAME_PART.match(part) for part in name.split("."))


def unrouted_reason(config: IcebergSinkConfig) -> str:
    """Why a record got no table, for the error reporters."""
    if config.dynamic:
        return f"no table name in route field {config.route_field!r} (missing or null)"
    return (f"route field {config.route_field!r} is missing, or its value matches the route-regex of none of "
            f"the tables {', '.join(config.tables)}")


def _field(frame: "DataFrame", root: str, path: str) -> Column | None:
    """``root.path`` as a column when the frame's types have that field, else ``None``."""
    data_type = frame.schema[root].dataType
    column = F.col(root)
    for part in path.split("."):
        if not isinstance(data_type, StructType) or part not in data_type.fieldNames():
            return None
        column = column.getField(part)
        data_type = data_type[part].dataType
    return column


def route_value(frame: "DataFrame", route_field: str) -> Column:
    """The route field's value as a string: from the value, or from the key for a tombstone."""
    from_value = _field(frame, "value", route_field)
    from_key = _field(frame, "key", route_field)
    candidates = [c.cast("string") for c in (from_value, from_key) if c is not None]
    if not candidates:
        return F.lit(None).cast("string")
    return F.coalesce(*candidates) if len(candidates) > 1 else candidates[0]


def routed(frame: "DataFrame", config: IcebergSinkConfig) -> "DataFrame":
    """``frame`` with :data:`TABLE_COLUMN`: one row per (record, table), a null table for unroutable records."""
    if config.dynamic:
        assert config.route_field is not None
        return frame.withColumn(TABLE_COLUMN, F.lower(route_value(frame, config.route_field)))
    if not config.route_field:
        if len(config.tables) == 1:
            return frame.withColumn(TABLE_COLUMN, F.lit(config.tables[0]))
        return frame.withColumn(TABLE_COLUMN, F.explode(F.array(*[F.lit(t) for t in config.tables])))
    value = route_value(frame, config.route_field)
    choices = []
    for table in config.tables:
        regex = config.table_settings(table).route_regex
        if regex is not None:
            choices.append(F.when(value.rlike(f"^(?:{regex.pattern})$"), F.lit(table)))
    if not choices:
        return frame.withColumn(TABLE_COLUMN, F.lit(None).cast("string"))
    return frame.withColumn(TABLE_COLUMN, F.explode_outer(F.array_compact(F.array(*choices))))
