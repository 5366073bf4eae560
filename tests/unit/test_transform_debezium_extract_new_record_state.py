"""ExtractNewRecordState (Debezium's ``io.debezium.transforms.ExtractNewRecordState``) on change events built
with the data API: every delete handling mode, every key, the records that are no change events."""

from __future__ import annotations

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import Headers, SinkRecord
from connect_spark.config.definition import ConfigValidationError
from connect_spark.transforms.debezium.envelope import TRANSACTION_BLOCK_SCHEMA, Envelope
from connect_spark.transforms.debezium.extract_new_record_state import ExtractNewRecordState

TOPIC = "dbserver1.inventory.customers"
KEY = SchemaBuilder.struct().name(TOPIC + ".Key").field("id", Schema.INT32_SCHEMA).build()
ROW = (SchemaBuilder.struct().name(TOPIC + ".Value").optional()
       .field("id", Schema.INT32_SCHEMA)
       .field("name", Schema.OPTIONAL_STRING_SCHEMA)
       .field("email", Schema.OPTIONAL_STRING_SCHEMA)
       .field("tier", SchemaBuilder.string().optional().default_value("basic").build())
       .field("region", Schema.OPTIONAL_STRING_SCHEMA)
       .build())
SOURCE = (SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
          .field("db", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
          .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("xmin", Schema.OPTIONAL_INT64_SCHEMA).build())
EVENTS = Envelope.define(TOPIC, ROW, SOURCE)
TRANSACTION = Struct(TRANSACTION_BLOCK_SCHEMA).put("id", "571").put("total_order", 42).put("data_collection_order", 7)


def key(id_: int) -> Struct:
    return Struct(KEY).put("id", id_)


def row(id_: int, name: str | None = "alice", email: str | None = "a@x", tier: str | None = None,
        region: str | None = None) -> Struct:
    return Struct(ROW).put("id", id_).put("name", name).put("email", email).put("tier", tier).put("region", region)


def source(lsn: int | None = 1234) -> Struct:
    return Struct(SOURCE).put("db", "inventory").put("table", "customers").put("ts_ms", 100).put("lsn", lsn)


def record(value: Struct | None, key_: Struct | None = None, headers: Headers | None = None,
           value_schema: Schema | None = None) -> SinkRecord:
    schema = value_schema if value_schema is not None else (value.schema if isinstance(value, Struct) else None)
    return SinkRecord(TOPIC, 0, KEY if key_ is not None else None, key_, schema, value, 7, timestamp=99,
                      headers=headers if headers is not None else Headers())


def create(id_: int = 1, **kwargs) -> SinkRecord:
    return record(EVENTS.create(row(id_, **kwargs), source(), 500, TRANSACTION), key(id_))


def update(before: Struct | None, after: Struct) -> SinkRecord:
    return record(EVENTS.update(before, after, source(), 600), key(after.get("id")))


def delete(before: Struct | None, id_: int = 1, headers: Headers | None = None) -> SinkRecord:
    return record(EVENTS.delete(before, source(), 700), key(id_), headers)


def tombstone(id_: int = 1) -> SinkRecord:
    return record(None, key(id_))


def unwrap(**props) -> ExtractNewRecordState:
    transform = ExtractNewRecordState()
    transform.configure({k.replace("_", "."): v for k, v in props.items()})
    return transform


def unwrap_with(props: dict) -> ExtractNewRecordState:
    transform = ExtractNewRecordState()
    transform.configure(props)
    return transform


def fields(struct: Struct) -> dict:
    return {f.name: struct.get_without_default(f) for f in struct.schema.fields}


# --- inserts, updates, snapshot reads ---------------------------------------------------------------


def test_an_insert_becomes_its_after_row_with_a_required_copy_of_its_schema():
    out = unwrap().apply(create(1))
    assert fields(out.value) == {"id": 1, "name": "alice", "email": "a@x", "tier": None, "region": None}
    assert out.value_schema.name == ROW.name and not out.value_schema.is_optional
    assert [f.name for f in out.value_schema.fields] == [f.name for f in ROW.fields]
    assert (out.topic, out.key, out.timestamp, out.kafka_offset) == (TOPIC, key(1), 99, 7)


@pytest.mark.parametrize("event", [
    EVENTS.read(row(1), source(None), 500),
    EVENTS.update(row(1, name="old"), row(1), source(), 600),
    EVENTS.update(None, row(1), source(), 600),  # REPLICA IDENTITY DEFAULT: updates carry no before
])
def test_snapshot_reads_and_updates_become_their_after_row(event):
    out = unwrap().apply(record(event, key(1)))
    assert fields(out.value)["name"] == "alice"


def test_a_null_field_with_a_default_stays_null_except_when_rewriting_with_defaults():
    assert unwrap().apply(create(1)).value.get_without_default("tier") is None
    rewritten = unwrap(delete_tombstone_handling_mode="rewrite").apply(create(1))
    assert rewritten.value.get_without_default("tier") == "basic"
    out = unwrap_with({"delete.tombstone.handling.mode": "rewrite", "replace.null.with.default": "false"}).apply(
        create(1))
    assert out.value.get_without_default("tier") is None


# --- deletes, tombstones, truncates, per mode ----------------------------------------------------------

MODES = ["drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"]


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_on_insert_delete_tombstone_and_truncate(mode):
    transform = unwrap_with({"delete.tombstone.handling.mode": mode})
    inserted = transform.apply(create(1))
    deleted = transform.apply(delete(row(1)))
    dropped_tombstone = transform.apply(tombstone())
    truncated = transform.apply(record(EVENTS.truncate(source(), 800)))
    assert truncated is None  # neither before nor after: dropped in every mode
    rewrites = mode.startswith("rewrite")
    assert ("__deleted" in fields(inserted.value)) is rewrites
    if rewrites:
        assert inserted.value.get("__deleted") == "false"
    if mode == "drop":
        assert deleted is None
    elif mode == "tombstone":
        assert deleted.value is None and deleted.value_schema == ROW  # after extracted: its schema, no value
    elif mode == "delete-to-tombstone":
        assert deleted.value is None and deleted.value_schema is None and deleted.key == key(1)
    else:
        assert fields(deleted.value) == {**fields(row(1)), "tier": "basic", "__deleted": "true"}
    if mode == "rewrite-with-tombstone":
        assert dropped_tombstone.value is None and dropped_tombstone.key == key(1)
    else:
        assert dropped_tombstone is None


def test_the_default_mode_is_tombstone():
    out = unwrap().apply(delete(row(1)))
    assert out is not None and out.value is None and out.value_schema == ROW
    assert unwrap().apply(tombstone()) is None


def test_mode_values_ignore_case_and_surrounding_blanks():
    out = unwrap_with({"delete.tombstone.handling.mode": " Rewrite "}).apply(delete(row(1)))
    assert out.value.get("__deleted") == "true"


def test_a_delete_without_before_is_dropped_in_every_mode():
    for mode in MODES:
        assert unwrap_with({"delete.tombstone.handling.mode": mode}).apply(delete(None)) is None


def test_a_delete_with_only_the_key_columns_rewrites_to_them():
    before = Struct(ROW).put("id", 5)  # what REPLICA IDENTITY DEFAULT logs
    out = unwrap(delete_tombstone_handling_mode="rewrite").apply(delete(before, 5))
    assert fields(out.value) == {"id": 5, "name": None, "email": None, "tier": "basic", "region": None,
                                 "__deleted": "true"}


def test_a_primary_key_change_delete_tombstone_insert():
    transform = unwrap(delete_tombstone_handling_mode="rewrite-with-tombstone")
    out = [transform.apply(r) for r in (delete(row(1), 1), tombstone(1), create(10))]
    assert out[0].key == key(1) and out[0].value.get("__deleted") == "true"
    assert out[1].key == key(1) and out[1].value is None
    assert out[2].key == key(10) and out[2].value.get("id") == 10 and out[2].value.get("__deleted") == "false"


# --- records that are no change event -------------------------------------------------------------------


def test_heartbeats_schema_changes_unnamed_and_schemaless_values_pass_unchanged():
    heartbeat = SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field(
        "ts_ms", Schema.INT64_SCHEMA).build()
    change = SchemaBuilder.struct().name("io.debezium.connector.mysql.SchemaChangeValue").field(
        "ddl", Schema.STRING_SCHEMA).build()
    unnamed = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).build()
    transform = unwrap(add_headers="op", add_fields="op", route_by_field="region")
    for r in (record(Struct(heartbeat).put("ts_ms", 1)), record(Struct(change).put("ddl", "ALTER")),
              record(Struct(unnamed).put("op", "c")), record({"op": "c", "after": {"id": 1}}),
              record("plain string", value_schema=Schema.STRING_SCHEMA)):
        out = transform.apply(r)
        assert out is r and len(out.headers) == 0


