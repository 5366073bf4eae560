"""Debezium's header transforms: ExtractChangedRecordState (changed / unchanged columns as headers) and
HeaderToValue (headers into the value, nested fields included), on records built with the data API."""

from __future__ import annotations

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, SchemaBuilderException, Struct
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import Headers, SinkRecord
from connect_spark.config.definition import ConfigValidationError
from connect_spark.transforms.debezium.envelope import Envelope
from connect_spark.transforms.debezium.extract_changed_record_state import ExtractChangedRecordState, java_equals
from connect_spark.transforms.debezium.header_to_value import HeaderToValue
from connect_spark.transforms.debezium.nested_fields import NewEntry, make_new_schema

TOPIC = "mysql-server-1.inventory.product"
ROW = (SchemaBuilder.struct().name(TOPIC + ".Value").optional()
       .field("id", Schema.INT64_SCHEMA).field("price", Schema.FLOAT32_SCHEMA).field("product", Schema.STRING_SCHEMA)
       .field("image", Schema.OPTIONAL_BYTES_SCHEMA)
       .field("note", SchemaBuilder.string().optional().default_value("none").build())
       .build())
EVENTS = Envelope.define(TOPIC, ROW, Schema.STRING_SCHEMA)


def row(id_: int = 101, price: float = 20.0, product: str = "a product", image: bytes | None = None,
        note: str | None = None) -> Struct:
    return Struct(ROW).put("id", id_).put("price", price).put("product", product).put("image", image).put("note", note)


def record(value, headers: Headers | None = None, schema: Schema | None = None) -> SinkRecord:
    if schema is None and isinstance(value, Struct):
        schema = value.schema
    return SinkRecord(TOPIC, 0, None, None, schema, value, 3, timestamp=4, headers=headers or Headers())


def changes(**props) -> ExtractChangedRecordState:
    transform = ExtractChangedRecordState()
    transform.configure({"header.changed.name": "Changed", "header.unchanged.name": "Unchanged", **props})
    return transform


def listed(out: SinkRecord, name: str) -> list[str] | None:
    header = out.headers.last_with_name(name)
    return None if header is None else header.value


# --- ExtractChangedRecordState ---------------------------------------------------------------------------


def test_an_update_lists_changed_and_unchanged_columns_in_after_order():
    out = changes().apply(record(EVENTS.update(row(), row(price=21.0, product="renamed"), "src")))
    assert listed(out, "Changed") == ["price", "product"]
    assert listed(out, "Unchanged") == ["id", "image", "note"]
    schema = out.headers.last_with_name("Changed").schema
    assert (schema.name, schema.is_optional, schema.value_schema) == ("Changed", True, Schema.OPTIONAL_STRING_SCHEMA)
    assert out.value is not None and out.value_schema == EVENTS.schema


def test_inserts_deletes_and_updates_without_before_get_both_headers_empty():
    for event in (EVENTS.create(row(), "src"), EVENTS.delete(row(), "src"), EVENTS.update(None, row(), "src"),
                  EVENTS.read(row(), "src")):
        out = changes().apply(record(event))
        assert (listed(out, "Changed"), listed(out, "Unchanged")) == ([], [])


def test_bytes_always_differ_and_values_are_compared_without_defaults():
    out = changes().apply(record(EVENTS.update(row(image=b"x", note=None), row(image=b"x", note="none"), "src")))
    assert listed(out, "Changed") == ["image", "note"]


def test_java_equals():
    assert java_equals(None, None) and not java_equals(None, 0)
    assert java_equals(float("nan"), float("nan")) and not java_equals(0.0, -0.0)
    assert not java_equals(b"a", b"a") and java_equals([1, 2], [1, 2]) and not java_equals([b"a"], [b"a"])
    assert java_equals({"a": 1}, {"a": 1}) and not java_equals(1, True) and java_equals(row(), row())


def test_only_named_headers_are_added():
    assert [h.key for h in ExtractChangedRecordState().apply(record(EVENTS.create(row(), "src"))).headers] == []
    only = changes(**{"header.unchanged.name": " "}).apply(record(EVENTS.update(row(), row(price=1.0), "src")))
    assert [h.key for h in only.headers] == ["Changed"]


def test_tombstones_and_records_that_are_no_change_event_pass():
    transform = changes()
    for r in (record(None), record(row()), record({"before": {}, "after": {}})):
        assert transform.apply(r) is r


def test_existing_headers_are_kept_and_the_input_is_not_changed():
    r = record(EVENTS.update(row(), row(price=1.0), "src"), Headers().add("h", "v"))
    out = changes().apply(r)
    assert [h.key for h in out.headers] == ["h", "Changed", "Unchanged"] and len(r.headers) == 1


# --- HeaderToValue ----------------------------------------------------------------------------------------


def to_value(**props) -> HeaderToValue:
    transform = HeaderToValue()
    transform.configure(props)
    return transform


def product(**values) -> Struct:
    schema = (SchemaBuilder.struct().name("product").field("id", Schema.INT64_SCHEMA)
              .field("note", SchemaBuilder.string().optional().default_value("none").build())
              .field("after", SchemaBuilder.struct().optional().field("inner", Schema.OPTIONAL_STRING_SCHEMA).build())
              .build())
    struct = Struct(schema).put("id", 1)
    for name, value in values.items():
        struct.put(name, value)
    return struct


def test_headers_are_copied_into_fields():
    headers = Headers().add("h1", "one", Schema.STRING_SCHEMA).add("h2", 2, Schema.INT32_SCHEMA)
    out = to_value(headers="h1,h2", fields="f1,f2", operation="copy").apply(record(product(), headers))
    assert (out.value.get("f1"), out.value.get("f2")) == ("one", 2)
    assert out.value_schema.field("f2").schema == Schema.INT32_SCHEMA and out.value_schema.name == "product"
    assert [h.key for h in out.headers] == ["h1", "h2"]


