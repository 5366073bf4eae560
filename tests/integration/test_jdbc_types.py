"""JDBC sink: Connect types → PostgreSQL columns and values, tables from Connect schemas, refusals; a real
PostgreSQL, the task driven through the runtime's own context class (no broker, no Spark: fast)."""

from __future__ import annotations

import datetime
import decimal

import psycopg
import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data.logical import Date, Decimal, Time, Timestamp
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.connectors.jdbc import JdbcSinkTask
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

VALUE = (SchemaBuilder.struct()
         .field("id", Schema.INT64_SCHEMA).field("tiny", Schema.OPTIONAL_INT8_SCHEMA)
         .field("small", Schema.OPTIONAL_INT16_SCHEMA).field("num", Schema.OPTIONAL_INT32_SCHEMA)
         .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA).field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA).field("label", Schema.STRING_SCHEMA)
         .field("blob", Schema.OPTIONAL_BYTES_SCHEMA).field("price", Decimal.builder(2).optional().build())
         .field("day", Date.builder().optional().build()).field("clock", Time.builder().optional().build())
         .field("at", Timestamp.builder().optional().build())
         .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build())
         .field("points", SchemaBuilder.array(Schema.INT32_SCHEMA).optional().build())
         .build())


def _task(postgres, name: str, **overrides: str) -> JdbcSinkTask:
    task = JdbcSinkTask()
    task.initialize(WorkerSinkTaskContext({}, None))
    props = {"name": name, "connection.url": postgres.jdbc_url(), "table.name.format": name, "auto.create": "true"}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    task.start(props)
    task.open([TopicPartition("t", 0)])
    return task


def _rows(postgres, query: str, *params):
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        return conn.execute(query, params or None).fetchall()


def test_connect_types_become_confluents_postgresql_types(postgres):
    table = "jdbc_types"
    task = _task(postgres, table, db_timezone="Europe/Paris")
    value = (Struct(VALUE).put("id", 1).put("tiny", 7).put("small", -300).put("num", 70000).put("ratio", 0.5)
             .put("score", 2.25).put("ok", True).put("label", "é'\"\\\t\n").put("blob", b"\x00\xff")
             .put("price", decimal.Decimal("12.34")).put("day", datetime.date(2024, 2, 29))
             .put("clock", datetime.time(23, 59, 58, 123000))
             .put("at", datetime.datetime(2024, 7, 1, 10, 0, tzinfo=datetime.timezone.utc))
             .put("tags", ["a", "b,c", None]).put("points", [1, 2]))
    empty = Struct(VALUE).put("id", 2).put("label", "")
    task.put([SinkRecord("t", 0, None, None, VALUE, value, 0), SinkRecord("t", 0, None, None, VALUE, empty, 1)])
    types = dict(_rows(postgres, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                       table))
    assert types == {"id": "bigint", "tiny": "smallint", "small": "smallint", "num": "integer", "ratio": "real",
                     "score": "double precision", "ok": "boolean", "label": "text", "blob": "bytea",
                     "price": "numeric", "day": "date", "clock": "time without time zone",
                     "at": "timestamp without time zone", "tags": "ARRAY", "points": "ARRAY"}
    assert _rows(postgres, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
                           "AND attname IN ('tags', 'points') ORDER BY attname", table) == [("integer[]",), ("text[]",)]
    assert _rows(postgres, f"SELECT * FROM {table} ORDER BY id") == [
        (1, 7, -300, 70000, 0.5, 2.25, True, "é'\"\\\t\n", b"\x00\xff", decimal.Decimal("12.34"),
         datetime.date(2024, 2, 29), datetime.time(23, 59, 58, 123000), datetime.datetime(2024, 7, 1, 12, 0),
         ["a", "b,c", None], [1, 2]),
        (2, None, None, None, None, None, None, "", None, None, None, None, None, None, None)]
    assert _rows(postgres, "SELECT is_nullable FROM information_schema.columns WHERE table_name = %s AND "
                           "column_name IN ('id', 'label')", table) == [("NO",), ("NO",)]
    task.stop()


def test_a_struct_field_and_a_missing_table_are_refused_with_their_names(postgres):
    inner = SchemaBuilder.struct().field("city", Schema.STRING_SCHEMA).build()
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("address", inner).build()
    task = _task(postgres, "jdbc_struct")
    with pytest.raises(ConnectException, match="'address' is a struct.*Flatten"):
        task.put([SinkRecord("t", 0, None, None, schema, Struct(schema).put("id", 1).put(
            "address", Struct(inner).put("city", "x")), 0)])
    task = _task(postgres, "jdbc_missing", auto_create="false")
    flat = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    with pytest.raises(ConnectException, match="jdbc_missing does not exist.*auto.create"):
        task.put([SinkRecord("t", 0, None, None, flat, Struct(flat).put("id", 1), 0)])


def test_unquoted_identifiers_fold_to_lower_case_and_schemaless_maps_use_the_column_list(postgres):
    task = _task(postgres, "Jdbc_Folded", quote_sql_identifiers="never", fields_whitelist="Id,Name")
    task.put([SinkRecord("t", 0, None, None, None, {"Id": 5, "Name": "five", "ignored": 1.5}, 0)])
    assert _rows(postgres, "SELECT id, name FROM jdbc_folded") == [(5, "five")]


