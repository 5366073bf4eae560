"""The change rules every table sink shares (connectors/changes.py): what deletes, what is consumed, which
change of a key wins; and the JDBC sink's record and Arrow paths applying them alike. No JVM."""

from __future__ import annotations

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.records import connect_schemas, records_to_frame, with_connect_schemas
from connect_spark.connectors.changes import ChangeRules, record_deletes, surviving
from connect_spark.connectors.jdbc.config import JdbcSinkConfig
from connect_spark.connectors.jdbc.frame_rows import frame_batches
from connect_spark.connectors.jdbc.rows import LayoutCache, table_batches

KEY = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
SOURCE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).optional().build()
REWRITTEN = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
             .field("__deleted", Schema.OPTIONAL_STRING_SCHEMA).build())
WITH_OP = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("_cdc", SOURCE).build()


def _change(key_id: int, offset: int, name: str | None = "x", deleted: str | None = "false",
            tombstone: bool = False) -> SinkRecord:
    if tombstone:
        return SinkRecord("cdc", 0, KEY, Struct(KEY).put("id", key_id), None, None, offset)
    value = Struct(REWRITTEN).put("id", key_id).put("name", name).put("__deleted", deleted)
    return SinkRecord("cdc", 0, KEY, Struct(KEY).put("id", key_id), REWRITTEN, value, offset)


def _with_op(op: str | None) -> SinkRecord:
    value = Struct(WITH_OP).put("id", 1).put("_cdc", None if op is None else Struct(SOURCE).put("op", op))
    return SinkRecord("cdc", 0, KEY, Struct(KEY).put("id", 1), WITH_OP, value, 0)


@pytest.mark.parametrize(("record", "deletes"), [
    (_change(1, 0, tombstone=True), True),
    (_change(1, 0, deleted="true"), True),
    (_change(1, 0, deleted="false"), False),
    (_change(1, 0, deleted=None), False),
    (_change(1, 0, deleted="TRUE"), False),  # Debezium writes exactly "true"
])
def test_tombstones_and_rewrite_mode_markers_delete(record, deletes):
    assert record_deletes(ChangeRules(deletes=True), record) is deletes
    assert record_deletes(ChangeRules(deletes=False), record) is False


def test_a_nested_operation_field_starting_with_d_deletes():
    rules = ChangeRules(deletes=True, op_field="_cdc.op")
    assert record_deletes(rules, _with_op("D"))
    assert record_deletes(rules, _with_op("d"))
    assert not record_deletes(rules, _with_op("U"))
    assert not record_deletes(rules, _with_op(None))  # no _cdc struct
    schemaless = SinkRecord("cdc", 0, None, 1, None, {"id": 1, "_cdc": {"op": "D"}}, 0)
    assert record_deletes(rules, schemaless)


def test_the_marker_is_consumed_only_when_deletes_are_on():
    assert ChangeRules(deletes=True).consumed_fields(["id", "__deleted"]) == {"__deleted"}
    assert ChangeRules(deletes=True).consumed_fields(["id"]) == frozenset()
    assert ChangeRules(deletes=False).consumed_fields(["id", "__deleted"]) == frozenset()


def test_last_change_per_key_wins_and_a_key_after_its_delete_is_written_again():
    keys = [(1,), (2,), (1,), (2,), (3,), (3,), (3,)]
    deletes = [False, False, False, True, False, True, False]
    keep, deleted = surviving(keys, deletes, last_by_key=True)
    assert keep == [False, False, True, False, False, False, True]
    assert deleted == {(2,): 3, (3,): 5}
    keep, _ = surviving(keys, deletes, last_by_key=False)  # insert mode keeps every write after the last delete
    assert keep == [True, False, True, False, False, False, True]


def _jdbc_config(**overrides: str) -> JdbcSinkConfig:
    props = {"name": "j", "connection.url": "jdbc:postgresql://localhost:5432/shop", "insert.mode": "upsert",
             "pk.mode": "record_key"}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return JdbcSinkConfig.parse(props)


def _described(batches) -> list[tuple]:
    return [([c.name for c in b.columns], [r[:2] for r in b.rows], sorted(b.delete_keys)) for b in batches]


CHANGES = [_change(1, 0, "a"), _change(2, 1, "b"), _change(3, 2, "c"), _change(1, 3, "a2"),
           _change(2, 4, "b", deleted="true"), _change(3, 5, "c", deleted="true"), _change(3, 6, tombstone=True),
           _change(3003, 7, "c")]


def test_jdbc_rewrite_mode_markers_delete_and_are_no_column_on_both_paths():
    config = _jdbc_config(delete_enabled="true")
    from_records = _described(table_batches(CHANGES, config, LayoutCache(config)))
    assert from_records == [(["id", "name"], [(1, "a2"), (3003, "c")], [(2,), (3,)])]
    frame = with_connect_schemas(records_to_frame([r for r in CHANGES if r.value is not None]), KEY, REWRITTEN)
    key_schema, value_schema = connect_schemas(frame)
    from_frame = frame_batches(frame, key_schema, value_schema, config, LayoutCache(config))
    assert from_frame is not None
    assert _described(from_frame) == [(["id", "name"], [(1, "a2"), (3003, "c")], [(2,), (3,)])]


def test_jdbc_without_delete_enabled_writes_the_marker_as_a_column():
    config = _jdbc_config()
    [(columns, rows, deleted)] = _described(table_batches(CHANGES, config, LayoutCache(config)))
    assert columns == ["id", "name", "__deleted"] and deleted == []
    assert rows == [(1, "a2"), (2, "b"), (3, "c"), (3003, "c")]