def test_move_removes_the_listed_headers():
    headers = (Headers().add("h1", "one", Schema.STRING_SCHEMA).add("other", "x")
               .add("h1", "again", Schema.STRING_SCHEMA))
    out = to_value(headers="h1", fields="f1", operation=" MOVE ").apply(record(product(), headers))
    assert out.value.get("f1") == "again"  # every occurrence is added in order; the last one stays
    assert [h.key for h in out.headers] == ["other"]


def test_existing_fields_get_their_defaults_and_null_fields_stay_unset():
    out = to_value(headers="h", fields="f", operation="copy").apply(
        record(product(), Headers().add("h", "v", Schema.STRING_SCHEMA)))
    assert out.value.get_without_default("note") == "none"
    assert out.value.get_without_default("after") is None


def test_nested_fields_into_an_existing_struct_and_a_new_one():
    headers = Headers().add("h1", "one", Schema.STRING_SCHEMA).add("h2", "two", Schema.STRING_SCHEMA)
    out = to_value(headers="h1,h2", fields="after.b,meta.c", operation="copy").apply(
        record(product(after=Struct(product().schema.field("after").schema).put("inner", "x")), headers))
    after = out.value.get("after")
    assert (after.get("inner"), after.get("b")) == ("x", "one")
    assert not out.value_schema.field("after").schema.is_optional  # rebuilt as a required struct
    meta = out.value.get("meta")
    assert meta.get("c") == "two" and out.value_schema.field("meta").schema.is_optional


def test_a_field_whose_name_and_a_dot_occur_in_a_nested_name_is_walked_into_as_in_debezium():
    # "meta.c" contains "a.": Debezium takes the string field "a" for a parent and fails on it
    schema = SchemaBuilder.struct().field("a", Schema.STRING_SCHEMA).build()
    with pytest.raises(DataException, match="Nested field"):
        to_value(headers="h", fields="meta.c", operation="copy").apply(
            record(Struct(schema).put("a", "x"), Headers().add("h", "v", Schema.STRING_SCHEMA)))


def test_a_nested_field_under_a_primitive_fails():
    with pytest.raises(DataException, match="Field 'id' is a primitive type"):
        to_value(headers="h", fields="id.x", operation="copy").apply(
            record(product(), Headers().add("h", "v", Schema.STRING_SCHEMA)))


def test_records_without_the_headers_and_tombstones_pass_and_maps_fail():
    transform = to_value(headers="h1", fields="f1", operation="copy")
    plain = record(product(), Headers().add("h2", "v", Schema.STRING_SCHEMA))
    assert transform.apply(plain) is plain
    tombstone = record(None, Headers().add("h1", "v"))
    assert transform.apply(tombstone) is tombstone
    with pytest.raises(DataException, match="Header field insertion"):
        transform.apply(record({"a": 1}, Headers().add("h1", "v")))


def test_a_header_without_schema_fails():
    with pytest.raises(SchemaBuilderException, match="fieldSchema for field f1 cannot be null"):
        to_value(headers="h1", fields="f1", operation="copy").apply(record(product(), Headers().add("h1", None)))


def test_the_schema_is_cached_per_value_schema_as_in_debezium():
    transform = to_value(headers="h1,h2", fields="f1,f2", operation="copy")
    transform.apply(record(product(), Headers().add("h1", "a", Schema.STRING_SCHEMA)))
    with pytest.raises(DataException, match="f2 is not a valid field name"):
        transform.apply(record(product(), Headers().add("h1", "a", Schema.STRING_SCHEMA)
                               .add("h2", "b", Schema.STRING_SCHEMA)))


def test_two_new_fields_of_one_name_in_a_new_struct_fail():
    entries = [NewEntry("m.a", Schema.STRING_SCHEMA, "x"), NewEntry("m.a", Schema.STRING_SCHEMA, "y")]
    with pytest.raises(SchemaBuilderException, match="duplication"):
        make_new_schema(product().schema, entries)


@pytest.mark.parametrize("props, key, message", [
    ({"headers": "h1", "operation": "copy"}, "fields", "Missing required"),
    ({"fields": "f1", "operation": "copy"}, "headers", "Missing required"),
    ({"headers": "h1", "fields": "f1", "operation": "invalidOp"}, "operation", "copy"),
    ({"headers": "h1,h2", "fields": ",f2", "operation": "copy"}, "fields", "Empty string element"),
    ({"headers": "header one", "fields": "f1", "operation": "copy"}, "headers", "containing space"),
    ({"headers": "h", "fields": "after. fieldOne", "operation": "copy"}, "fields", "containing space"),
    ({"headers": "", "fields": "f", "operation": "copy"}, "headers", "A value is required"),
])
def test_bad_values_name_the_key(props, key, message):
    with pytest.raises(ConfigValidationError) as error:
        to_value(**props)
    assert [issue.key for issue in error.value.issues] == [key] and message in str(error.value)


def test_lists_are_split_as_debezium_splits_them():
    to_value(headers="h1,", fields="f1", operation="copy")  # the trailing empty item is dropped
    with pytest.raises(ConfigException, match="Empty string element"):
        to_value(headers="h1, ", fields="f1", operation="copy")  # ... but not a blank one
    with pytest.raises(ConfigException, match="same number of elements"):
        to_value(headers="h1,h2", fields="f1", operation="copy")
    transform = to_value(headers=" h1 , h2 ", fields=" f1 ,f2 ", operation="copy")
    assert (transform.headers, transform.fields) == (["h1", "h2"], ["f1", "f2"])