def test_a_tombstone_of_any_key_follows_the_mode():
    anything = SinkRecord("other", 0, Schema.STRING_SCHEMA, "k", None, None, 1)
    assert unwrap().apply(anything) is None
    assert unwrap(delete_tombstone_handling_mode="rewrite-with-tombstone").apply(anything) is anything


def test_an_envelope_without_an_after_field_fails():
    bad = SchemaBuilder.struct().name("x.Envelope").field("op", Schema.STRING_SCHEMA).build()
    with pytest.raises(DataException, match="Unknown field: after"):
        unwrap().apply(record(Struct(bad).put("op", "c")))


# --- add.fields -------------------------------------------------------------------------------------------


def test_add_fields_plain_qualified_renamed_and_missing():
    out = unwrap(add_fields="op,table,lsn,source.ts_ms,ts_ms,ts_us,id,transaction.total_order,"
                            "data_collection_order:dco,nope,xmin").apply(create(1))
    added = {k: v for k, v in fields(out.value).items() if k.startswith("__")}
    assert added == {"__op": "c", "__table": "customers", "__lsn": 1234, "__source_ts_ms": 100, "__ts_ms": 500,
                     "__ts_us": 500000, "__id": "571", "__transaction_total_order": 42, "__dco": 7, "__xmin": None}
    schema = out.value_schema
    assert schema.field("__op").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert schema.field("__lsn").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert schema.field("__nope") is None


