"""JDBC sink: configuration (Confluent's keys, refusals, secrets) and records → rows, without a database."""

from __future__ import annotations

import datetime

import pytest

from connect_spark import plugins
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.data.logical import Timestamp
from connect_spark.api.records import SinkRecord
from connect_spark.api.errors import ConnectException
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.secrets import masked
from connect_spark.connectors.jdbc.config import JDBC_SINK_CONFIG_DEF, JdbcSinkConfig, parse_jdbc_url
from connect_spark.connectors.jdbc.connector import JdbcSinkConnector
from connect_spark.connectors.jdbc.dialect import TableId
from connect_spark.connectors.jdbc.rows import LayoutCache, table_batches
from connect_spark.connectors.jdbc.target import table_for_topic

URL = "jdbc:postgresql://db.example.com:5433/shop?user=sink&password=s3cret&sslmode=require"


def _config(**overrides: str) -> JdbcSinkConfig:
    props = {"name": "j", "connection.url": URL}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return JdbcSinkConfig.parse(props)


def test_confluent_class_name_and_defaults():
    assert plugins.resolve("connector", "io.confluent.connect.jdbc.JdbcSinkConnector") is JdbcSinkConnector
    config = _config()
    assert (config.insert_mode, config.pk_mode, config.batch_size, config.max_retries, config.retry_backoff_ms) == (
        "insert", "none", 3000, 10, 3000)
    assert (config.connection_attempts, config.connection_backoff_ms, config.table_name_format) == (3, 10000, "${topic}")
    assert (config.db_timezone, config.quote_identifiers, config.offsets_table) == ("UTC", True, "connect_offsets")
    assert not config.auto_create and not config.auto_evolve and not config.delete_enabled


def test_url_becomes_libpq_keywords_and_user_password_keys_override():
    assert parse_jdbc_url(URL).params == {"host": "db.example.com", "port": "5433", "dbname": "shop", "user": "sink",
                                          "password": "s3cret", "sslmode": "require"}
    config = _config(connection_user="other", connection_password="pw")
    assert config.connection.params["user"] == "other" and config.connection.params["password"] == "pw"
    assert config.connection.describe() == "db.example.com:5433/shop"
    assert parse_jdbc_url("jdbc:postgresql:shop").params == {"host": "localhost", "dbname": "shop"}


def test_password_is_masked_and_a_bad_url_never_shows_its_password():
    assert masked({"connection.password": "pw"}, JDBC_SINK_CONFIG_DEF)["connection.password"] == "[hidden]"
    with pytest.raises(ConfigValidationError) as e:
        _config(connection_url="jdbc:mysql://h/db?password=topsecret")
    assert "topsecret" not in str(e.value) and "connection.url" in str(e.value) and "PostgreSQL" in str(e.value)
    with pytest.raises(ConfigValidationError) as e:
        _config(connection_url="jdbc:postgresql://h/db?password=topsecret&loginTimeout=3")
    assert "topsecret" not in str(e.value) and "loginTimeout" in str(e.value)


@pytest.mark.parametrize("key, value, words", [
    ("dialect.name", "MySqlDatabaseDialect", ["dialect.name", "PostgreSqlDatabaseDialect"]),
    ("table.types", "VIEW", ["table.types", "VIEW"]),
    ("mssql.use.merge.holdlock", "true", ["mssql.use.merge.holdlock", "does not support"]),
    ("insert.mode", "merge", ["insert.mode", "upsert"]),
    ("pk.mode", "record_value_x", ["pk.mode"]),
    ("db.timezone", "Mars/Olympus", ["db.timezone", "time zone"]),
])
def test_unsupported_or_invalid_keys_are_refused_by_name(key, value, words):
    issues = JDBC_SINK_CONFIG_DEF.validate({"connection.url": URL, key: value})
    assert issues, f"{key}={value} was accepted"
    assert all(w in issues[0].message for w in words), issues[0].message


@pytest.mark.parametrize("overrides, word", [
    ({"insert.mode": "upsert"}, "pk.mode"),
    ({"insert.mode": "update"}, "pk.mode"),
    ({"delete.enabled": "true", "pk.mode": "record_value"}, "delete.enabled"),
    ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields"),
    ({"table.name.format": "a.b.c"}, "table.name.format"),
])
def test_cross_key_rules(overrides, word):
    with pytest.raises(ConfigValidationError) as e:
        JdbcSinkConfig.parse({"connection.url": URL, **overrides})
    assert word in str(e.value)


