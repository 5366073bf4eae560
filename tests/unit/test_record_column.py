"""Fitting a batch's keys or values into one Arrow column: misfits named, schemas merged, no silent casts."""

from __future__ import annotations

import datetime

import pyarrow as pa

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import DataException
from connect_spark.api.records import SinkRecord
from connect_spark.columnar.record_column import MAX_DEPTH, SchemaConflict, fit_column, merge_schemas, type_conflict
from connect_spark.columnar.records import fit_records_to_frame, records_to_frame, split_conflicting


def schemaless(values):
    return fit_column(values, [None] * len(values), "value")


def test_a_field_of_another_type_is_a_misfit_naming_the_field_and_both_types():
    fitted = schemaless([{"id": 1, "amount": 2.5}, {"id": 2, "amount": 3}, {"id": 3, "amount": "12.5"},
                         {"id": 4, "amount": True}, {"id": 5, "amount": {"x": 1}}])
    assert fitted.array.type == pa.struct([("id", pa.int64()), ("amount", pa.float64())])
    # the integer widened into the double column; nothing else was cast
    assert fitted.array.to_pylist()[:2] == [{"id": 1, "amount": 2.5}, {"id": 2, "amount": 3.0}]
    reasons = {m.index: m.reason for m in fitted.misfits}
    assert sorted(reasons) == [2, 3, 4]
    assert reasons[2] == "field 'amount' of the value is a string ('12.5') where the frame's column is double"
    assert "boolean" in reasons[3] and "object" in reasons[4]


def test_the_kind_most_records_have_wins_and_odd_whole_values_are_misfits():
    fitted = schemaless([7, {"a": 1}, [1, 2], {"a": 2}, {"b": "x"}, None])
    assert fitted.array.type == pa.struct([("a", pa.int64()), ("b", pa.string())])
    assert [m.index for m in fitted.misfits] == [0, 2]
    assert fitted.misfits[0].reason == "the value is a long (7) where the frame's column is struct"
    assert fitted.array.to_pylist()[5] is None  # a tombstone stays a null, not a misfit


def test_fields_keep_the_order_records_first_carry_them():
    fitted = schemaless([{"z": 1, "a": 1}, {"m": "x", "a": 2}])
    assert [f.name for f in fitted.array.type] == ["z", "a", "m"]


def test_huge_integers_bad_strings_and_deep_nesting_are_misfits():
    deep = {"x": 1}
    for _ in range(MAX_DEPTH + 5):
        deep = {"n": deep}
    fitted = schemaless([{"a": 1}, {"a": 2 ** 70}, {"a": 3}, deep, {"a": "\ud800"}, {"a": 4}])
    reasons = {m.index: m.reason for m in fitted.misfits}
    assert sorted(reasons) == [1, 3, 4]
    assert "beyond 64 bits" in reasons[1]
    assert "deeper than" in reasons[3]
    assert [f.name for f in fitted.array.type] == ["a"]  # the deep record added no columns


def test_a_string_arrow_refuses_is_a_misfit_when_strings_win():
    fitted = schemaless([{"s": "ok"}, {"s": "\ud800"}])
    assert [m.index for m in fitted.misfits] == [1]
    assert "cannot be stored" in fitted.misfits[0].reason


def test_empty_objects_and_null_fields():
    fitted = schemaless([{"a": 1, "meta": {}, "n": None}, {"a": 2, "meta": {}}])
    assert fitted.array.type == pa.struct([("a", pa.int64()), ("n", pa.string())])
    assert not fitted.misfits


V1 = SchemaBuilder.struct().name("R").version(1).field("id", Schema.INT32_SCHEMA).field("name", Schema.STRING_SCHEMA).build()
V2 = (SchemaBuilder.struct().name("R").version(2).field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA)
      .field("email", Schema.OPTIONAL_STRING_SCHEMA).build())
V3 = SchemaBuilder.struct().name("R").version(3).field("id", Schema.STRING_SCHEMA).build()


def test_schemas_merge_with_new_optional_fields_and_widened_integers():
    merged = merge_schemas(V1, V2)
    assert [(f.name, f.schema.type.name, f.schema.is_optional) for f in merged.fields] == [
        ("id", "INT64", False), ("name", "STRING", False), ("email", "STRING", True)]
    values = [Struct(V1).put("id", 1).put("name", "a"), Struct(V2).put("id", 2).put("name", "b").put("email", "e"),
              Struct(V1).put("id", 3).put("name", "c")]
    fitted = fit_column(values, [V1, V2, V1], "value")
    assert fitted.array.to_pylist() == [{"id": 1, "name": "a", "email": None}, {"id": 2, "name": "b", "email": "e"},
                                        {"id": 3, "name": "c", "email": None}]
    assert not fitted.misfits


