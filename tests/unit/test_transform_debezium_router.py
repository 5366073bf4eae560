"""ByLogicalTableRouter (Debezium's ``io.debezium.transforms.ByLogicalTableRouter``): topics, keys, envelopes,
schema names and the caches, on change events built with the data API."""

from __future__ import annotations

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, ConnectException, DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigValidationError
from connect_spark.transforms.debezium.by_logical_table_router import ByLogicalTableRouter
from connect_spark.transforms.debezium.envelope import Envelope
from connect_spark.transforms.debezium.schema_names import SchemaNameAdjuster

SHARD1 = "mysql-server-1.inventory.customers_shard_1"
SHARD2 = "mysql-server-1.inventory.customers_shard_2"
SOURCE = SchemaBuilder.struct().name("io.debezium.connector.mysql.Source").field("table", Schema.STRING_SCHEMA).build()


def schemas(topic: str) -> tuple[Schema, Schema, Envelope]:
    key = SchemaBuilder.struct().name(topic + ".Key").field("id", Schema.INT64_SCHEMA).build()
    row = (SchemaBuilder.struct().name(topic + ".Value").optional().version(3).doc("a row")
           .field("id", Schema.INT64_SCHEMA)
           .field("flag", SchemaBuilder.bool().optional().default_value(True).build())
           .build())
    return key, row, Envelope.define(topic, row, SOURCE)


def event_record(topic: str, id_: int = 123, flag: bool | None = None, op: str = "c") -> SinkRecord:
    key_schema, row_schema, events = schemas(topic)
    row = Struct(row_schema).put("id", id_).put("flag", flag)
    source = Struct(SOURCE).put("table", topic.rsplit(".", 1)[-1])
    value = events.create(row, source, 10) if op == "c" else events.update(row, row, source, 10)
    return SinkRecord(topic, 0, key_schema, Struct(key_schema).put("id", id_), events.schema, value, 5, timestamp=3)


def router(**props) -> ByLogicalTableRouter:
    transform = ByLogicalTableRouter()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


SHARDS = {"topic.regex": "(.*)customers_shard(.*)", "topic.replacement": "$1customers_all_shards",
          "key.field.name": "shard_id", "key.field.regex": "(.*)customers_shard_(.*)", "key.field.replacement": "$2"}


def shards(**extra) -> ByLogicalTableRouter:
    transform = ByLogicalTableRouter()
    transform.configure({**SHARDS, **extra})
    return transform


def test_shards_route_to_one_topic_with_the_shard_in_the_key():
    transform = shards()
    first, second = transform.apply(event_record(SHARD1)), transform.apply(event_record(SHARD2))
    for out, shard, topic in ((first, "1", SHARD1), (second, "2", SHARD2)):
        assert out.topic == "mysql-server-1.inventory.customers_all_shards"
        assert out.key_schema.name == "mysql-server-1.inventory.customers_all_shards.Key"
        assert [f.name for f in out.key_schema.fields] == ["id", "shard_id"]
        assert out.key_schema.field("shard_id").schema == Schema.STRING_SCHEMA
        assert (out.key.get("id"), out.key.get("shard_id")) == (123, shard)
        assert out.value_schema.name == "mysql-server-1.inventory.customers_all_shards.Envelope"
        assert out.value_schema.field("after").schema.name == "mysql-server-1.inventory.customers_all_shards.Value"
        assert out.value.get("after").get("id") == 123
        assert (out.kafka_offset, out.timestamp, out.original_topic) == (5, 3, topic)


def test_the_new_schemas_keep_version_doc_and_optionality_of_the_old():
    out = shards().apply(event_record(SHARD1))
    row = out.value_schema.field("before").schema
    assert (row.version, row.doc, row.is_optional) == (3, "a row", True)
    assert out.value_schema.version == 2 and not out.value_schema.is_optional
    assert out.value_schema.field("after").schema is row


def test_avro_adjusts_the_new_schema_names():
    out = shards(**{"schema.name.adjustment.mode": "avro"}).apply(event_record(SHARD1))
    assert out.key_schema.name == "mysql_server_1.inventory.customers_all_shards.Key"
    assert out.value_schema.name == "mysql_server_1.inventory.customers_all_shards.Envelope"
    assert out.value_schema.field("after").schema.name == "mysql_server_1.inventory.customers_all_shards.Value"