def test_table_name_format_keeps_dotted_topics_whole():
    assert table_for_topic("${topic}", "a.b") == TableId(None, "a.b")
    assert table_for_topic("archive.kafka_${topic}", "orders") == TableId("archive", "kafka_orders")


KEY = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
VALUE = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
         .field("at", Timestamp.builder().optional().build()).build())


def _record(key_id: int, offset: int, name: str | None = "x", tombstone: bool = False) -> SinkRecord:
    value = None if tombstone else Struct(VALUE).put("id", key_id).put("name", name).put(
        "at", datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone.utc))
    return SinkRecord("orders", 0, KEY, Struct(KEY).put("id", key_id), None if tombstone else VALUE, value, offset)


def test_upsert_keeps_the_last_record_per_key_and_tombstones_delete():
    config = _config(insert_mode="upsert", pk_mode="record_key", delete_enabled="true")
    records = [_record(1, 0, "a"), _record(2, 1, "b"), _record(1, 2, "c"), _record(2, 3, tombstone=True),
               _record(3, 4, "d"), _record(3, 5, tombstone=True), _record(3, 6, "e")]
    [batch] = table_batches(records, config, LayoutCache(config))
    assert [c.name for c in batch.columns] == ["id", "name", "at"] and [c.primary for c in batch.columns] == [
        True, False, False]
    assert [r[:2] for r in batch.rows] == [(1, "c"), (3, "e")]
    assert sorted(batch.delete_keys) == [(2,), (3,)]
    assert batch.rows[0][2] == datetime.datetime(2024, 1, 1, 12)  # UTC wall clock for a timestamp column


def test_db_timezone_shifts_timestamps():
    config = _config(db_timezone="Europe/Paris")
    [batch] = table_batches([_record(1, 0)], config, LayoutCache(config))
    assert batch.rows[0][2] == datetime.datetime(2024, 1, 1, 13)


def test_insert_mode_keeps_duplicates_and_skips_tombstones_without_delete():
    config = _config(pk_mode="kafka", fields_whitelist="name")
    [batch] = table_batches([_record(1, 0), _record(1, 1), _record(1, 2, tombstone=True)], config, LayoutCache(config))
    assert [c.name for c in batch.columns] == ["__connect_topic", "__connect_partition", "__connect_offset", "name"]
    assert batch.rows == [("orders", 0, 0, "x"), ("orders", 0, 1, "x")]


def test_a_struct_field_is_refused_naming_it_and_flatten():
    inner = SchemaBuilder.struct().field("city", Schema.STRING_SCHEMA).build()
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("address", inner).build()
    record = SinkRecord("t", 0, None, None, schema, Struct(schema).put("id", 1).put("address", Struct(inner).put("city", "x")), 0)
    config = _config()
    with pytest.raises(ConnectException, match="'address' is a struct.*Flatten"):
        table_batches([record], config, LayoutCache(config))


def test_schemaless_values_need_an_explicit_column_list():
    record = SinkRecord("t", 0, None, None, None, {"id": 1, "name": "a", "extra": True}, 0)
    config = _config()
    with pytest.raises(ConnectException, match="fields.whitelist"):
        table_batches([record], config, LayoutCache(config))
    config = _config(fields_whitelist="id,name")
    [batch] = table_batches([record], config, LayoutCache(config))
    assert [(c.name, c.schema.type.name) for c in batch.columns] == [("id", "INT64"), ("name", "STRING")]
    assert batch.rows == [(1, "a")]


def _map_record(value, offset: int = 0, key=None) -> SinkRecord:
    return SinkRecord("t", 0, None, key, None, value, offset)


