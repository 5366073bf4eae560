"""Schema-registry converters without a registry: wire format, configuration, secrets, error kinds,
JSON Schema rules, plugin names, and the error handler's rule for an unreachable registry."""

from __future__ import annotations

import pickle

import pytest

from connect_spark import plugins
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException, ConnectException, DataException, UnavailableException
from connect_spark.config.secrets import masked
from connect_spark.converters.avro import AvroConverter
from connect_spark.converters.json_schema import JsonSchemaConverter
from connect_spark.converters.json_schema_data import ENUM_PARAMETER, ONE_OF_NAME, JsonSchemaData
from connect_spark.converters.schema_registry import split_wire_format
from connect_spark.runtime.errors import ErrorHandler, ErrorHandlingConfig, RawRecord, Reporter, Stage, ToleranceType

RAW = RawRecord(topic="t", partition=0, offset=7, timestamp=0, timestamp_type=0, key=None, value=b"\x00\x00\x00\x00\x01",
                headers=())


def test_wire_format_header():
    schema_id, payload = split_wire_format(b"\x00\x00\x00\x01\x02rest")
    assert schema_id == 258 and bytes(payload) == b"rest"
    with pytest.raises(DataException, match="Unknown magic byte"):
        split_wire_format(b"\x01\x00\x00\x00\x01x")
    with pytest.raises(DataException, match="fewer than the 5-byte header"):
        split_wire_format(b"\x00\x00")


def test_converters_resolve_by_confluent_names_and_aliases():
    for name in ("io.confluent.connect.avro.AvroConverter", "AvroConverter"):
        assert plugins.resolve("converter", name) is AvroConverter
    for name in ("io.confluent.connect.json.JsonSchemaConverter", "JsonSchemaConverter"):
        assert plugins.resolve("converter", name) is JsonSchemaConverter
    assert plugins.kafka_class_name("converter", "AvroConverter") == "io.confluent.connect.avro.AvroConverter"
    with pytest.raises(ConfigException):  # as in Confluent, not a header converter
        plugins.resolve("header_converter", "AvroConverter")


def test_configuration_is_checked_and_the_user_info_is_a_secret():
    converter = AvroConverter()
    with pytest.raises(ConfigException, match="schema.registry.url"):
        converter.configure({}, is_key=False)
    with pytest.raises(ConfigException, match="http"):
        converter.configure({"schema.registry.url": "registry:8081"}, is_key=False)
    with pytest.raises(ConfigException, match="basic.auth.user.info"):
        converter.configure({"schema.registry.url": "http://a", "basic.auth.credentials.source": "USER_INFO"},
                            is_key=False)
    props = {"schema.registry.url": "http://a:1,http://b:2", "basic.auth.credentials.source": "USER_INFO",
             "basic.auth.user.info": "me:s3cret", "auto.register.schemas": "false", "connect.meta.data": "false"}
    converter.configure(props, is_key=False)
    assert converter.lookup.settings.urls == ["http://a:1", "http://b:2"]
    assert not converter.avro_data.connect_meta_data
    assert "s3cret" not in repr(converter.lookup.settings) and "s3cret" not in str(vars(converter.lookup.settings))
    shown = masked({f"value.converter.{k}": v for k, v in props.items()}, converter.config())
    assert "s3cret" not in str(shown)
    assert converter.lookup.settings.client_config()["basic.auth.user.info"] == "me:s3cret"
    # pickled to an executor: settings travel, connections and compiled readers do not
    copy = pickle.loads(pickle.dumps(converter))
    assert copy.lookup.settings.urls == ["http://a:1", "http://b:2"] and copy.lookup._client is None


def test_registry_secrets_are_secret_keys_and_url_credentials_are_hidden():
    from connect_spark.config.secrets import is_secret_key

    for key in ("value.converter.basic.auth.user.info", "key.converter.schema.registry.basic.auth.user.info",
                "value.converter.schema.registry.ssl.key.password"):
        assert is_secret_key(key, AvroConverter().config()), key
    converter = AvroConverter()
    converter.configure({"schema.registry.url": "http://me:s3cret@127.0.0.1:9/x"}, is_key=False)
    assert "s3cret" not in repr(converter.lookup.settings)
    with pytest.raises(UnavailableException) as info:
        converter.to_connect_data("t", b"\x00\x00\x00\x00\x01\x02")
    assert "s3cret" not in str(info.value) and "[hidden]@127.0.0.1" in str(info.value)


def test_unreachable_registry_is_unavailable_not_a_bad_record():
    converter = AvroConverter()
    converter.configure({"schema.registry.url": "http://127.0.0.1:9", "schema.registry.request.timeout.ms": "500"},
                        is_key=False)
    with pytest.raises(UnavailableException, match="could not be reached"):
        converter.to_connect_data("t", b"\x00\x00\x00\x00\x01\x02")
    with pytest.raises(DataException, match="magic byte"):  # checked before the registry is asked
        converter.to_connect_data("t", b"{}")
    assert converter.to_connect_data("t", None) == (None, None)