def test_without_key_field_regex_the_identifier_is_the_whole_topic():
    out = router(topic_regex="(.*)", topic_replacement="all").apply(event_record(SHARD1))
    assert out.key.get("__dbz__physicalTableIdentifier") == SHARD1


def test_a_key_field_regex_that_does_not_match_gives_the_whole_topic():
    out = shards(**{"key.field.regex": "nomatch(.*)_(.*)"}).apply(event_record(SHARD1))
    assert out.key.get("shard_id") == SHARD1


def test_without_uniqueness_the_key_keeps_its_fields_and_is_renamed():
    out = router(topic_regex=r"(.*)\.dbz_shard_\d+\.(.*)", topic_replacement="dbz_core.$2",
                 key_enforce_uniqueness="false").apply(event_record("x.dbz_shard_1.address"))
    assert out.topic == "dbz_core.address"
    assert out.key_schema.name == "dbz_core.address.Key" and [f.name for f in out.key_schema.fields] == ["id"]


def test_a_topic_that_does_not_match_or_routes_to_nothing_is_unchanged():
    r = event_record(SHARD1)
    assert router(topic_regex="other(.*)", topic_replacement="$1").apply(r) is r
    assert router(topic_regex="mysql(.*)", topic_replacement="x").apply(r) is not r
    # the whole topic must match
    assert router(topic_regex="mysql-server-1", topic_replacement="x").apply(r) is r
    assert router(topic_regex="(.*)", topic_replacement="$1").apply(r).topic == SHARD1


def test_an_empty_replacement_result_keeps_the_record():
    r = event_record(SHARD1)
    assert router(topic_regex="(x?)(.*)", topic_replacement="$1").apply(r) is r


def test_tombstones_heartbeats_and_keyless_records_keep_their_value():
    transform = shards()
    key_schema, _, _ = schemas(SHARD1)
    tombstone = SinkRecord(SHARD1, 0, key_schema, Struct(key_schema).put("id", 1), None, None, 1)
    out = transform.apply(tombstone)
    assert out.value is None and out.key.get("shard_id") == "1" and out.topic.endswith("all_shards")
    heartbeat = SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field(
        "ts_ms", Schema.INT64_SCHEMA).build()
    beat = SinkRecord(SHARD1, 0, None, None, heartbeat, Struct(heartbeat).put("ts_ms", 1), 2)
    out = transform.apply(beat)
    assert out.value is beat.value and out.value_schema is heartbeat and out.key is None and out.key_schema is None
    truncate = event_record(SHARD1)
    truncate.key = None  # a truncate carries no key
    out = transform.apply(truncate)
    assert out.key is None and out.key_schema is None and out.value_schema.name.endswith("all_shards.Envelope")


def test_a_key_that_is_no_struct_fails():
    r = SinkRecord(SHARD1, 0, Schema.STRING_SCHEMA, "k", None, None, 1)
    with pytest.raises(DataException, match="Updating schema"):
        shards().apply(r)


def test_envelope_fields_take_defaults_row_fields_do_not():
    out = shards().apply(event_record(SHARD1, flag=None))
    assert out.value.get("after").get_without_default("flag") is None


def test_the_caches_keep_the_first_name_given_to_a_schema():
    transform = router(topic_regex="(.*)", topic_replacement="first")
    shared_key, _, _ = schemas("t")
    one = transform.apply(SinkRecord("a", 0, shared_key, Struct(shared_key).put("id", 1), None, None, 1))
    transform.topic_replacement = "second"  # as if another topic routed elsewhere, same key schema
    two = transform.apply(SinkRecord("b", 0, shared_key, Struct(shared_key).put("id", 1), None, None, 2))
    assert one.key_schema.name == "first.Key" and two.topic == "second" and two.key_schema.name == "first.Key"
    uncached = router(topic_regex="(.*)", topic_replacement="first", logical_table_cache_size="0")
    uncached.apply(SinkRecord("a", 0, shared_key, Struct(shared_key).put("id", 1), None, None, 1))
    uncached.topic_replacement = "second"
    out = uncached.apply(SinkRecord("b", 0, shared_key, Struct(shared_key).put("id", 1), None, None, 2))
    assert out.key_schema.name == "second.Key"