def test_add_fields_prefix_trimmed_entries_and_a_null_transaction():
    transform = unwrap_with({"add.fields": " op , transaction.id:tx ,", "add.fields.prefix": "meta."})
    out = transform.apply(record(EVENTS.read(row(1), source(), 500), key(1)))
    assert fields(out.value)["meta.op"] == "r"
    assert "meta.tx" in fields(out.value) and out.value.get("meta.tx") is None  # snapshot: no transaction


def test_add_fields_on_rewritten_deletes_and_not_on_null_values():
    out = unwrap(delete_tombstone_handling_mode="rewrite", add_fields="op,lsn").apply(delete(row(1)))
    assert (out.value.get("__deleted"), out.value.get("__op"), out.value.get("__lsn")) == ("true", "d", 1234)
    assert unwrap(add_fields="op").apply(delete(row(1))).value is None


def test_add_fields_falls_back_to_a_field_of_the_envelope():
    schema = (SchemaBuilder.struct().name(TOPIC + ".Envelope").field("before", ROW).field("after", ROW)
              .field("source", SOURCE).field("op", Schema.STRING_SCHEMA).field("changed", Schema.STRING_SCHEMA).build())
    event = Struct(schema).put("after", row(1)).put("source", source()).put("op", "u").put("changed", "name")
    out = unwrap(add_fields="changed").apply(record(event, key(1)))
    assert out.value.get("__changed") == "name"


def test_a_qualified_field_of_a_missing_struct_fails():
    schema = SchemaBuilder.struct().name("x.Envelope").field("after", ROW).field("op", Schema.STRING_SCHEMA).build()
    with pytest.raises(DataException, match="no field source"):
        unwrap(add_fields="lsn").apply(record(Struct(schema).put("after", row(1)).put("op", "c"), key(1)))


def test_an_added_name_that_clashes_with_a_column_fails():
    with pytest.raises(DataException, match="duplication"):
        unwrap_with({"add.fields": "op:name", "add.fields.prefix": ""}).apply(create(1))


def test_the_added_schema_is_cached_per_row_schema_and_operation():
    transform = unwrap(add_fields="op")
    first, second = transform.apply(create(1)), transform.apply(create(2))
    assert first.value_schema is second.value_schema
    assert transform.apply(update(row(1), row(1))).value.get("__op") == "u"


# --- add.headers -------------------------------------------------------------------------------------------


def test_add_headers_keeps_existing_headers_and_adds_optional_schemas():
    r = create(1)
    r.headers.add("existing", "x", Schema.STRING_SCHEMA)
    out = unwrap(add_headers="op,source.lsn:lsn,db,ts_ms,nope", add_headers_prefix="h_").apply(r)
    assert [(h.key, h.value) for h in out.headers] == [("existing", "x"), ("h_op", "c"), ("h_lsn", 1234),
                                                       ("h_db", "inventory"), ("h_ts_ms", 500)]
    assert out.headers.last_with_name("h_db").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert len(r.headers) == 1  # the input record is not changed