class _Collect(Reporter):
    def __init__(self) -> None:
        self.contexts = []

    def report(self, context):
        self.contexts.append(context)


def test_error_handler_fails_the_task_rather_than_skip_a_record_the_registry_could_not_decode():
    reporter = _Collect()
    sleeps = []
    handler = ErrorHandler(ErrorHandlingConfig(tolerance=ToleranceType.ALL, retry_timeout_ms=1000), "s", 0, [reporter],
                           sleep=sleeps.append)
    attempts = []

    def unreachable():
        attempts.append(1)
        raise UnavailableException("registry down")

    with pytest.raises(ConnectException, match="still could not reach a service"):
        handler.execute(Stage.VALUE_CONVERTER, "io.confluent.connect.avro.AvroConverter", unreachable, RAW)
    assert reporter.contexts == []  # nothing reported: no dead letter queue write
    assert len(attempts) >= 1
    # a registry that comes back within errors.retry.timeout: the record goes on
    calls = iter([UnavailableException("down"), "converted"])

    def recovers():
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert handler.execute(Stage.VALUE_CONVERTER, "x", recovers, RAW) == "converted"
    assert reporter.contexts == []


def _json_schema(properties, **extra):
    return {"type": "object", "title": "T", "properties": properties, **extra}


def test_json_schema_types_and_struct_fields():
    data = JsonSchemaData()
    schema = data.to_connect_schema(_json_schema({
        "i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"}, "b": {"type": "boolean"},
        "small": {"type": "integer", "connect.type": "int16"},
        "opt": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "inner": {"type": "object", "properties": {"x": {"type": "integer"}}},
        "m": {"type": "object", "connect.type": "map", "additionalProperties": {"type": "number"}},
    }, description="doc"), version=2)
    assert (schema.name, schema.doc, schema.version) == ("T", "doc", 2)
    types = {f.name: (f.schema.type.value, f.schema.is_optional) for f in schema.fields}
    assert types == {"i": ("int64", False), "n": ("float64", False), "s": ("string", False),
                     "b": ("boolean", False), "small": ("int16", False), "opt": ("string", True),
                     "tags": ("array", False), "color": ("string", False), "inner": ("struct", False),
                     "m": ("map", False)}
    assert dict(schema.field("color").schema.parameters) == {ENUM_PARAMETER: "", f"{ENUM_PARAMETER}.red": "red",
                                                             f"{ENUM_PARAMETER}.blue": "blue"}
    value = data.to_connect_data(schema, {"i": 3, "n": 1.5, "s": "x", "b": True, "small": 7, "opt": None,
                                          "tags": ["a"], "color": "red", "inner": {"x": 1}, "m": {"k": 2}})
    assert value.get("i") == 3 and value.get("small") == 7 and value.get("tags") == ["a"]
    assert value.get("inner") == Struct(schema.field("inner").schema).put("x", 1)
    assert value.get("m") == {"k": 2.0}
    with pytest.raises(DataException, match="Invalid null value for required"):
        data.to_connect_data(schema, {"i": None})


def test_json_schema_one_of_and_optional_for_nonrequired():
    data = JsonSchemaData()
    schema = data.to_connect_schema(_json_schema({"u": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}))
    union = schema.field("u").schema
    assert union.name == ONE_OF_NAME and [f.name for f in union.fields] == [f"{ONE_OF_NAME}.field.0",
                                                                          f"{ONE_OF_NAME}.field.1"]
    assert data.to_connect_data(schema, {"u": "x"}).get("u") == Struct(union).put(f"{ONE_OF_NAME}.field.1", "x")
    relaxed = JsonSchemaData(optional_for_nonrequired=True).to_connect_schema(
        _json_schema({"a": {"type": "integer"}, "b": {"type": "integer"}}, required=["a"]))
    assert [f.schema.is_optional for f in relaxed.fields] == [False, True]


def test_json_schema_logical_types_by_title_and_refs():
    data = JsonSchemaData()
    schema = data.to_connect_schema(_json_schema({
        "ts": {"type": "integer", "title": "org.apache.kafka.connect.data.Timestamp", "connect.type": "int64"},
        "amount": {"type": "number", "title": "org.apache.kafka.connect.data.Decimal", "connect.type": "bytes",
                   "connect.parameters": {"scale": "2"}},
        "addr": {"$ref": "#/definitions/Addr"},
    }, definitions={"Addr": {"type": "object", "properties": {"city": {"type": "string"}}}}))
    assert schema.field("ts").schema.name == "org.apache.kafka.connect.data.Timestamp"
    value = data.to_connect_data(schema, {"ts": 1000, "amount": 12.5, "addr": {"city": "x"}})
    assert value.get("ts").year == 1970 and str(value.get("amount")) == "12.5"
    assert value.get("addr").get("city") == "x"
    assert schema.field("addr").schema == SchemaBuilder.struct().field("city", Schema.STRING_SCHEMA).build()