BINARY = (SchemaBuilder.struct()
          .field("id", Schema.INT64_SCHEMA).field("tiny", Schema.OPTIONAL_INT8_SCHEMA)
          .field("num", Schema.OPTIONAL_INT32_SCHEMA).field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
          .field("score", Schema.OPTIONAL_FLOAT64_SCHEMA).field("ok", Schema.OPTIONAL_BOOLEAN_SCHEMA)
          .field("label", Schema.OPTIONAL_STRING_SCHEMA).field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
          .field("price", Decimal.builder(2).optional().build()).field("at", Timestamp.builder().optional().build())
          .build())


def _binary_values(first_id: int) -> list[Struct]:
    at = datetime.datetime(2024, 7, 1, 10, 0, 0, 123000, tzinfo=datetime.timezone.utc)
    return [(Struct(BINARY).put("id", first_id).put("tiny", -128).put("num", 2**31 - 1).put("ratio", 3)
             .put("score", -0.125).put("ok", False).put("label", "é'\"\\\t\n,").put("blob", b"\x00\\\xff")
             .put("price", decimal.Decimal("-0.05")).put("at", at)),
            Struct(BINARY).put("id", first_id + 1)]


def test_typed_batches_copy_in_binary_and_tables_of_other_types_in_text(postgres, caplog):
    """Values from structs into the column types the sink creates go in a binary COPY (nothing falls back to
    text); a table whose types differ (made by hand) still gets every value, through the text COPY."""
    expected_rows = [(1, -128, 2**31 - 1, 3.0, -0.125, False, "é'\"\\\t\n,", b"\x00\\\xff", decimal.Decimal("-0.05"),
                      datetime.datetime(2024, 7, 1, 10, 0, 0, 123000)),
                     (2, None, None, None, None, None, None, None, None, None)]
    caplog.set_level("DEBUG", logger="connect_spark.connectors.jdbc.postgres")
    for mode in ("insert", "upsert"):
        table = f"jdbc_binary_{mode}"
        task = _task(postgres, table, insert_mode=mode, pk_mode="record_value" if mode == "upsert" else "none",
                     pk_fields="id" if mode == "upsert" else "")
        task.put([SinkRecord("t", 0, None, None, BINARY, v, i) for i, v in enumerate(_binary_values(1))])
        assert _rows(postgres, f"SELECT * FROM {table} ORDER BY id") == expected_rows
        task.stop()
    assert "copying in text" not in caplog.text

    # A column changed behind the task's back (its types are remembered): the binary COPY fails, the text one works.
    table = "jdbc_binary_altered"
    task = _task(postgres, table)
    task.put([SinkRecord("t", 0, None, None, BINARY, _binary_values(1)[1], 0)])
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN score TYPE numeric")
    task.put([SinkRecord("t", 0, None, None, BINARY, _binary_values(3)[0], 1)])
    assert "copying in text" in caplog.text
    assert _rows(postgres, f"SELECT id, score, label FROM {table} ORDER BY id") == [
        (2, None, None), (3, decimal.Decimal("-0.125"), "é'\"\\\t\n,")]
    task.stop()

    table = "jdbc_binary_by_hand"
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id numeric PRIMARY KEY, tiny integer, num bigint, ratio double precision, "
                     "score numeric, ok boolean, label varchar(20), blob bytea, price numeric(10, 2), at timestamptz)")
    task = _task(postgres, table, insert_mode="upsert", pk_mode="record_value", pk_fields="id", db_timezone="UTC")
    task.put([SinkRecord("t", 0, None, None, BINARY, v, i) for i, v in enumerate(_binary_values(1))])
    rows = _rows(postgres, f"SELECT id, tiny, num, ratio, score, label, price, at = '2024-07-01 10:00:00.123+00' "
                           f"FROM {table} ORDER BY id")
    assert rows == [(1, -128, 2**31 - 1, 3.0, decimal.Decimal("-0.125"), "é'\"\\\t\n,", decimal.Decimal("-0.05"), True),
                    (2, None, None, None, None, None, None, None)]
    task.stop()


def test_schemaless_maps_of_several_shapes_are_written_each_with_its_own_values(postgres):
    table = "jdbc_schemaless_shapes"
    task = _task(postgres, table, fields_whitelist="id,name,score")

    def record(value, offset):
        return SinkRecord("t", 0, None, None, None, value, offset)

    task.put([record({"id": 1, "name": "a", "score": 1.5, "extra": "x"}, 0), record({"id": 2, "score": 2}, 1),
              record({"id": 3, "name": "c", "score": 3.25}, 2)])
    task.put([record({"id": 4, "name": "d", "score": None}, 3), record({"id": 5, "name": "e", "score": 5.5}, 4),
              record({"id": 6, "name": "f", "score": 6}, 5)])
    types = dict(_rows(postgres, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                       table))
    assert types == {"id": "bigint", "name": "text", "score": "double precision"}  # typed by the first record
    assert _rows(postgres, f"SELECT id, name, score FROM {table} ORDER BY id") == [
        (1, "a", 1.5), (2, None, 2.0), (3, "c", 3.25), (4, "d", None), (5, "e", 5.5), (6, "f", 6.0)]
    assert task.pre_commit({TopicPartition("t", 0): 6}) == {TopicPartition("t", 0): 6}
    task.stop()