def test_a_tombstone_gets_only_the_op_header_as_d():
    out = unwrap(delete_tombstone_handling_mode="rewrite-with-tombstone", add_headers="op,lsn,source.op:src_op").apply(
        tombstone())
    assert [(h.key, h.value, h.schema) for h in out.headers] == [("__op", "d", Schema.STRING_SCHEMA),
                                                                 ("__src_op", "d", Schema.STRING_SCHEMA)]


def test_a_rewritten_delete_carries_the_op_header():
    transform = unwrap(delete_tombstone_handling_mode="rewrite", add_headers="op")
    out = transform.apply(delete(row(1)))
    assert out.headers.last_with_name("__op").value == "d"


def test_a_struct_header_keeps_only_the_structs_basics():
    out = unwrap(add_headers="source.source:src").apply(create(1))
    header = out.headers.last_with_name("__src")
    assert header.value == source() and header.schema.name == SOURCE.name and header.schema.fields == ()


# --- route.by.field ---------------------------------------------------------------------------------------


def test_route_by_field_from_after_and_from_before_on_deletes():
    transform = unwrap(route_by_field="region", delete_tombstone_handling_mode="rewrite")
    assert transform.apply(create(1, region="eu")).topic == "eu"
    assert transform.apply(delete(row(1, region="us"))).topic == "us"
    assert transform.apply(create(1, region=None)).topic == TOPIC
    assert transform.apply(create(1, region="  ")).topic == TOPIC


def test_route_by_field_in_tombstone_mode_reads_before_of_the_delete():
    out = unwrap(route_by_field="region").apply(delete(row(1, region="eu")))
    assert out.topic == "eu" and out.value is None


def test_route_by_a_missing_or_non_string_column_fails():
    with pytest.raises(DataException, match="not a valid field name"):
        unwrap(route_by_field="nope").apply(create(1))
    with pytest.raises(DataException, match="not of type STRING"):
        unwrap(route_by_field="id").apply(create(1))


# --- drop.fields.header.name -------------------------------------------------------------------------------


