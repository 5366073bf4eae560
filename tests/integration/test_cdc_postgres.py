"""Change data capture end to end: PostgreSQL, real Debezium in Kafka Connect, connect_spark's sinks.

One Debezium worker (the ``debezium`` fixture) and one PostgreSQL connector serve the module: before the
connector starts, one source database gets a table per test, all with the same columns (``int`` key,
``text``, ``numeric(12,2)``, ``timestamp``, ``timestamptz``, ``date``, ``boolean``, ``jsonb``, ``uuid``) and
the same rows, so Debezium snapshots them all; afterwards each test changes only its own table.

* The source alone: the topic holds Debezium's envelopes for the snapshot and the changes, with the schema
  names a sink sees, and replaying them gives the source table.
* Delta, JDBC (PostgreSQL, another database of the same server) and Iceberg: the configuration a Debezium
  user writes (``ExtractNewRecordState``, upserts on the record key, deletes, schema evolution), run after
  each of three phases of the same change script (the snapshot; inserts, updates, deletes, key changes,
  NULLs; ``ADD COLUMN`` and rows using it). After each run the target equals the source row for row, value
  for value and type for type (:func:`assert_same_table`).
* The Delta sink's CLI killed with SIGKILL three times while changes flow, restarted each time, then
  drained: the target equals the source, and nothing was written twice (an append table of the same
  stream holds every change event once; the upsert table's commits never go back).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader

from connect_spark.config.properties import format_properties
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.testing.debezium import DebeziumWorker, drop_replication_slot, postgres_source, table_topic
from connect_spark.testing.harness import cli_command, worker_properties
from connect_spark.testing.kafka import end_offsets, read_topic

_JSON = "org.apache.kafka.connect.json.JsonConverter"

#: What a Debezium user adds to a sink's connector file: Debezium's own SMT, and JSON with schemas.
DEBEZIUM_USER = {
    "transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "key.converter": _JSON, "key.converter.schemas.enable": "true",
    "value.converter": _JSON, "value.converter.schemas.enable": "true",
}
#: ... and, for the Delta and JDBC sinks, the change semantics.
UPSERT = {"insert.mode": "upsert", "pk.mode": "record_key", "delete.enabled": "true", "auto.evolve": "true"}

TABLES = ("envelopes", "for_delta", "for_jdbc", "for_iceberg", "for_crash")
SNAPSHOT_ROWS = 40
COLUMNS = ("id", "name", "amount", "created", "updated", "day", "active", "doc", "ref")
DDL = ("CREATE TABLE {t} (id int PRIMARY KEY, name text, amount numeric(12,2), created timestamp, "
       "updated timestamptz, day date, active boolean, doc jsonb, ref uuid)")
ADDED = ("note", "score")
ALTER = "ALTER TABLE {t} ADD COLUMN note text, ADD COLUMN score numeric(12,2)"

# Value pools: edges of each type (before 1970, leap days, the decimal's bounds, zones, JSON null, unicode).
_NAMES = ["alice", "", "Zoë ☃ 日本", "line\nbreak", "quote ' and \"", "trailing space ", "b" * 300]
_AMOUNTS = [Decimal("0.00"), Decimal("-1.50"), Decimal("9999999999.99"), Decimal("-9999999999.99"),
            Decimal("12.34"), Decimal("0.01"), Decimal("1000")]
_CREATED = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 2, 29, 12, 0, 0, 123456),
            dt.datetime(1900, 1, 1), dt.datetime(2999, 12, 31, 23, 59, 59), dt.datetime(2000, 1, 1, 0, 0, 0, 1),
            dt.datetime(2024, 3, 31, 2, 30)]
_ZONES = [dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8))]
_DAYS = [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29), dt.date(1900, 3, 1),
         dt.date(9999, 12, 31)]
_DOCS = ['{"a": 1}', '[1, 2.50, "x"]', '{"nested": {"k": [true, null]}, "ü": "☃"}', '"just a string"', "1e3",
         "{}", "null"]


def _values(i: int, rev: int = 0) -> dict[str, Any]:
    """The column values of row ``i`` at revision ``rev``; every 13th row (7, 20, ...) is NULL but its key."""
    if i % 13 == 7 and rev == 0:
        return {c: None for c in COLUMNS[1:]}
    n = i * 7 + rev * 3
    zone = _ZONES[n % len(_ZONES)]
    return {
        "name": f"{_NAMES[n % len(_NAMES)]}#{i}.{rev}",
        "amount": _AMOUNTS[n % len(_AMOUNTS)] if n % 11 else None,
        "created": _CREATED[n % len(_CREATED)] + dt.timedelta(seconds=rev),
        "updated": (_CREATED[(n + 1) % len(_CREATED)] + dt.timedelta(microseconds=rev)).replace(tzinfo=zone),
        "day": _DAYS[n % len(_DAYS)],
        "active": [True, False, None][n % 3],
        "doc": _DOCS[n % len(_DOCS)],
        "ref": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{i}.{rev}")),
    }


def _insert(conn, table: str, i: int, rev: int = 0, **more: Any) -> None:
    values = {"id": i, **_values(i, rev), **more}
    columns = ", ".join(values)
    conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(values))})", list(values.values()))


def _update(conn, table: str, i: int, rev: int, **more: Any) -> None:
    values = {**_values(i, rev), **more}
    assignments = ", ".join(f"{c} = %s" for c in values)
    conn.execute(f"UPDATE {table} SET {assignments} WHERE id = %s", [*values.values(), i])


def _phase_snapshot(conn, table: str) -> None:
    """Rows 1..40, written before the connector starts."""
    conn.execute(DDL.format(t=table))
    for i in range(1, SNAPSHOT_ROWS + 1):
        _insert(conn, table, i)


def _phase_changes(conn, table: str) -> None:
    """Inserts, updates (twice in one transaction), NULLs in every nullable column and back, deletes, a delete
    and re-insert of one key, key changes (one onto a key deleted just before), an update then a delete."""
    for i in range(41, 61):
        _insert(conn, table, i)
    with conn.transaction():
        for i in (1, 2, 3):
            _update(conn, table, i, 1)
        _update(conn, table, 1, 2)
    conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = NULL' for c in COLUMNS[1:])} WHERE id = 3")
    _update(conn, table, 7, 1)  # row 7 was NULL in every nullable column
    conn.execute(f"DELETE FROM {table} WHERE id BETWEEN 10 AND 12")
    with conn.transaction():
        conn.execute(f"DELETE FROM {table} WHERE id = 14")
        _insert(conn, table, 14, 5)
    conn.execute(f"UPDATE {table} SET id = id + 1000 WHERE id IN (21, 22)")
    conn.execute(f"UPDATE {table} SET id = 10 WHERE id = 23")
    _update(conn, table, 30, 1)
    conn.execute(f"DELETE FROM {table} WHERE id = 30")
    conn.execute(f"UPDATE {table} SET amount = amount + 1 WHERE id % 5 = 0")


def _phase_evolve(conn, table: str) -> None:
    """``ADD COLUMN`` (text and numeric(12,2)), then new rows and old rows using them, a key change, a delete."""
    conn.execute(ALTER.format(t=table))
    for i in range(61, 71):
        _insert(conn, table, i, note=f"new {i}" if i % 3 else None, score=Decimal(f"{i}.{i % 10}5"))
    conn.execute(f"UPDATE {table} SET note = 'old row ' || id, score = -0.01 WHERE id <= 5")
    conn.execute(f"UPDATE {table} SET id = id + 2000 WHERE id = 41")
    conn.execute(f"DELETE FROM {table} WHERE id = 42")


PHASES = (("snapshot", None), ("changes", _phase_changes), ("evolve", _phase_evolve))


# -- the comparison -------------------------------------------------------------------------------------------

@dataclass
class Table:
    """A table as its user sees it: its columns with their types (as the database or Spark names them), in
    order, and its rows by id."""

    where: str
    types: dict[str, str]
    rows: dict[int, dict[str, Any]]


def _text_loaders(conn) -> None:
    """jsonb, json and uuid as the text PostgreSQL prints (what a user sees in psql; Debezium streams that text)."""
    for name in ("jsonb", "json", "uuid"):
        conn.adapters.register_loader(name, TextLoader)


def read_postgres(conninfo: str, table: str) -> Table:
    """The table with psycopg: types as ``format_type`` prints them (``numeric(12,2)``)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _text_loaders(conn)
        types = dict(conn.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                                  "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                                  (table,)).fetchall())
        cursor = conn.execute(f"SELECT * FROM {table}")
        names = [d.name for d in cursor.description]
        rows = {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}
    return Table(f"PostgreSQL {table}", types, rows)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def read_spark(df, where: str) -> Table:
    """A Spark table: types as Spark prints them (``decimal(12,2)``, ``timestamp_ntz``). A ``timestamp`` (an
    instant) is read as microseconds since the epoch, so the Python process's time zone plays no part."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    instants = {f.name for f in df.schema.fields if isinstance(f.dataType, TimestampType)}
    selected = df.select([F.unix_micros(F.col(c)).alias(c) if c in instants else F.col(c) for c in types])
    rows = {}
    for row in selected.collect():
        values = row.asDict()
        for c in instants:
            if values[c] is not None:
                values[c] = _EPOCH + dt.timedelta(microseconds=values[c])
        rows[values["id"]] = values
    return Table(where, types, rows)


#: Per source column type, the target types that hold it as the user expects, in Spark and in PostgreSQL.
#: A ``timestamp`` (a wall clock, no zone) is a ``timestamp_ntz`` in Spark: the same digits in every session
#: time zone; a ``timestamptz`` (an instant) is a ``timestamp``. JSON and UUIDs are strings in Spark.
SPARK_TYPES = {"integer": {"int"}, "text": {"string"}, "numeric(12,2)": {"decimal(12,2)"},
               "timestamp without time zone": {"timestamp_ntz"},
               "timestamp with time zone": {"timestamp"}, "date": {"date"}, "boolean": {"boolean"},
               "jsonb": {"string"}, "uuid": {"string"}}
POSTGRES_TYPES = {"integer": {"integer"}, "text": {"text"}, "numeric(12,2)": {"numeric(12,2)"},
                  "timestamp without time zone": {"timestamp without time zone"},
                  "timestamp with time zone": {"timestamp with time zone"}, "date": {"date"},
                  "boolean": {"boolean"}, "jsonb": {"jsonb", "json", "text"}, "uuid": {"uuid", "text"}}


def _same_value(source: Any, target: Any) -> bool:
    """Equal and of the same Python type (``True`` is not ``1``); aware date-times are equal as instants."""
    if source is None or target is None:
        return source is None and target is None
    return type(source) is type(target) and source == target and (
        not isinstance(source, dt.datetime) or (source.tzinfo is None) == (target.tzinfo is None))


def table_difference(source: Table, target: Table, allowed_types: dict[str, set[str]]) -> str | None:
    """The first difference between ``target`` and ``source`` a user would see, or None when they are equal:
    the columns (names, order, types), the set of ids, then each row's values in id order."""
    if list(target.types) != list(source.types):
        return f"columns: {target.where} has {list(target.types)}, {source.where} has {list(source.types)}"
    for column, source_type in source.types.items():
        if target.types[column] not in allowed_types[source_type]:
            return (f"column {column}: {target.where} has type {target.types[column]}, {source.where} has "
                    f"{source_type} (expected one of {sorted(allowed_types[source_type])})")
    missing, extra = sorted(source.rows.keys() - target.rows.keys()), sorted(target.rows.keys() - source.rows.keys())
    if missing or extra:
        return (f"ids: {target.where} lacks {missing[:10]} and has extra {extra[:10]} "
                f"({len(target.rows)} rows, {len(source.rows)} in {source.where})")
    for key in sorted(source.rows):
        for column in source.types:
            theirs, ours = source.rows[key][column], target.rows[key][column]
            if not _same_value(theirs, ours):
                return f"row id={key}, column {column}: {target.where} has {ours!r}, {source.where} has {theirs!r}"
    return None


def assert_same_table(source: Table, target: Table, allowed_types: dict[str, set[str]], when: str) -> None:
    """Fail with (and print) the first difference between ``target`` and ``source``."""
    difference = table_difference(source, target, allowed_types)
    if difference:
        print(f"{when}: {difference}")
    assert difference is None, f"{when}: {difference}"


def test_the_comparison_sees_what_a_user_would_see():
    """The comparison fails on a changed value, a lost row, a widened type, a shifted instant."""
    created = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    updated = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    source = Table("source", {"id": "integer", "amount": "numeric(12,2)", "created": "timestamp without time zone",
                              "updated": "timestamp with time zone"},
                   {1: {"id": 1, "amount": Decimal("1.50"), "created": created, "updated": updated}})

    def target(types=None, **values):
        row = {"id": 1, "amount": Decimal("1.50"), "created": created, "updated": updated.astimezone(dt.timezone.utc),
               **values}
        return Table("target", types or {"id": "int", "amount": "decimal(12,2)", "created": "timestamp_ntz",
                                         "updated": "timestamp"}, {1: row})

    assert table_difference(source, target(), SPARK_TYPES) is None
    assert "created" in table_difference(source, target({"id": "int", "amount": "decimal(12,2)",
                                                          "created": "timestamp", "updated": "timestamp"}),
                                         SPARK_TYPES)
    assert "amount" in table_difference(source, target(amount=Decimal("1.51")), SPARK_TYPES)
    assert "amount" in table_difference(source, target(amount=1.5), SPARK_TYPES)
    assert "created" in table_difference(source, target(created=created.replace(tzinfo=updated.tzinfo)),
                                         SPARK_TYPES)
    assert "updated" in table_difference(source, target(updated=updated.replace(tzinfo=dt.timezone.utc)),
                                         SPARK_TYPES)
    assert "decimal(38,2)" in table_difference(source, target({"id": "int", "amount": "decimal(38,2)",
                                                                "created": "timestamp_ntz", "updated": "timestamp"}),
                                               SPARK_TYPES)
    assert "lacks [1]" in table_difference(source, Table("target", target().types, {}), SPARK_TYPES)


# -- the source ---------------------------------------------------------------------------------------------

@dataclass
class Source:
    """The module's source database and the Debezium connector capturing it."""

    postgres: Any
    database: str
    prefix: str
    connector: str
    worker: DebeziumWorker

    @property
    def conninfo(self) -> str:
        return self.postgres.conninfo(self.database)

    def topic(self, table: str) -> str:
        return table_topic(self.prefix, table)

    def run(self, phase, table: str) -> None:
        """Apply a phase of the change script to ``table`` and wait until Debezium has streamed it."""
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            phase(conn, table)
        self.streamed()

    def streamed(self) -> None:
        self.worker.wait_until_streamed(self.conninfo, self.prefix, self.connector)

    def read(self, table: str) -> Table:
        return read_postgres(self.conninfo, table)


@pytest.fixture(scope="module")
def cdc(debezium, postgres):
    """One source database, a snapshotted table per test, one Debezium connector (removed at the end)."""
    database = f"cdc_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    with psycopg.connect(postgres.conninfo(database), autocommit=True) as conn:
        for table in TABLES:
            _phase_snapshot(conn, table)
    config = postgres_source(postgres, database, [f"public.{t}" for t in TABLES], topic_prefix=database)
    source = Source(postgres, database, database, f"debezium-{database}", debezium)
    debezium.add_connector(source.connector, config)
    source.streamed()
    yield source
    debezium.remove_connector(source.connector)
    drop_replication_slot(postgres.conninfo(database), config["slot.name"])
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {database} WITH (FORCE)")


def _decode(schema: dict, value: Any) -> Any:
    """A Debezium field's JSON value as the Python value psycopg reads for the source column."""
    if value is None:
        return None
    name = schema.get("name")
    if name == "org.apache.kafka.connect.data.Decimal":
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        return Decimal(unscaled).scaleb(-int(schema["parameters"]["scale"]))
    if name == "io.debezium.time.MicroTimestamp":
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
    if name == "io.debezium.time.ZonedTimestamp":
        return dt.datetime.fromisoformat(value)
    if name == "io.debezium.time.Date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    return value


def test_the_topic_holds_debeziums_envelopes_for_the_snapshot_and_the_changes(cdc, bootstrap_servers):
    table = "envelopes"
    cdc.run(_phase_changes, table)
    cdc.run(_phase_evolve, table)
    records = read_topic(bootstrap_servers, cdc.topic(table))
    events = [(json.loads(r.key), json.loads(r.value) if r.value is not None else None) for r in records]

    # The schema names a sink sees, field by field (the value's "after" struct), before and after ADD COLUMN.
    def after_fields(value):
        (after,) = [f for f in value["schema"]["fields"] if f["field"] == "after"]
        return {f["field"]: f for f in after["fields"]}

    first = after_fields(events[0][1])
    assert {c: (f["type"], f.get("name")) for c, f in first.items()} == {
        "id": ("int32", None), "name": ("string", None),
        "amount": ("bytes", "org.apache.kafka.connect.data.Decimal"),
        "created": ("int64", "io.debezium.time.MicroTimestamp"),
        "updated": ("string", "io.debezium.time.ZonedTimestamp"), "day": ("int32", "io.debezium.time.Date"),
        "active": ("boolean", None), "doc": ("string", "io.debezium.data.Json"),
        "ref": ("string", "io.debezium.data.Uuid")}
    assert first["amount"]["parameters"] == {"scale": "2", "connect.decimal.precision": "12"}
    assert first["id"]["optional"] is False and all(f["optional"] for c, f in first.items() if c != "id")
    last = after_fields([value for _, value in events if value is not None][-1])
    assert list(last)[-2:] == ["note", "score"]
    assert last["score"]["parameters"] == {"scale": "2", "connect.decimal.precision": "12"}
    assert events[0][0]["schema"]["fields"] == [{"type": "int32", "optional": False, "field": "id"}]

    # The snapshot first (op r), then the changes; every delete is followed by its tombstone; a key change is
    # the old key's delete and tombstone, then the new key's create.
    ops = [value["payload"]["op"] if value else None for _, value in events]
    assert ops[:SNAPSHOT_ROWS] == ["r"] * SNAPSHOT_ROWS
    assert all(v["payload"]["source"]["snapshot"] != "false" for _, v in events[:SNAPSHOT_ROWS])
    assert set(ops[SNAPSHOT_ROWS:]) == {"c", "u", "d", None}
    keys = [key["payload"]["id"] for key, _ in events]
    for n, op in enumerate(ops):
        if op == "d":
            assert ops[n + 1] is None and keys[n + 1] == keys[n], f"delete at {n} without its tombstone"
    moved = [(keys[n - 2], keys[n]) for n, op in enumerate(ops) if op == "c" and n >= 2 and ops[n - 2] == "d"]
    assert {(21, 1021), (22, 1022), (23, 10), (41, 2041)} <= set(moved)

    # Replaying the events (an upsert per create/update/read, a removal per delete) gives the source table.
    replayed: dict[int, dict[str, Any]] = {}
    for key, value in events:
        if value is None:
            continue
        payload, fields = value["payload"], after_fields(value)
        if payload["op"] == "d":
            replayed.pop(key["payload"]["id"], None)
        else:
            replayed[key["payload"]["id"]] = {c: _decode(fields[c], v) for c, v in payload["after"].items()}
    source = cdc.read(table)
    assert list(source.types) == list(COLUMNS) + list(ADDED)
    replayed_table = Table(f"topic {cdc.topic(table)}", source.types, {
        k: {c: row.get(c) for c in source.types} for k, row in replayed.items()})
    assert_same_table(source, replayed_table, {t: {t} for t in source.types.values()}, "replayed topic")


# -- the sinks ----------------------------------------------------------------------------------------------

def _worker(bootstrap_servers: str, work: Path, **overrides: Any) -> dict[str, str]:
    """The test worker with the user's default execution mode (tasks on the executors)."""
    worker = worker_properties(bootstrap_servers, work, **overrides)
    worker.pop("task.execution.mode")
    return worker


def _replicate_in_phases(cdc: Source, table: str, connector: dict[str, str], worker: dict[str, str], spark,
                         read_target, allowed_types) -> None:
    """After each phase of the change script, drain the topic into the target and compare it with the source."""
    for phase_name, phase in PHASES:
        if phase is not None:
            cdc.run(phase, table)
        started = time.monotonic()
        assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0
        print(f"{connector['name']} after {phase_name}: drained in {time.monotonic() - started:.1f} s")
        assert_same_table(cdc.read(table), read_target(), allowed_types, f"after {phase_name}")


def test_delta_sink_replicates_the_source_table(cdc, spark, bootstrap_servers, work_dir):
    table, path = "for_delta", str(work_dir / "delta")
    connector = {"name": f"cdc-delta-{cdc.database}", "connector.class": "DeltaSink", "topics": cdc.topic(table),
                 "delta.table.path": path, **UPSERT, **DEBEZIUM_USER}
    _replicate_in_phases(cdc, table, connector, _worker(bootstrap_servers, work_dir), spark,
                         lambda: read_spark(spark.read.format("delta").load(path), f"Delta table {path}"),
                         SPARK_TYPES)


def test_jdbc_sink_replicates_the_source_table_into_another_database(cdc, spark, postgres, bootstrap_servers,
                                                                     work_dir):
    table, target_db = "for_jdbc", f"{cdc.database}_target"
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {target_db}")
    connector = {"name": f"cdc-jdbc-{cdc.database}", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                 "topics": cdc.topic(table), "connection.url": postgres.jdbc_url(target_db),
                 "table.name.format": "customers", "auto.create": "true", **UPSERT, **DEBEZIUM_USER}
    try:
        _replicate_in_phases(cdc, table, connector, _worker(bootstrap_servers, work_dir), spark,
                             lambda: read_postgres(postgres.conninfo(target_db), "customers"), POSTGRES_TYPES)
    finally:
        with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {target_db} WITH (FORCE)")


def test_iceberg_sink_replicates_the_source_table(cdc, spark, bootstrap_servers, work_dir):
    table, catalog = "for_iceberg", f"cdc_{uuid.uuid4().hex[:8]}"
    connector = {"name": f"cdc-iceberg-{cdc.database}", "connector.class": "IcebergSink",
                 "topics": cdc.topic(table), "iceberg.catalog": catalog, "iceberg.catalog.type": "hadoop",
                 "iceberg.catalog.warehouse": str(work_dir / "warehouse"), "iceberg.tables": "cdc.customers",
                 "iceberg.tables.default-id-columns": "id", "iceberg.tables.auto-create-enabled": "true",
                 "iceberg.tables.evolve-schema-enabled": "true", **DEBEZIUM_USER}
    _replicate_in_phases(cdc, table, connector, _worker(bootstrap_servers, work_dir), spark,
                         lambda: read_spark(spark.read.table(f"{catalog}.cdc.customers"),
                                            f"Iceberg table {catalog}.cdc.customers"),
                         SPARK_TYPES)


# -- the crash test -----------------------------------------------------------------------------------------

class ChangeStream(threading.Thread):
    """Random changes to one table, a small transaction every ~0.3 s, until :meth:`finish`: inserts (up to
    about 250 rows), updates (NULLs included), deletes, key changes, and ``ADD COLUMN`` when :attr:`alter` is
    set, the new columns used from then on."""

    def __init__(self, conninfo: str, table: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.conninfo, self.table, self.rng = conninfo, table, random.Random(seed)
        self.stopping, self.alter = threading.Event(), threading.Event()
        self.steps = 0
        self.error: BaseException | None = None

    def finish(self) -> None:
        self.stopping.set()
        self.join(60)
        assert not self.is_alive(), "the change stream did not stop"
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # handed to the test by finish()
            self.error = e

    def _run(self) -> None:
        rng, table = self.rng, self.table
        next_id, altered = 10_000, False
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            while not self.stopping.is_set():
                self.steps += 1
                if self.alter.is_set() and not altered:
                    conn.execute(ALTER.format(t=table))
                    altered = True
                more = lambda i: ({"note": f"n{i}" if i % 4 else None, "score": Decimal(i % 1000) / 100}  # noqa: E731
                                  if altered else {})
                with conn.transaction():
                    ids = [row[0] for row in conn.execute(f"SELECT id FROM {table}").fetchall()]
                    if len(ids) < 250:
                        for _ in range(rng.randint(1, 3)):
                            next_id += 1
                            _insert(conn, table, next_id, rng.randint(0, 9), **more(next_id))
                    for i in rng.sample(ids, min(len(ids), rng.randint(1, 3))):
                        _update(conn, table, i, rng.randint(1, 50), **more(i))
                    if ids and rng.random() < 0.5:
                        conn.execute(f"DELETE FROM {table} WHERE id = %s", (rng.choice(ids),))
                if ids and rng.random() < 0.15:
                    next_id += 1
                    conn.execute(f"UPDATE {table} SET id = %s WHERE id = (SELECT max(id) FROM {table})",
                                 (next_id,))
                time.sleep(rng.uniform(0.1, 0.5))


def _start_cli(worker: dict[str, str], connectors: list[dict[str, str]], work: Path, log_name: str):
    """``connect-spark standalone WORKER C1 C2`` as a child process, output to ``work/log_name``."""
    command = cli_command(worker, connectors[0], work)
    for connector in connectors[1:]:
        path = work / f"{connector['name']}.properties"
        path.write_text(format_properties(connector))
        command.append(str(path))
    log = open(work / log_name, "ab")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _commit_offsets(spark, path: Path, connector: str, topic: str) -> list[int]:
    """The offset of ``topic``'s partition 0 each of the connector's Delta commits that wrote rows stored, in
    commit order (a schema-evolution commit, an empty append adding columns, repeats the table's offsets)."""
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, str(path)).history().orderBy("version").collect()
    stored = [json.loads(r["userMetadata"])["connect_spark"] for r in history if r["userMetadata"]
              and not (r["operation"] == "WRITE" and (r["operationMetrics"] or {}).get("numOutputRows") == "0")]
    return [doc["offsets"][topic]["0"] for doc in stored if doc["connector"] == connector]


def _delta_commits(path: Path) -> int:
    return len(list((path / "_delta_log").glob("*.json"))) if (path / "_delta_log").exists() else 0


@pytest.mark.timeout(1200)
def test_delta_cli_killed_three_times_while_changes_flow_ends_equal_and_writes_nothing_twice(
        cdc, spark, bootstrap_servers, work_dir):
    table, work = "for_crash", Path(work_dir)
    topic = cdc.topic(table)
    upsert_path, append_path = work / "upsert", work / "append"
    upsert = {"name": f"cdc-crash-upsert-{cdc.database}", "connector.class": "DeltaSink", "topics": topic,
              "delta.table.path": str(upsert_path), **UPSERT, **DEBEZIUM_USER}
    # The same stream appended, each row with its offset: every change event must be there exactly once.
    append = {"name": f"cdc-crash-append-{cdc.database}", "connector.class": "DeltaSink", "topics": topic,
              "delta.table.path": str(append_path), "delta.column.offset": "_offset", "auto.evolve": "true",
              **DEBEZIUM_USER}
    connectors = [upsert, append]
    worker = _worker(bootstrap_servers, work, trigger="500ms", offset_flush_interval_ms=500, spark_master="local[1]",
                     spark_ui_enabled="false", spark_driver_memory="1g")

    changes = ChangeStream(cdc.conninfo, table, seed=5)
    changes.start()
    rng = random.Random(3)
    started = time.monotonic()
    try:
        for kill in range(3):
            proc = _start_cli(worker, connectors, work, f"cli-{kill}.log")
            try:
                before = _delta_commits(upsert_path) + _delta_commits(append_path)
                deadline = time.monotonic() + 300
                while _delta_commits(upsert_path) + _delta_commits(append_path) <= before:
                    assert proc.poll() is None, (work / f"cli-{kill}.log").read_text(errors="replace")[-3000:]
                    assert time.monotonic() < deadline, f"run {kill} wrote nothing in 300 s"
                    assert changes.error is None, changes.error
                    time.sleep(0.3)
                time.sleep(rng.uniform(0.0, 3.0))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(60)
            print(f"kill {kill} at {time.monotonic() - started:.0f} s, {changes.steps} change steps so far")
            changes.alter.set()  # ADD COLUMN while the sink is down (or starting again)
            time.sleep(rng.uniform(1.0, 3.0))  # down while the changes go on
    finally:
        changes.finish()
    cdc.streamed()

    assert run_standalone(dict(worker), [dict(c) for c in connectors], available_now=True, spark=spark) == 0
    print(f"drained at {time.monotonic() - started:.0f} s after {changes.steps} change steps")
    assert_same_table(cdc.read(table), read_spark(spark.read.format("delta").load(str(upsert_path)),
                                                  f"Delta table {upsert_path}"), SPARK_TYPES, "after the kills")

    # Nothing twice: the append table holds each change event (create, update, snapshot read) exactly once;
    # the upsert table's commits each go further than the one before, the last to the topic's end.
    events = read_topic(bootstrap_servers, topic)
    changes_offsets = [r.offset for r in events if r.value is not None and json.loads(r.value)["payload"]["op"] != "d"]
    appended = Counter(r["_offset"] for r in spark.read.format("delta").load(str(append_path)).select("_offset")
                       .collect())
    twice = sorted(offset for offset, n in appended.items() if n > 1)
    assert not twice, f"offsets written more than once: {twice[:20]}"
    assert sorted(appended) == changes_offsets
    stored = _commit_offsets(spark, upsert_path, upsert["name"], topic)
    ends = end_offsets(bootstrap_servers, topic)
    assert list(ends) == [0]  # one partition (the broker's default for the topics Debezium creates)
    assert stored == sorted(set(stored)) and stored[-1] == ends[0], f"upsert commits stored {stored}, end {ends}"
