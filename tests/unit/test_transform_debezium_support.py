"""What Debezium's transforms share and how connect_spark finds them: the envelope, Debezium's way of reading
keys, ``add.fields`` entries, plugin names, validation before start, the dead letter queue's class name and
the per-record path."""

from __future__ import annotations

import logging

import pytest

from connect_spark import plugins
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import SinkRecord
from connect_spark.config.definition import ConfigValidationError
from connect_spark.transforms.chain import TransformationChain
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.envelope import Envelope, Operation
from connect_spark.transforms.debezium.field_reference import FieldReference
from connect_spark.transforms.debezium.settings import java_list, java_split, raw_string

ROW = SchemaBuilder.struct().name("t.Value").optional().field("id", Schema.INT32_SCHEMA).build()
SOURCE = SchemaBuilder.struct().name("src").field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field(
    "table", Schema.STRING_SCHEMA).build()
EVENTS = Envelope.define("t", ROW, SOURCE)
DEBEZIUM = {"ExtractNewRecordState", "ByLogicalTableRouter", "ExtractChangedRecordState", "HeaderToValue"}


# --- the envelope -----------------------------------------------------------------------------------------


def test_operation_codes():
    assert [o.value for o in Operation] == ["r", "c", "u", "d", "t", "m"]
    assert Operation.for_code("U") is Operation.UPDATE and Operation.for_code("x") is None
    assert Operation.for_code(None) is None


def test_an_envelope_is_recognized_by_its_schema_name_only():
    event = EVENTS.create(Struct(ROW).put("id", 1), Struct(SOURCE).put("table", "t"), 10)
    assert envelope.is_valid_envelope(SinkRecord("t", 0, None, None, EVENTS.schema, event, 0))
    assert envelope.is_valid_envelope(SinkRecord("t", 0, None, None, EVENTS.schema, None, 0))
    unnamed = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).build()
    for schema, value in ((unnamed, Struct(unnamed).put("op", "c")), (None, {"op": "c"}),
                          (SchemaBuilder.string().name("x.Envelope").build(), "s")):
        expected = schema is not None and schema.name == "x.Envelope"
        assert envelope.is_valid_envelope(SinkRecord("t", 0, None, None, schema, value, 0)) is expected


def test_built_events_look_like_debeziums():
    schema = EVENTS.schema
    assert (schema.name, schema.version) == ("t.Envelope", 2)
    assert [f.name for f in schema.fields] == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us",
                                               "ts_ns"]
    row, src = Struct(ROW).put("id", 1), Struct(SOURCE).put("table", "t")
    assert EVENTS.read(row, src).get("op") == "r" and EVENTS.read(row, src).get("ts_ms") is None
    update = EVENTS.update(None, row, src, 5)
    assert (update.get("op"), update.get("before"), update.get("ts_us"), update.get("ts_ns")) == ("u", None, 5000,
                                                                                                  5000000)
    assert EVENTS.delete(row, src).get("after") is None and EVENTS.truncate(src, 1).get("op") == "t"


# --- reading keys as Debezium does ------------------------------------------------------------------------


@pytest.mark.parametrize("text, separator, parts", [
    ("a,b", ",", ["a", "b"]), ("a,b,", ",", ["a", "b"]), (",a", ",", ["", "a"]), ("", ",", [""]),
    (",,", ",", []), ("a", ",", ["a"]), ("a, ", ",", ["a", " "]), ("op:", ":", ["op"]),
])
def test_java_split(text, separator, parts):
    assert java_split(text, separator) == parts


def test_java_list_and_raw_string():
    assert java_list(" a , b ,") == ["a", "b"] and java_list(None) == []
    assert raw_string({"k": " x "}, "k") == " x " and raw_string({}, "k", "d") == "d"
    assert raw_string({"k": ["a", "b"]}, "k") == "a,b" and raw_string({"k": False}, "k") == "false"


@pytest.mark.parametrize("spec, struct, field, new_field", [
    ("op", None, "op", "__op"), ("ts_ms", None, "ts_ms", "__ts_ms"), ("ts_ns", None, "ts_ns", "__ts_ns"),
    ("lsn", "source", "lsn", "__lsn"), ("id", "transaction", "id", "__id"),
    ("total_order", "transaction", "total_order", "__total_order"),
    ("updateDescription", "updateDescription", "updateDescription", "__updateDescription"),
    ("source.ts_ms", "source", "ts_ms", "__source_ts_ms"), ("source.ts_ms:EVENT_TS", "source", "ts_ms", "__EVENT_TS"),
    ("a.b.c", "a", "b", "__a_b"), ("op:", None, "op", "__op"), (":x", "source", "", "__x"),
    ("", "source", "", "__"),
])
def test_field_references(spec, struct, field, new_field):
    reference = FieldReference("__", spec)
    assert (reference.struct, reference.field, reference.new_field) == (struct, field, new_field)