def test_schemaless_records_of_one_shape_share_a_layout_and_another_shape_compiles_its_own():
    config = _config(fields_whitelist="id,name,score")
    layouts = LayoutCache(config)
    first = layouts.layout(_map_record({"id": 1, "name": "a", "score": 1.5, "extra": [1]}))
    same = layouts.layout(_map_record({"id": 2, "name": "b", "score": 0.25, "other": {"x": 1}}))
    assert same is first  # entries outside fields.whitelist do not matter
    typed = {c.name: c.schema.type.name for c in first.columns}
    assert typed == {"id": "INT64", "name": "STRING", "score": "FLOAT64"}
    int_score = layouts.layout(_map_record({"id": 3, "name": "c", "score": 3}))
    missing_name = layouts.layout(_map_record({"id": 4, "score": 4.5}))
    bool_id = layouts.layout(_map_record({"id": True, "name": "e", "score": 5.5}))
    assert len({id(first), id(int_score), id(missing_name), id(bool_id)}) == 4
    assert {c.name: c.schema.type.name for c in int_score.columns}["score"] == "INT64"
    assert {c.name: c.schema.type.name for c in missing_name.columns}["name"] == "STRING"  # None: a text column
    assert {c.name: c.schema.type.name for c in bool_id.columns}["id"] == "BOOLEAN"
    assert layouts.layout(_map_record({"id": 5, "score": 6.5})) is missing_name
    with pytest.raises(ConnectException, match="schemaless list"):  # a value that is no map is still refused
        layouts.layout(_map_record([1, 2]))
    with pytest.raises(ConnectException, match="which no column type matches"):
        layouts.layout(_map_record({"id": 6, "name": {"nested": 1}, "score": 1.0}))


def test_a_batch_of_schemaless_records_of_several_shapes_gives_each_record_its_values():
    config = _config(fields_whitelist="id,name,score")
    records = [_map_record({"id": 1, "name": "a", "score": 1.5}, 0), _map_record({"id": 2, "score": 2}, 1),
               _map_record({"id": 3, "name": "c", "score": 3.5}, 2), _map_record({"name": "d", "score": None}, 3),
               _map_record({"id": 5, "name": "e", "score": 5.5}, 4)]
    [batch] = table_batches(records, config, LayoutCache(config))
    assert [(c.name, c.schema.type.name) for c in batch.columns] == [("id", "INT64"), ("name", "STRING"),
                                                                     ("score", "FLOAT64")]  # typed by the first
    assert batch.rows == [(1, "a", 1.5), (2, None, 2), (3, "c", 3.5), (None, "d", None), (5, "e", 5.5)]
    assert batch.row_records == records and not batch.typed


def test_a_schemaless_primitive_key_is_cached_by_its_type():
    config = _config(pk_mode="record_key", pk_fields="k", fields_whitelist="v")
    layouts = LayoutCache(config)
    by_int = layouts.layout(_map_record({"v": "a"}, key=7))
    assert layouts.layout(_map_record({"v": "b"}, key=8)) is by_int
    by_text = layouts.layout(_map_record({"v": "c"}, key="seven"))
    assert by_text is not by_int
    assert [(c.name, c.schema.type.name, c.primary) for c in by_text.columns] == [("k", "STRING", True),
                                                                                 ("v", "STRING", False)]
    assert by_int.columns[0].schema.type.name == "INT64" and by_text.key(_map_record({}, key="x")) == ("x",)
    by_map = layouts.layout(_map_record({"v": "d"}, key={"k": 9, "other": "x"}))
    assert by_map is not by_int and by_map.row(_map_record({"v": "d"}, key={"k": 9})) == (9, "d")


def test_record_value_keys_of_schemaless_values_follow_the_key_fields_types():
    config = _config(pk_mode="record_value", pk_fields="id", fields_whitelist="name")
    layouts = LayoutCache(config)
    text_id = layouts.layout(_map_record({"id": "a", "name": "x"}))
    int_id = layouts.layout(_map_record({"id": 1, "name": "x"}))
    assert text_id is not int_id and layouts.layout(_map_record({"id": 2, "name": None})) is not int_id
    assert [(c.name, c.schema.type.name, c.primary) for c in int_id.columns] == [("id", "INT64", True),
                                                                                ("name", "STRING", False)]
    assert int_id.key(_map_record({"id": 1, "name": "x"})) == (1,)


def test_records_with_an_evolved_schema_share_one_column_list():
    wider = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA) \
        .field("at", Timestamp.builder().optional().build()).field("qty", Schema.OPTIONAL_INT32_SCHEMA).build()
    newer = SinkRecord("orders", 0, None, None, wider, Struct(wider).put("id", 9).put("qty", 3), 1)
    config = _config()
    [batch] = table_batches([_record(1, 0), newer], config, LayoutCache(config))
    assert [c.name for c in batch.columns] == ["id", "name", "at", "qty"]
    assert batch.rows[0][3] is None and batch.rows[1] == (9, None, None, 3)


def test_connector_page_lists_the_keys_as_declared():
    from pathlib import Path

    from connect_spark.config.docs import render_config_def

    page = (Path(__file__).resolve().parents[2] / "docs" / "connectors" / "jdbc.md").read_text()
    assert render_config_def(JDBC_SINK_CONFIG_DEF, heading_level=2) in page
