"""Debezium's semantic types as typed columns: the vectorized plan against the per-record path, then one connector
run into a Delta table and one into a PostgreSQL table, from Debezium-shaped change events (the after-state
struct ExtractNewRecordState leaves, in JsonConverter envelopes with schemas)."""

from __future__ import annotations

import datetime
import decimal
import json

import psycopg
import pytest
from pyspark.sql import types as T

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data import semantic_types as st
from connect_spark.api.data.logical import unscaled_to_bytes
from connect_spark.api.records import TopicPartition
from connect_spark.columnar.plan import compile_plan
from connect_spark.columnar.records import fit_records_to_frame
from connect_spark.columnar.types import to_spark_type
from connect_spark.converters.json import JsonConverter
from connect_spark.runtime.conversion.sink_records import raw_records
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_COLUMNS, RAW_DDL
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce, read_topic
from tests.integration.frame_batches import plan_connector, raw_row
from tests.integration.test_columnar_equivalence import run_both

UTC = datetime.timezone.utc
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
WITH_SCHEMAS = {"value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true",
                "key.converter": "org.apache.kafka.connect.storage.StringConverter"}


def _named(builder: SchemaBuilder, name: str, **parameters: str) -> Schema:
    builder = builder.name(name).version(1)
    for key, value in parameters.items():
        builder = builder.parameter(key, value)
    return builder.optional().build()


VSD = (SchemaBuilder.struct().name(st.VARIABLE_SCALE_DECIMAL).version(1).doc("Variable scaled decimal")
       .field("scale", Schema.INT32_SCHEMA).field("value", Schema.BYTES_SCHEMA).optional().build())
AFTER = (SchemaBuilder.struct().name("dbserver1.public.events.Value")
         .field("id", Schema.INT32_SCHEMA)
         .field("day", _named(SchemaBuilder.int32(), st.DATE))
         .field("clock_ms", _named(SchemaBuilder.int32(), st.TIME))
         .field("clock_us", _named(SchemaBuilder.int64(), st.MICRO_TIME))
         .field("clock_ns", _named(SchemaBuilder.int64(), st.NANO_TIME))
         .field("at_ms", _named(SchemaBuilder.int64(), st.TIMESTAMP))
         .field("at_us", _named(SchemaBuilder.int64(), st.MICRO_TIMESTAMP))
         .field("at_ns", _named(SchemaBuilder.int64(), st.NANO_TIMESTAMP))
         .field("at_zoned", _named(SchemaBuilder.string(), st.ZONED_TIMESTAMP))
         .field("clock_zoned", _named(SchemaBuilder.string(), st.ZONED_TIME))
         .field("year", _named(SchemaBuilder.int32(), st.YEAR))
         .field("amount", VSD)
         .field("doc", _named(SchemaBuilder.string(), st.JSON))
         .field("uid", _named(SchemaBuilder.string(), st.UUID))
         .field("mood", _named(SchemaBuilder.string(), st.ENUM, allowed="happy,sad"))
         .field("flags", _named(SchemaBuilder.bytes(), st.BITS, length="10"))
         .build())
UID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"


def _amount(text: str) -> Struct:
    sign, digits, exponent = decimal.Decimal(text).as_tuple()
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
    return Struct(VSD).put("scale", -exponent).put("value", unscaled_to_bytes(unscaled))


def _event(i: int, **values) -> Struct:
    struct = Struct(AFTER).put("id", i)
    for name, value in values.items():
        struct.put(name, value)
    return struct


