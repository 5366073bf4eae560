"""PostgreSQL, through psycopg 3: COPY for bulk writes, identifiers quoted by ``psycopg.sql``.

Types follow Confluent's PostgreSQL dialect: INT8/INT16 → smallint, INT32 → integer, INT64 → bigint,
FLOAT32 → real, FLOAT64 → double precision, BOOLEAN → boolean, STRING → text, BYTES → bytea, Decimal →
numeric (``numeric(p, s)`` when the schema carries its precision ``p`` in ``connect.decimal.precision``, as
Debezium's do, so the copy of a ``numeric(12,2)`` column is one), Date → date, Time → time, Timestamp → timestamp, an ARRAY of those → its element type ``[]``.
Structs and maps are refused (the Flatten transform turns a struct into columns). Debezium's semantic types
take the PostgreSQL types of :mod:`connect_spark.api.data.semantic_types` (``timestamp``, ``timestamptz``,
``date``, ``time``, ``timetz``, ``numeric``, ``json``/``jsonb``, ``uuid``, ``bit(n)``, ...), as Debezium's own
JDBC sink creates them (but ``numeric``, exact, for a VariableScaleDecimal).

Writes (inside the caller's transaction):

* insert: ``COPY table (columns) FROM STDIN`` straight into the table;
* upsert: COPY into a temporary table, then ``INSERT ... SELECT ... ON CONFLICT (pk) DO UPDATE``;
* update: COPY into a temporary table, then ``UPDATE table SET ... FROM temp WHERE pk = pk``;
* delete: COPY the keys into a temporary table, then ``DELETE FROM table USING temp WHERE pk = pk``.

COPY is binary when the writer vouches that every value has its column's Python type and every column of
the table has the type this dialect gives that Connect type (:data:`_BINARY_TYPES`; Date, Time, arrays and
tables made otherwise stay in text): PostgreSQL then parses nothing, and the client formats nothing. A
binary COPY that fails for any reason but a broken connection is rolled back to its savepoint and done again
in text, so errors (and which rows a constraint refuses) are the text COPY's.

Temporary tables are ``ON COMMIT DROP`` and hold only the batch's columns (no constraints), so a row
the table refuses is refused by the ``INSERT``/``UPDATE``, inside a savepoint the writer can roll back.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Mapping, Sequence

import psycopg
from psycopg import sql

from connect_spark.api.data import Decimal, Type
from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
)
from connect_spark.api.data.semantic_types import postgres_type, semantic_type
from connect_spark.api.errors import DataException
from connect_spark.api.records import TopicPartition
from connect_spark.connectors.jdbc.config import ConnectionSettings
from connect_spark.connectors.jdbc.dialect import Column, DatabaseDialect, ErrorKind, TableId

__all__ = ["PostgresDialect"]

log = logging.getLogger(__name__)

_LOGICAL_TYPES = {
    DECIMAL_LOGICAL_NAME: "numeric",
    DATE_LOGICAL_NAME: "date",
    TIME_LOGICAL_NAME: "time",
    TIMESTAMP_LOGICAL_NAME: "timestamp",
}
_TYPES = {
    Type.INT8: "smallint", Type.INT16: "smallint", Type.INT32: "integer", Type.INT64: "bigint",
    Type.FLOAT32: "real", Type.FLOAT64: "double precision", Type.BOOLEAN: "boolean", Type.STRING: "text",
    Type.BYTES: "bytea",
}
# Connect types whose struct-validated Python values psycopg writes in binary COPY: the type name to write
# and the column type (as format_type names it) the table must have for it.
_BINARY_TYPES = {
    Type.INT8: ("int2", "smallint"), Type.INT16: ("int2", "smallint"), Type.INT32: ("int4", "integer"),
    Type.INT64: ("int8", "bigint"), Type.FLOAT32: ("float4", "real"), Type.FLOAT64: ("float8", "double precision"),
    Type.BOOLEAN: ("bool", "boolean"), Type.STRING: ("text", "text"), Type.BYTES: ("bytea", "bytea"),
}
_BINARY_LOGICAL_TYPES = {
    DECIMAL_LOGICAL_NAME: ("numeric", "numeric"),
    TIMESTAMP_LOGICAL_NAME: ("timestamp", "timestamp without time zone"),
}
# Debezium's semantic types written in binary, by column kind (their values from rows.semantic_writer: a string,
# for a value Python cannot hold, makes the binary COPY fail and be done again in text).
_BINARY_SEMANTIC_TYPES = {
    "timestamp_ntz": ("timestamp", "timestamp without time zone"),
    "timestamp": ("timestamptz", "timestamp with time zone"),
    "decimal": ("numeric", "numeric"),
    "int": None, "bigint": None, "date": None, "string": None, "binary": None,
}
# SQLSTATE classes: 22 data exception, 23 integrity constraint violation, 54 program limit exceeded
# (a row too large for an index): one row's fault.
_ROW_CLASSES = ("22", "23", "54")
# 08 connection exception, 40 transaction rollback (deadlock, serialization), 53 insufficient resources,
# 57P0x the server shutting down or restarting, 55P03 lock not available.
_RETRIABLE_CLASSES = ("08", "40", "53")
_RETRIABLE_STATES = ("57P01", "57P02", "57P03", "55P03")
_FLATTEN_HINT = ("add the Flatten transform (transforms=flatten, "
                 "transforms.flatten.type=org.apache.kafka.connect.transforms.Flatten$Value) to write its fields "
                 "as columns")


class PostgresDialect(DatabaseDialect):
    """PostgreSQL ≥ 10 (``ADD COLUMN IF NOT EXISTS``, ``ON CONFLICT``)."""

    name = "PostgreSqlDatabaseDialect"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._stage_names = itertools.count()

    # -- connections and errors -------------------------------------------------------------

    def connect(self, settings: ConnectionSettings) -> psycopg.Connection:
        return psycopg.connect(autocommit=True, **settings.params)

    def error_kind(self, error: BaseException) -> str:
        state = getattr(error, "sqlstate", None)
        if state:
            if state[:2] in _ROW_CLASSES:
                return ErrorKind.ROW
            if state[:2] in _RETRIABLE_CLASSES or state in _RETRIABLE_STATES:
                return ErrorKind.RETRIABLE
            return ErrorKind.FATAL
        if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
            return ErrorKind.RETRIABLE  # no SQLSTATE: the connection itself broke
        return ErrorKind.FATAL

    def describe_error(self, error: BaseException, detail: bool = False) -> str:
        diag = getattr(error, "diag", None)
        state = getattr(error, "sqlstate", None)
        if diag is None or not diag.message_primary:
            return str(error).strip()
        parts = [f"{state}: {diag.message_primary}" if state else diag.message_primary]
        if detail and diag.message_detail:
            parts.append(diag.message_detail)
        return "; ".join(parts)

    # -- names and types ----------------------------------------------------------------------

    def identifier(self, name: str) -> sql.Identifier:
        """A column or table name part, quoted; folded to lower case with quote.sql.identifiers=never."""
        return sql.Identifier(name if self.config.quote_identifiers else name.lower())

    def table(self, table: TableId) -> sql.Composable:
        if table.schema:
            return sql.SQL(".").join([self.identifier(table.schema), self.identifier(table.name)])
        return self.identifier(table.name)

    def column_name(self, name: str) -> str:
        return name if self.config.quote_identifiers else name.lower()

    def sql_type(self, column: Column) -> str:
        return _sql_type(column.schema, column.name)

    # -- DDL ---------------------------------------------------------------------------------

    def table_columns(self, conn: psycopg.Connection, table: TableId) -> dict[str, str] | None:
        # One statement, so one snapshot: looking the table up and reading its columns in two statements let a
        # task see no columns and then the table, when another task's CREATE TABLE committed in between.
        name = self.column_name(table.name)
        schema = self.column_name(table.schema) if table.schema else None
        query = ("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_class c "
                 "JOIN pg_namespace n ON n.oid = c.relnamespace "
                 "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND c.relkind IN ('r', 'p') AND a.attnum > 0 "
                 "AND NOT a.attisdropped WHERE c.relname = %s "
                 + ("AND n.nspname = %s " if schema else "AND pg_table_is_visible(c.oid) ")
                 + "ORDER BY a.attnum")
        rows = conn.execute(query, [name, schema] if schema else [name]).fetchall()
        if not rows:
            return None
        return {r[0]: r[1] for r in rows if r[0] is not None}

    def create_table(self, conn: psycopg.Connection, table: TableId, columns: Sequence[Column]) -> None:
        definitions = [
            sql.SQL("{} {}{}").format(self.identifier(c.name), sql.SQL(self.sql_type(c)),
                                      sql.SQL("" if c.schema.is_optional and not c.primary else " NOT NULL"))
            for c in columns
        ]
        keys = [self.identifier(c.name) for c in columns if c.primary]
        if keys:
            definitions.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(keys)))
        conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(self.table(table),
                                                                          sql.SQL(", ").join(definitions)))

    def add_columns(self, conn: psycopg.Connection, table: TableId, columns: Sequence[Column]) -> None:
        additions = [sql.SQL("ADD COLUMN IF NOT EXISTS {} {}").format(self.identifier(c.name), sql.SQL(self.sql_type(c)))
                     for c in columns]
        conn.execute(sql.SQL("ALTER TABLE {} {}").format(self.table(table), sql.SQL(", ").join(additions)))

    # -- DML ---------------------------------------------------------------------------------

    def write(self, conn: psycopg.Connection, table: TableId, mode: str, columns: Sequence[Column],
              rows: Sequence[tuple], column_types: Mapping[str, str] | None = None) -> None:
        names = sql.SQL(", ").join(self.identifier(c.name) for c in columns)
        binary = self._binary_types(columns, column_types)
        if mode == "insert":
            self._copy(conn, self.table(table), names, rows, binary)
            return
        stage = self._stage(conn, table, columns, rows, binary)
        keys = [self.identifier(c.name) for c in columns if c.primary]
        others = [self.identifier(c.name) for c in columns if not c.primary]
        if mode == "upsert":
            action = (sql.SQL("DO UPDATE SET {}").format(sql.SQL(", ").join(
                sql.SQL("{0} = EXCLUDED.{0}").format(c) for c in others)) if others else sql.SQL("DO NOTHING"))
            conn.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT ({}) {}").format(
                self.table(table), names, names, stage, sql.SQL(", ").join(keys), action))
        elif mode == "update":
            if not others:
                return  # nothing to change beyond the key itself
            conn.execute(sql.SQL("UPDATE {} AS t SET {} FROM {} AS s WHERE {}").format(
                self.table(table),
                sql.SQL(", ").join(sql.SQL("{0} = s.{0}").format(c) for c in others),
                stage, self._key_match(keys)))
        else:
            raise ValueError(f"unknown insert mode {mode!r}")

    def delete(self, conn: psycopg.Connection, table: TableId, keys: Sequence[Column], rows: Sequence[tuple]) -> None:
        stage = self._stage(conn, table, keys, rows)
        conn.execute(sql.SQL("DELETE FROM {} AS t USING {} AS s WHERE {}").format(
            self.table(table), stage, self._key_match([self.identifier(c.name) for c in keys])))

    def _key_match(self, keys: Sequence[sql.Identifier]) -> sql.Composable:
        return sql.SQL(" AND ").join(sql.SQL("t.{0} = s.{0}").format(k) for k in keys)

    def _binary_types(self, columns: Sequence[Column], column_types: Mapping[str, str] | None) -> list[str] | None:
        """The type names of a binary COPY of ``columns``, or ``None`` when it is to be text (see the module)."""
        if not column_types:
            return None
        names = []
        for column in columns:
            schema = column.schema
            semantic = semantic_type(schema)
            if semantic is not None:
                pair = _BINARY_SEMANTIC_TYPES.get(semantic.column)
            elif schema.name == DECIMAL_LOGICAL_NAME:
                pair = ("numeric", _sql_type(schema, column.name))
            else:
                pair = (_BINARY_LOGICAL_TYPES.get(schema.name) if schema.name in _LOGICAL_TYPES
                        else _BINARY_TYPES.get(schema.type))
            if pair is None or column_types.get(self.column_name(column.name)) != pair[1]:
                return None
            names.append(pair[0])
        return names

    def _stage(self, conn: psycopg.Connection, table: TableId, columns: Sequence[Column],
               rows: Sequence[tuple], binary: list[str] | None = None) -> sql.Identifier:
        """A temporary table with ``columns`` (typed as the target's) holding ``rows``."""
        stage = sql.Identifier(f"connect_spark_stage_{next(self._stage_names)}")
        names = sql.SQL(", ").join(self.identifier(c.name) for c in columns)
        conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
            stage, names, self.table(table)))
        self._copy(conn, stage, names, rows, binary)
        return stage

    @staticmethod
    def _copy(conn: psycopg.Connection, target: sql.Composable, names: sql.Composable, rows: Sequence[tuple],
              binary: list[str] | None = None) -> None:
        """COPY ``rows`` into ``target``: in binary with the type names ``binary`` when given (in a savepoint,
        done again in text if it fails: see the module), in text otherwise."""
        if binary is not None:
            try:
                with conn.transaction(), conn.cursor() as cursor:
                    with cursor.copy(sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(target, names)) as copy:
                        copy.set_types(binary)
                        write_row = copy.write_row
                        for row in rows:
                            write_row(row)
                return
            except Exception as e:
                if conn.broken or conn.closed:
                    raise  # the connection broke: nothing to do again here
                # (a value the column's binary input refuses shows as 22P03, or as 08P01 "insufficient data")
                # Only the error's class and code: its message may quote the row's values, never logged.
                log.debug("binary COPY failed (%s %s); copying in text", type(e).__name__, getattr(e, "sqlstate", ""))
        with conn.cursor() as cursor:
            with cursor.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(target, names)) as copy:
                write_row = copy.write_row
                for row in rows:
                    write_row(row)

    # -- offsets -----------------------------------------------------------------------------

    def ensure_offsets_table(self, conn: psycopg.Connection, table: TableId) -> None:
        statement = sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (connector text NOT NULL, topic text NOT NULL, kafka_partition integer "
            "NOT NULL, next_offset bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(), "
            "PRIMARY KEY (connector, topic, kafka_partition))").format(self.table(table))
        try:
            with conn.transaction():  # a savepoint when the caller has a transaction open
                conn.execute(statement)
        except psycopg.errors.UniqueViolation:
            pass  # another task created it at the same moment (pg_type's unique index)

    def read_offsets(self, conn: psycopg.Connection, table: TableId, connector: str) -> dict[TopicPartition, int]:
        rows = conn.execute(sql.SQL("SELECT topic, kafka_partition, next_offset FROM {} WHERE connector = %s").format(
            self.table(table)), [connector]).fetchall()
        return {TopicPartition(topic, partition): offset for topic, partition, offset in rows}

    def write_offsets(self, conn: psycopg.Connection, table: TableId, connector: str,
                      offsets: Mapping[TopicPartition, int]) -> None:
        items = sorted(offsets.items())
        conn.execute(sql.SQL(
            "INSERT INTO {} (connector, topic, kafka_partition, next_offset) "
            "SELECT %s, * FROM unnest(%s::text[], %s::integer[], %s::bigint[]) "
            "ON CONFLICT (connector, topic, kafka_partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, "
            "updated_at = now()").format(self.table(table)),
            [connector, [tp.topic for tp, _ in items], [tp.partition for tp, _ in items], [o for _, o in items]])