def test_a_schema_that_does_not_merge_is_a_misfit_naming_the_field_and_both_schemas():
    try:
        merge_schemas(V2, V3)
    except SchemaConflict as e:
        assert e.path == "id"
    else:
        raise AssertionError("INT64 and STRING merged")
    values = [Struct(V2).put("id", 1).put("name", "a"), Struct(V3).put("id", "x"), Struct(V2).put("id", 2).put("name", "b")]
    fitted = fit_column(values, [V2, V3, V2], "value")
    [misfit] = fitted.misfits
    assert misfit.index == 1
    assert misfit.reason == ("the value's schema Schema{R:STRUCT} version 3 does not fit the frame's schema "
                             "Schema{R:STRUCT} version 2: field 'id' is STRING in the record's and INT64 in the frame's")


def _record(offset, value, key=None):
    return SinkRecord(topic="t", kafka_partition=0, key_schema=None, key=key, value_schema=None, value=value,
                      kafka_offset=offset)


def test_records_to_frame_sets_misfits_apart_with_their_coordinates():
    records = [_record(0, {"a": 1.5}), _record(1, {"a": "x"}), _record(2, {"a": 2})]
    built = fit_records_to_frame(records)
    assert built.table.column("original_offset").to_pylist() == [0, 2]
    [(record, reason)] = built.misfits
    assert record.kafka_offset == 1 and reason.startswith("t[0]@1: field 'a' of the value is a string")
    try:
        records_to_frame(records)
    except DataException as e:
        assert "t[0]@1" in str(e)
    else:
        raise AssertionError("records_to_frame accepted a misfit")


def test_which_column_types_widen_into_a_delta_tables():
    from pyspark.sql import types as T

    from connect_spark.connectors.delta.rows import widens

    assert widens(T.IntegerType(), T.LongType()) and widens(T.LongType(), T.DoubleType())
    assert widens(T.FloatType(), T.DoubleType()) and widens(T.NullType(), T.StringType())
    assert not widens(T.DoubleType(), T.LongType()) and not widens(T.LongType(), T.IntegerType())
    assert not widens(T.StringType(), T.DoubleType()) and not widens(T.BooleanType(), T.DoubleType())


# --- type_conflict / split_conflicting: records converted per record joining rows Spark converted -----------

ORDER_TYPE = pa.struct([("id", pa.int64()), ("price", pa.float64()), ("note", pa.string()),
                        ("tags", pa.list_(pa.int64()))])


def test_a_value_of_another_kind_than_a_typed_column_is_a_conflict_naming_the_field():
    reason = type_conflict({"id": 1, "price": "12.5"}, ORDER_TYPE, "value")
    assert reason is not None and "'price'" in reason and "string" in reason and "double" in reason
    assert type_conflict({"id": 1, "tags": [1, "x"]}, ORDER_TYPE, "value") is not None
    assert type_conflict(7, ORDER_TYPE, "value") is not None  # a bare number among objects


def test_what_the_frame_can_take_or_widen_to_is_no_conflict():
    assert type_conflict({"id": 1, "price": 7}, ORDER_TYPE, "value") is None  # an integer in a double column
    assert type_conflict({"id": 2.5}, ORDER_TYPE, "value") is None  # a fraction: the long column would widen
    assert type_conflict({"id": 1, "extra": {"a": 1}}, ORDER_TYPE, "value") is None  # a field the frame lacks
    assert type_conflict({"note": 5}, ORDER_TYPE, "value") is None  # string columns may be all-null guesses
    assert type_conflict({"id": 1, "price": None}, ORDER_TYPE, "value") is None
    assert type_conflict({"id": datetime.date(2024, 1, 1)}, pa.struct([("id", pa.date32())]), "value") is None


def test_split_conflicting_parts_schemaless_records_and_leaves_schema_records_alone():
    def record(offset, value, schema=None):
        return SinkRecord("orders", 0, None, "k", schema, value, offset)

    records = [record(1, {"id": 1, "price": -0.0}), record(2, {"id": 2, "price": "12.5"}),
               record(3, "text", Schema.STRING_SCHEMA)]
    fitting, conflicts = split_conflicting(records, pa.string(), ORDER_TYPE)
    assert [r.kafka_offset for r in fitting] == [1, 3]
    assert [(r.kafka_offset, reason.split(":")[0]) for r, reason in conflicts] == [(2, "orders[0]@2")]
    assert split_conflicting(records, pa.null(), pa.null())[1] == []  # unknown column types: no conflict


def test_schemaless_maps_the_transforms_build_fit_as_objects():
    """Transforms that rebuild a schemaless value (ReplaceField, InsertField, ...) give a JavaHashMap (a dict
    keeping Java's iteration order): it is an object like any dict, so a frame of such values has no misfit."""
    from connect_spark.api.data.java_map import JavaHashMap

    values = [JavaHashMap({"id": i, "tags": ["a"], "n": JavaHashMap({"x": 1})}) for i in range(3)]
    fitted = schemaless(values)
    assert fitted.misfits == []
    assert fitted.array.to_pylist() == [{"id": i, "tags": ["a"], "n": {"x": 1}} for i in range(3)]