def dropping(names: list | None, record_: SinkRecord, header: str = "drop") -> SinkRecord:
    record_.headers.add(header, names, SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    return record_


def test_drop_fields_keeps_schema_compatibility_by_default():
    transform = unwrap(drop_fields_header_name="drop", drop_fields_from_key="true")
    out = transform.apply(dropping(["email", "id"], create(1)))
    assert [f.name for f in out.value_schema.fields] == ["id", "name", "tier", "region"]  # id is required
    assert out.key == key(1)


def test_drop_fields_from_value_and_key_without_compatibility():
    transform = unwrap(drop_fields_header_name="drop", drop_fields_from_key="true",
                       drop_fields_keep_schema_compatible="false")
    out = transform.apply(dropping(["email", "id", "nope"], create(1)))
    assert [f.name for f in out.value_schema.fields] == ["name", "tier", "region"]
    assert out.key_schema.fields == () and out.key_schema.name == KEY.name


def test_drop_fields_only_from_the_value_by_default_and_after_add_fields():
    transform = unwrap_with({"drop.fields.header.name": "drop", "drop.fields.keep.schema.compatible": "false",
                             "add.fields": "op,lsn"})
    out = transform.apply(dropping(["__op", "name"], create(1)))
    assert "__op" not in fields(out.value) and "__lsn" in fields(out.value) and "name" not in fields(out.value)
    assert out.key == key(1)


def test_drop_fields_on_deletes_come_before_add_fields():
    transform = unwrap_with({"drop.fields.header.name": "drop", "drop.fields.keep.schema.compatible": "false",
                             "add.fields": "op", "delete.tombstone.handling.mode": "rewrite"})
    out = transform.apply(dropping(["__op", "email"], delete(row(1))))
    assert fields(out.value)["__op"] == "d" and "email" not in fields(out.value)


def test_drop_fields_without_the_header_or_with_an_empty_list_changes_nothing():
    transform = unwrap(drop_fields_header_name="drop", drop_fields_keep_schema_compatible="false")
    assert fields(transform.apply(create(1)).value) == fields(row(1))
    assert fields(transform.apply(dropping([], create(1))).value) == fields(row(1))
    assert fields(transform.apply(dropping(None, create(1))).value) == fields(row(1))
    assert fields(transform.apply(dropping(["name"], create(1), header="other")).value) == fields(row(1))


def test_drop_fields_reads_the_first_header_of_the_name():
    r = dropping(["name"], create(1))
    r.headers.add("drop", ["email"], None)
    out = unwrap(drop_fields_header_name="drop").apply(r)
    assert "name" not in fields(out.value) and "email" in fields(out.value)


def test_drop_fields_header_that_is_no_list_fails():
    r = create(1)
    r.headers.add("drop", "name", Schema.STRING_SCHEMA)
    with pytest.raises(DataException, match="list of field names"):
        unwrap(drop_fields_header_name="drop").apply(r)


def test_delete_to_tombstone_with_a_drop_header_fails_as_in_debezium():
    with pytest.raises(DataException, match="schemaless value"):
        unwrap(drop_fields_header_name="drop", delete_tombstone_handling_mode="delete-to-tombstone").apply(
            dropping(["name"], delete(row(1))))


# --- the keys of Debezium 2.x -------------------------------------------------------------------------------


@pytest.mark.parametrize("props, delete_kept, deleted_marker, tombstone_kept", [
    ({"delete.handling.mode": "drop"}, False, None, False),
    ({"delete.handling.mode": "none"}, True, None, False),
    ({"delete.handling.mode": "rewrite"}, True, "true", False),
    ({"delete.handling.mode": "rewrite", "drop.tombstones": "false"}, True, "true", True),
    ({"drop.tombstones": "false"}, False, None, True),  # 2.x: deletes dropped by default
    ({"delete.handling.mode": "none", "drop.tombstones": "false"}, True, None, True),
    ({"delete.handling.mode": "rewrite", "delete.tombstone.handling.mode": "drop"}, False, None, False),
])
def test_removed_2x_keys_are_read_as_debezium_2x_read_them(props, delete_kept, deleted_marker, tombstone_kept):
    transform = unwrap_with(props)
    deleted = transform.apply(delete(row(1)))
    assert (deleted is not None) is delete_kept
    if deleted is not None:
        assert (deleted.value.get("__deleted") if deleted.value is not None else None) == deleted_marker
    assert (transform.apply(tombstone()) is not None) is tombstone_kept


# --- configuration errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("props, key", [
    ({"delete.tombstone.handling.mode": "jbsdfkjsd"}, "delete.tombstone.handling.mode"),
    ({"delete.tombstone.handling.mode": ""}, "delete.tombstone.handling.mode"),
    ({"delete.handling.mode": "tombstone"}, "delete.handling.mode"),
    ({"drop.tombstones": "maybe"}, "drop.tombstones"),
    ({"drop.fields.from.key": "yes"}, "drop.fields.from.key"),
    ({"drop.fields.keep.schema.compatible": "1"}, "drop.fields.keep.schema.compatible"),
    ({"replace.null.with.default": "sometimes"}, "replace.null.with.default"),
    ({"add.fields": "op:a:b"}, "add.fields"),
    ({"add.headers": "op,:"}, "add.headers"),
])
def test_bad_values_name_the_key_and_the_value(props, key):
    with pytest.raises(ConfigValidationError) as error:
        unwrap_with(props)
    assert [issue.key for issue in error.value.issues] == [key]
    assert key in str(error.value) and repr(props[key]) in str(error.value)


def test_the_config_def_declares_every_key_with_debeziums_defaults():
    config = ExtractNewRecordState().config()
    defaults = {name: key.default for name, key in config.keys.items()}
    assert defaults == {
        "delete.tombstone.handling.mode": "tombstone", "route.by.field": "", "add.fields.prefix": "__",
        "add.fields": [], "add.headers.prefix": "__", "add.headers": [], "drop.fields.header.name": None,
        "drop.fields.from.key": False, "drop.fields.keep.schema.compatible": True, "replace.null.with.default": True,
        "delete.handling.mode": None, "drop.tombstones": None,
    }
    assert all(key.doc for key in config.keys.values())


def test_prefixes_and_header_names_are_read_untrimmed():
    transform = unwrap_with({"add.fields": "op", "add.fields.prefix": " x "})
    assert " x op" in fields(transform.apply(create(1)).value)


def test_a_configuration_error_of_an_entry_is_a_config_exception():
    from connect_spark.transforms.debezium.field_reference import FieldReference

    with pytest.raises(ConfigException, match="Unexpected field name"):
        FieldReference("__", "a:b:c")