#: id → (the after state, whether a Delta table can hold it); ids 4 and 5 fit no typed column of Spark's.
EVENTS = {
    1: (_event(1, day=19782, clock_ms=3_723_004, clock_us=45_296_789_012, clock_ns=45_296_789_012_345,
               at_ms=1_704_164_645_123, at_us=1_704_164_645_123_456, at_ns=1_704_164_645_123_456_000,
               at_zoned="2024-01-02T01:04:05.12345Z", clock_zoned="10:15:30Z", year=2024, amount=_amount("1234.5678"),
               doc='{"a": [1, 2]}', uid=UID, mood="happy", flags=b"\x05\x01"), True),
    2: (_event(2, day=-1, clock_ms=0, clock_us=st.MICROS_PER_DAY, clock_ns=1_999, at_ms=-1, at_us=-1, at_ns=-1_001,
               at_zoned="2024-02-29T23:30:00.5-02:30", clock_zoned="23:59:59.999+05:00", year=1969,
               amount=_amount("-0.000000000000000001"), doc="[]", uid=UID.upper(), mood="sad", flags=b""), True),
    3: (_event(3), True),
    4: (_event(4, at_zoned="infinity"), False),
    5: (_event(5, amount=_amount("1.0000000000000000001")), False),
}


def _envelope(value: Struct | None) -> bytes:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    return converter.from_connect_data("events", AFTER if value is not None else None, value)


# --- the plan and the per-record path agree -----------------------------------------------------------


def _with(event: Struct, i: int, **changes) -> Struct:
    values = {f.name: event.get(f.name) for f in AFTER.fields if f.name != "id"}
    return _event(i, **{**values, **changes})