@pytest.mark.parametrize("props, key", [
    ({"topic.replacement": "x"}, "topic.regex"),
    ({"topic.regex": "(.*"}, "topic.regex"),
    ({"topic.regex": "", "topic.replacement": "x"}, "topic.regex"),
    ({"topic.regex": "(.*)"}, "topic.replacement"),
    ({"topic.regex": "(.*)", "topic.replacement": "x", "key.field.regex": "(a"}, "key.field.regex"),
    ({"topic.regex": "(.*)", "topic.replacement": "x", "key.enforce.uniqueness": "sure"}, "key.enforce.uniqueness"),
    ({"topic.regex": "(.*)", "topic.replacement": "x", "schema.name.adjustment.mode": "avro2"},
     "schema.name.adjustment.mode"),
    ({"topic.regex": "(.*)", "topic.replacement": "x", "logical.table.cache.size": "many"}, "logical.table.cache.size"),
])
def test_bad_values_name_the_key(props, key):
    with pytest.raises(ConfigValidationError) as error:
        ByLogicalTableRouter().configure(props)
    assert key in [issue.key for issue in error.value.issues]


def test_a_key_field_regex_needs_a_replacement():
    with pytest.raises(ConfigException, match="key.field.replacement must be non-empty if key.field.regex is set"):
        router(topic_regex="(.*)", topic_replacement="x", key_field_regex="(.*)")
    with pytest.raises(ConfigException, match="key.field.replacement"):
        router(topic_regex="(.*)", topic_replacement="x", key_field_regex="(.*)", key_field_replacement=" ")
    router(topic_regex="(.*)", topic_replacement="x", key_field_regex=" ")  # blank: no key regex


def test_a_replacement_naming_a_missing_group_is_refused():
    with pytest.raises(ConfigException, match="No group 2"):
        router(topic_regex="(.*)", topic_replacement="$2")


def test_the_defaults_are_debeziums():
    defaults = {name: key.default for name, key in ByLogicalTableRouter().config().keys.items()}
    assert {k: v for k, v in defaults.items() if k not in ("topic.regex", "topic.replacement")} == {
        "key.enforce.uniqueness": True, "key.field.regex": None, "key.field.name": "__dbz__physicalTableIdentifier",
        "key.field.replacement": None, "schema.name.adjustment.mode": "none", "logical.table.cache.size": 16}


# --- schema.name.adjustment.mode ------------------------------------------------------------------------


@pytest.mark.parametrize("mode, name, adjusted", [
    ("none", "a-b.c", "a-b.c"),
    ("avro", "a-b.c_d", "a_b.c_d"),
    ("avro", "1abc", "_1abc"),
    ("avro", "ok.Name_1", "ok.Name_1"),
    ("avro", "é", "_"),
    ("avro", "a\U0001F600", "a__"),  # two UTF-16 code units
    ("avro_unicode", "a-b", "a_u002db"),
    ("avro_unicode", "a_b", "a_u005fb"),
    ("avro_unicode", "_a", "_u005fa"),
    ("avro_unicode", "1a", "_u0031a"),
    ("avro_unicode", "a\u0101", "a_u101"),
    ("avro", "", ""),
])
def test_schema_name_adjustment(mode, name, adjusted):
    assert SchemaNameAdjuster(mode).adjust(name) == adjusted


def test_two_names_adjusting_to_one_is_an_error():
    adjuster = SchemaNameAdjuster("avro")
    assert adjuster.adjust("a-b") == "a_b"
    assert adjuster.adjust("a-b") == "a_b"
    with pytest.raises(ConnectException, match="conflicts with another different schema 'a-b'"):
        adjuster.adjust("a+b")


def test_adjusters_are_shared_by_the_process_and_pickle_to_the_shared_one():
    import pickle

    from connect_spark.transforms.debezium.schema_names import adjuster_for

    assert adjuster_for(" AVRO ") is adjuster_for("avro")
    assert pickle.loads(pickle.dumps(adjuster_for("avro"))) is adjuster_for("avro")
    transform = shards(**{"schema.name.adjustment.mode": "avro"})
    copy = pickle.loads(pickle.dumps(transform))
    assert copy.apply(event_record(SHARD1)).key_schema.name == "mysql_server_1.inventory.customers_all_shards.Key"