@pytest.mark.parametrize("spec", ["a:b:c", ":", ".", "::"])
def test_field_references_that_debezium_cannot_read(spec):
    with pytest.raises(ConfigException, match="Unexpected field name"):
        FieldReference("__", spec, "add.headers")


def test_a_reference_into_a_field_that_is_no_struct_fails():
    event = EVENTS.create(Struct(ROW).put("id", 1), Struct(SOURCE).put("table", "t"))
    with pytest.raises(DataException, match="non-struct"):
        FieldReference("__", "op.x").schema_in(event.schema)


# --- plugin names, validation, the dead letter queue, the per-record path --------------------------------


def test_debeziums_class_names_and_short_aliases_resolve():
    for name in DEBEZIUM:
        by_alias = plugins.resolve("transform", name)
        assert plugins.resolve("transform", "io.debezium.transforms." + name) is by_alias
        assert by_alias.kafka_class_name == "io.debezium.transforms." + name
        assert plugins.kafka_class_name("transform", name) == "io.debezium.transforms." + name
    aliases = plugins.known_aliases("transform")
    assert DEBEZIUM <= set(aliases) and not any(a.startswith("io.debezium.") for a in aliases)


def test_the_dead_letter_queue_names_debeziums_class():
    transform = plugins.instantiate("transform", "ExtractNewRecordState")
    transform.configure({})
    chain = TransformationChain([(transform, None, False)])
    assert chain.executing_class(0) == "io.debezium.transforms.ExtractNewRecordState"


def test_validation_before_start_accepts_them_and_names_bad_keys_in_full(tmp_path):
    from connect_spark.config.validation import validate_configs
    from connect_spark.testing.harness import worker_properties

    worker = worker_properties("127.0.0.1:9", tmp_path)
    good = {"name": "ok", "connector.class": "FileStreamSink", "topics": "t", "transforms": "unwrap,route",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
            "transforms.route.type": "io.debezium.transforms.ByLogicalTableRouter",
            "transforms.route.topic.regex": "(.*)", "transforms.route.topic.replacement": "all"}
    validate_configs(worker, [good])
    bad = {**good, "transforms.unwrap.delete.tombstone.handling.mode": "keep"}
    del bad["transforms.route.topic.replacement"]
    with pytest.raises(ConfigValidationError) as error:
        validate_configs(worker, [bad])
    text = str(error.value)
    assert "transforms.unwrap.delete.tombstone.handling.mode" in text and "'keep'" in text
    assert "transforms.route.topic.replacement" in text


def test_a_chain_with_the_others_runs_per_record(tmp_path, caplog):
    from connect_spark.columnar.plan import compile_plan
    from connect_spark.columnar.transforms import NotVectorizable, transform_step
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.testing.harness import worker_properties

    for name in DEBEZIUM - {"ExtractNewRecordState"}:  # which has a column form (tests/integration)
        with pytest.raises(NotVectorizable, match="this Debezium transform runs per record"):
            transform_step("t", plugins.instantiate("transform", name), {}, None, {}, False)
    worker = WorkerConfig(worker_properties("127.0.0.1:9", tmp_path))
    connector = ConnectorConfig({
        "name": "cdc", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector", "topics": "t",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms": "unwrap,route", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.route.type": "io.debezium.transforms.ByLogicalTableRouter",
        "transforms.route.topic.regex": "(.*)", "transforms.route.topic.replacement": "all"})
    with caplog.at_level(logging.INFO, logger="connect_spark.columnar.plan"):
        assert compile_plan(connector, worker) is None
    assert "transform route (ByLogicalTableRouter): this Debezium transform runs per record" in caplog.text


@pytest.mark.parametrize("name, props", [
    ("ExtractNewRecordState", {"add.fields": "op", "delete.tombstone.handling.mode": "rewrite"}),
    ("ByLogicalTableRouter", {"topic.regex": "(.*)", "topic.replacement": "all", "key.field.regex": "(.)(.*)",
                              "key.field.replacement": "$2"}),
    ("HeaderToValue", {"headers": "h", "fields": "f", "operation": "move"}),
    ("ExtractChangedRecordState", {"header.changed.name": "c"}),
])
def test_they_pickle_to_executors_configured(name, props):
    import pickle

    transform = plugins.instantiate("transform", name)
    transform.configure(props)
    row, src = Struct(ROW).put("id", 1), Struct(SOURCE).put("table", "t")
    key_schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    record = SinkRecord("t", 0, key_schema, Struct(key_schema).put("id", 1), EVENTS.schema,
                        EVENTS.update(row, row, src, 1), 0)
    record.headers.add("h", "v", Schema.STRING_SCHEMA)
    copy = pickle.loads(pickle.dumps(transform))
    expected, got = transform.apply(record), copy.apply(record)
    assert (got.topic, got.key, got.value, list(got.headers)) == (expected.topic, expected.key, expected.value,
                                                                   list(expected.headers))