def test_plan_types_columns_as_the_per_record_path_and_hands_back_the_same_records(spark, tmp_path):
    import pyarrow as pa

    one, two = EVENTS[1][0], EVENTS[2][0]
    values = [value for value, _ in EVENTS.values()] + [
        _event(6, at_zoned="2024-01-02T01:04:05.123450Z"),  # not as Java writes it: per record
        _event(7, day=st.MAX_DAY + 1), _event(8, at_ms=253_402_300_800_000),  # beyond 9999: per record
        _with(one, 11, amount=None),  # every other type, converted by Spark
        _with(two, 12, amount=None, at_zoned="2024-03-01T02:00:00.5Z", at_ns=-1_000)]
    rows = [raw_row(i, _envelope(v)) for i, v in enumerate(values)] + [raw_row(len(values), None)]
    counts = run_both(spark, tmp_path, rows, **WITH_SCHEMAS)  # plan + per-record gives the per-record records
    assert counts["expected"] == len(rows)

    connector, worker = plan_connector(tmp_path, **WITH_SCHEMAS)
    plan = compile_plan(connector, worker, frame_task=True)
    out = plan.apply(spark.createDataFrame(rows, RAW_DDL))
    good = out.good
    assert good.schema["value"].dataType.simpleString() == to_spark_type(AFTER).simpleString()
    assert good.schema["value"].dataType["at_us"].dataType == T.TimestampNTZType()
    converted = {r["value"]["id"]: r["value"].asDict() for r in good.collect() if r["value"] is not None}
    # amounts, text not written as Java writes it, sub-microsecond and out-of-range values take the record path
    assert sorted(converted) == [3, 11, 12]
    assert sorted(out.fallback.toArrow().column("offset").to_pylist()) == [0, 1, 3, 4, 5, 6, 7]

    # the typed values Spark computed are those the per-record path builds its frame from
    converter = build_task_plugins(connector, worker, 0).converter
    raw = pa.Table.from_pylist([dict(zip(RAW_COLUMNS, r)) for r in rows], RAW_ARROW_SCHEMA)
    records = {r.value.get("id"): r for r in converter.convert(raw_records(raw)).records if r.value is not None}
    built = fit_records_to_frame([records[i] for i in sorted(converted)])
    assert not built.misfits
    for row in built.table.column("value").to_pylist():
        for name, value in row.items():
            got = converted[row["id"]][name]
            if name == "at_zoned" and got is not None:  # an instant: pyspark gives it in the local time zone
                got = got.astimezone(UTC)
            assert got == value, (row["id"], name)
    assert converted[12]["at_ns"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert converted[11]["at_zoned"].astimezone(UTC) == datetime.datetime(2024, 1, 2, 1, 4, 5, 123450, tzinfo=UTC)


# --- one connector run each: Delta, PostgreSQL --------------------------------------------------------


@pytest.fixture(scope="module")
def events_topic(bootstrap_servers):
    topic = "semantic-types-events"
    create_topic(bootstrap_servers, topic, 1)
    produce(bootstrap_servers, topic, [(0, str(i).encode(), _envelope(v), []) for i, (v, _) in EVENTS.items()])
    return topic


def test_delta_table_has_typed_columns_and_misfits_go_to_the_dead_letter_queue(spark, bootstrap_servers, work_dir,
                                                                               events_topic):
    path = str(work_dir / "events")
    dlq = "semantic-types-dlq"
    connector = {"name": "semantic-delta", "connector.class": "DeltaSink", "topics": events_topic,
                 "delta.table.path": path, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                 "errors.deadletterqueue.topic.replication.factor": "1",
                 "errors.deadletterqueue.context.headers.enable": "true", **WITH_SCHEMAS}
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    assert result.committed == {TopicPartition(events_topic, 0): len(EVENTS)}

    table = spark.read.format("delta").load(path)
    types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    assert {k: v for k, v in types.items() if k in {f.name for f in AFTER.fields}} == {
        "id": "int", "day": "date", "clock_ms": "int", "clock_us": "bigint", "clock_ns": "bigint",
        "at_ms": "timestamp_ntz", "at_us": "timestamp_ntz", "at_ns": "timestamp_ntz", "at_zoned": "timestamp",
        "clock_zoned": "string", "year": "int", "amount": "decimal(38,18)", "doc": "string", "uid": "string",
        "mood": "string", "flags": "binary"}
    rows = {r["id"]: r.asDict() for r in table.collect()}
    assert sorted(rows) == [i for i, (_, fits) in EVENTS.items() if fits]
    one, two = rows[1], rows[2]
    assert one["day"] == datetime.date(2024, 2, 29)
    assert (one["clock_ms"], one["clock_us"], one["clock_ns"]) == (3_723_004, 45_296_789_012, 45_296_789_012_345)
    assert one["at_ms"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)
    assert one["at_us"] == one["at_ns"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert one["at_zoned"].astimezone(UTC) == datetime.datetime(2024, 1, 2, 1, 4, 5, 123450, tzinfo=UTC)
    assert one["amount"] == decimal.Decimal("1234.5678")
    assert (one["clock_zoned"], one["year"], one["doc"], one["uid"], one["mood"], one["flags"]) == (
        "10:15:30Z", 2024, '{"a": [1, 2]}', UID, "happy", b"\x05\x01")
    assert two["day"] == datetime.date(1969, 12, 31)
    assert two["at_ms"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)
    assert two["at_us"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert two["at_ns"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999998)  # -1001 ns, floored
    assert two["at_zoned"].astimezone(UTC) == datetime.datetime(2024, 3, 1, 2, 0, 0, 500000, tzinfo=UTC)
    assert two["amount"] == decimal.Decimal("-0.000000000000000001")
    assert all(v is None for k, v in rows[3].items() if k in {f.name for f in AFTER.fields} - {"id"})

    letters = read_topic(bootstrap_servers, dlq)
    assert sorted(json.loads(m.value)["payload"]["id"] for m in letters) == [4, 5]
    reasons = {json.loads(m.value)["payload"]["id"]: dict(m.headers)["__connect.errors.exception.message"].decode()
               for m in letters}
    assert "field 'at_zoned'" in reasons[4] and "'infinity' is not an ISO-8601 date-time" in reasons[4]
    assert "field 'amount'" in reasons[5] and "more than 18 digits after the point" in reasons[5]


def test_postgres_table_has_the_source_types(spark, bootstrap_servers, postgres, work_dir, events_topic):
    table = "semantic_events"
    # executor mode hands the task record frames, whose typed columns cannot hold events 4 and 5: record errors
    connector = {"name": "semantic-jdbc", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                 "topics": events_topic, "connection.url": postgres.jdbc_url(), "table.name.format": table,
                 "auto.create": "true", "pk.mode": "record_value", "pk.fields": "id", "insert.mode": "upsert",
                 "db.timezone": "Europe/Paris", "errors.tolerance": "all", **WITH_SCHEMAS}
    worker = worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor")
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    assert result.exit_code == 0

    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        types = dict(conn.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                                  "attrelid = %s::regclass AND attnum > 0", [table]).fetchall())
        rows = {r[0]: r for r in conn.execute(
            f"SELECT id, day, clock_ms::text, clock_us::text, clock_ns::text, at_ms, at_us, at_ns, at_zoned::text, "
            f"clock_zoned::text, year, amount, doc::text, uid::text, mood, flags::text FROM {table}").fetchall()}
    assert types == {
        "id": "integer", "day": "date", "clock_ms": "time without time zone", "clock_us": "time without time zone",
        "clock_ns": "time without time zone", "at_ms": "timestamp without time zone",
        "at_us": "timestamp without time zone", "at_ns": "timestamp without time zone",
        "at_zoned": "timestamp with time zone", "clock_zoned": "time with time zone", "year": "integer",
        "amount": "numeric", "doc": "json", "uid": "uuid", "mood": "text", "flags": "bit(10)"}
    assert sorted(rows) == [i for i, (_, fits) in EVENTS.items() if fits]
    assert rows[1] == (1, datetime.date(2024, 2, 29), "01:02:03.004", "12:34:56.789012", "12:34:56.789012",
                       datetime.datetime(2024, 1, 2, 3, 4, 5, 123000), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
                       datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), "2024-01-02 01:04:05.12345+00", "10:15:30+00",
                       2024, decimal.Decimal("1234.5678"), '{"a": [1, 2]}', UID, "happy", "0100000101")
    # a local date-time is the wall clock (db.timezone moves nothing); 24:00:00 as PostgreSQL has it
    assert rows[2] == (2, datetime.date(1969, 12, 31), "00:00:00", "24:00:00", "00:00:00.000001",
                       datetime.datetime(1969, 12, 31, 23, 59, 59, 999000),
                       datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
                       datetime.datetime(1969, 12, 31, 23, 59, 59, 999998), "2024-03-01 02:00:00.5+00",
                       "23:59:59.999+05", 1969, decimal.Decimal("-0.000000000000000001"), "[]", UID, "sad",
                       "0000000000")
    assert rows[3] == (3,) + (None,) * 15


def test_records_put_to_postgres_keep_what_no_typed_column_holds(postgres):
    """A task given records (``put``) writes what PostgreSQL holds and Spark's types do not: ``infinity``, a
    decimal beyond decimal(38,18). No broker, no Spark: the task driven through the runtime's own context."""
    from connect_spark.api.records import SinkRecord
    from connect_spark.connectors.jdbc import JdbcSinkTask
    from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

    table = "semantic_records"
    task = JdbcSinkTask()
    task.initialize(WorkerSinkTaskContext({}, None))
    task.start({"name": table, "connection.url": postgres.jdbc_url(), "table.name.format": table,
                "auto.create": "true"})
    task.open([TopicPartition("events", 0)])
    values = [EVENTS[4][0], EVENTS[5][0], _event(9, day=st.MAX_DAY + 1, at_us=st.MIN_MICROS - 1)]
    task.put([SinkRecord("events", 0, None, None, AFTER, v, i) for i, v in enumerate(values)])
    task.stop()
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        rows = conn.execute(f"SELECT id, at_zoned::text, amount, day::text, at_us::text FROM {table} ORDER BY id"
                            ).fetchall()
    assert rows == [(4, "infinity", None, None, None), (5, None, decimal.Decimal("1.0000000000000000001"), None, None),
                    (9, None, None, "10000-01-01", "0001-12-31 23:59:59.999999 BC")]
