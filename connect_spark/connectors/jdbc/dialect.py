"""What the JDBC sink needs from a database, so that a second database is one more class.

The task and the writer speak only to :class:`DatabaseDialect`; ``postgres.py`` implements it for
PostgreSQL (the one dialect so far). :func:`dialect_for` picks the dialect from the connection URL (or
``dialect.name``) and is called by the task's ``start``.

A dialect owns everything database-specific: opening a connection, naming and quoting tables and
columns, the SQL type of a Connect schema, DDL (create, add columns), the bulk write of one batch
(insert, upsert, update, delete), the offsets table, and which errors are retriable or belong to one
row.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from connect_spark.api.records import TopicPartition

if TYPE_CHECKING:
    from connect_spark.api.data import Schema
    from connect_spark.connectors.jdbc.config import ConnectionSettings, JdbcSinkConfig

__all__ = ["TableId", "Column", "DatabaseDialect", "ErrorKind", "dialect_for"]


@dataclass(frozen=True, order=True)
class TableId:
    """A table: an optional schema (namespace) and a name, as the user wrote them."""

    schema: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name

    @classmethod
    def parse(cls, text: str) -> "TableId":
        schema, dot, name = text.rpartition(".")
        return cls(schema if dot else None, name)


@dataclass(frozen=True)
class Column:
    """One column of a batch: its name, the Connect schema of its values, whether it is in the primary key."""

    name: str
    schema: "Schema"
    primary: bool = False


class ErrorKind:
    """How the writer treats a database error."""

    RETRIABLE = "retriable"  # the connection, a deadlock, a serialization failure: retry the batch
    ROW = "row"              # one row's data (a constraint, a type, a value too long): find it, report it
    FATAL = "fatal"          # anything else: fail the task


class DatabaseDialect(abc.ABC):
    """One database's SQL and behaviour. Instances are made by :func:`dialect_for`, one per task."""

    name: str = ""

    def __init__(self, config: "JdbcSinkConfig") -> None:
        self.config = config

    @abc.abstractmethod
    def connect(self, settings: "ConnectionSettings") -> Any:
        """A new connection (autocommit off is the caller's business: transactions are explicit)."""

    @abc.abstractmethod
    def error_kind(self, error: BaseException) -> str:
        """An :class:`ErrorKind` for ``error`` raised by the driver."""

    @abc.abstractmethod
    def describe_error(self, error: BaseException, detail: bool = False) -> str:
        """The database's own message for ``error`` (code and message). ``detail`` adds the database's detail,
        which may quote the row's values: only for the dead letter queue's headers, never for logs."""

    @abc.abstractmethod
    def column_name(self, name: str) -> str:
        """``name`` as the database stores it (e.g. folded to lower case when identifiers are not quoted)."""

    @abc.abstractmethod
    def sql_type(self, column: Column) -> str:
        """The column type for ``column``'s Connect schema.

        Raises:
            DataException: for a schema the database cannot hold (a struct, a map), naming the field.
        """

    @abc.abstractmethod
    def table_columns(self, conn: Any, table: TableId) -> dict[str, str] | None:
        """The table's column names and types, or ``None`` when it does not exist."""

    @abc.abstractmethod
    def create_table(self, conn: Any, table: TableId, columns: Sequence[Column]) -> None:
        """Create ``table`` (if it still does not exist) with ``columns`` and their primary key."""

    @abc.abstractmethod
    def add_columns(self, conn: Any, table: TableId, columns: Sequence[Column]) -> None:
        """Add nullable ``columns`` to ``table`` (those it already has are left alone)."""

    @abc.abstractmethod
    def write(self, conn: Any, table: TableId, mode: str, columns: Sequence[Column], rows: Sequence[tuple],
              column_types: Mapping[str, str] | None = None) -> None:
        """Write ``rows`` (tuples in ``columns`` order) with ``mode`` (insert, upsert, update), in bulk,
        inside the caller's transaction.

        ``column_types`` (the table's column types, as :meth:`table_columns` gives them) is passed only when
        every value has the Python type of its column's Connect schema; the dialect may then use a faster,
        typed transfer where the table's types are the ones it would have created.
        """

    @abc.abstractmethod
    def delete(self, conn: Any, table: TableId, keys: Sequence[Column], rows: Sequence[tuple]) -> None:
        """Delete the rows whose primary key is one of ``rows``, inside the caller's transaction."""

    @abc.abstractmethod
    def ensure_offsets_table(self, conn: Any, table: TableId) -> None:
        """Create the offsets table when missing (safe when several tasks race to do it)."""

    @abc.abstractmethod
    def read_offsets(self, conn: Any, table: TableId, connector: str) -> dict[TopicPartition, int]:
        """The next offset stored for each partition of ``connector``."""

    @abc.abstractmethod
    def write_offsets(self, conn: Any, table: TableId, connector: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Store ``offsets`` (next offset per partition) inside the caller's transaction."""


def dialect_for(config: "JdbcSinkConfig") -> DatabaseDialect:
    """The dialect of the configured database (PostgreSQL: the one supported so far)."""
    from connect_spark.connectors.jdbc.postgres import PostgresDialect

    return PostgresDialect(config)