def _numeric(schema: Any) -> str:
    """``numeric(p, s)`` for a Decimal schema with a precision ``p`` PostgreSQL accepts (1-1000, at least its
    scale ``s`` ≥ 0), else ``numeric``."""
    parameters = schema.parameters or {}
    try:
        precision = int(parameters.get(Decimal.PRECISION_FIELD, ""))
        scale = int(parameters.get(Decimal.SCALE_FIELD, ""))
    except ValueError:
        return "numeric"
    return f"numeric({precision},{scale})" if 0 <= scale <= precision <= 1000 and precision > 0 else "numeric"


def _sql_type(schema: Any, field: str) -> str:
    semantic = semantic_type(schema)
    if semantic is not None:
        return postgres_type(semantic, schema)
    if schema.name == DECIMAL_LOGICAL_NAME:
        return _numeric(schema)
    logical = _LOGICAL_TYPES.get(schema.name or "")
    if logical:
        return logical
    if schema.type in _TYPES:
        return _TYPES[schema.type]
    if schema.type is Type.ARRAY:
        element = schema.value_schema
        if element.type in (Type.ARRAY, Type.STRUCT, Type.MAP):
            raise DataException(f"Field {field!r} is an array of {element.type.name.lower()}s, which PostgreSQL "
                                "columns cannot hold (arrays of primitive and logical types only)")
        return _sql_type(element, field) + "[]"
    if schema.type is Type.STRUCT:
        raise DataException(f"Field {field!r} is a struct, which a column cannot hold: {_FLATTEN_HINT}")
    raise DataException(f"Field {field!r} is a {schema.type.name.lower()}, which PostgreSQL columns cannot hold "
                        "(Flatten turns maps of a struct into columns; a map value is not supported)")
