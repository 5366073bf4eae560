"""JsonConverter: JSON with or without an embedded schema (Kafka's ``JsonConverter``).

With ``schemas.enable=true`` (the default) every message is an envelope
``{"schema": <schema>, "payload": <value>}`` and nothing else; the schema JSON is Kafka's
(``{"type": "struct", "fields": [{"field": "a", "type": "int32", "optional": false}, ...]}``,
logical types by ``name``, Decimal ``scale`` in ``parameters``). With ``schemas.enable=false`` the
JSON is the value itself and the schema is ``None``: integral numbers become INT64 values, other
numbers FLOAT64, objects maps and arrays lists.

JSON is parsed with the standard library (numbers with a fraction or exponent are read as
``decimal.Decimal`` first, so a Decimal in ``NUMERIC`` format keeps every digit); what it refuses but
Kafka's reader accepts (leading zeros, anything after the first value) is read as Kafka reads it. JSON
without schemas is parsed with ``orjson`` when that package is installed, with the same result
(``read_schemaless`` in :mod:`connect_spark.converters.json_fast`). It is written with ``orjson`` when
installed and the standard library otherwise.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import logging
import math
from typing import Any, Callable, Mapping

from connect_spark.api import Converter, DataException, HeaderConverter, SchemaAndValue
from connect_spark.api.data import (
    ConnectSchema,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect_spark.api.data.java_semantics import (
    decimal_long_value,
    double_to_int,
    double_to_long,
    float32_shortest,
    java_trim,
    to_float32,
    wrap_int,
)
from connect_spark.config.definition import ConfigDef, Importance, ValidString
from connect_spark.config.definition import Type as ConfigType
from connect_spark.converters.base import converter_config_def, converter_type
from connect_spark.converters.jackson_reading import read_leniently
from connect_spark.converters.json_fast import NOT_READ, EnvelopeCache, compile_payload_converter, read_schemaless
from connect_spark.lru_cache import LruCache

try:  # optional, faster serialization
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

__all__ = ["JsonConverter"]

log = logging.getLogger(__name__)

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

ENVELOPE_SCHEMA = "schema"
ENVELOPE_PAYLOAD = "payload"
_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields.'
    " If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration."
)

_TYPE_NAMES = {
    Type.BOOLEAN: "boolean",
    Type.INT8: "int8",
    Type.INT16: "int16",
    Type.INT32: "int32",
    Type.INT64: "int64",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BYTES: "bytes",
    Type.STRING: "string",
    Type.ARRAY: "array",
    Type.MAP: "map",
    Type.STRUCT: "struct",
}
_TYPES_BY_NAME = {name: type_ for type_, name in _TYPE_NAMES.items()}

_MISSING = object()


def _node_type(value: Any) -> str:
    """Jackson's ``JsonNodeType`` name of a parsed JSON value (used in error messages)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "OBJECT"
    return "MISSING" if value is _MISSING else "POJO"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


# --- Jackson's lenient accessors (JsonNode.intValue() and friends) ------------------------------


def _int_value(value: Any) -> int:
    if isinstance(value, bool) or not _is_number(value):
        return 0
    if isinstance(value, int):
        return wrap_int(value, 32)
    if isinstance(value, float):
        return double_to_int(value)
    return wrap_int(int(value), 32) if value.is_finite() else 0


def _long_value(value: Any) -> int:
    if isinstance(value, bool) or not _is_number(value):
        return 0
    if isinstance(value, int):
        return wrap_int(value, 64)
    if isinstance(value, float):
        return double_to_long(value)
    return decimal_long_value(value) if value.is_finite() else 0


def _double_value(value: Any) -> float:
    # Jackson reads JSON numbers as BigDecimal, which has no negative zero: "-0.0" becomes 0.0 (+ 0.0 does that).
    return float(value) + 0.0 if _is_number(value) else 0.0


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}': enable JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS to allow")


_DECODER = json.JSONDecoder(parse_float=decimal.Decimal, parse_constant=_reject_constant)


def _loads(data: bytes) -> Any:
    """The JSON value of ``data``: strictly parsed, or as Kafka's ``JsonDeserializer`` reads what a strict parse
    refuses (leading zeros, anything after the first value: :mod:`connect_spark.converters.jackson_reading`).

    Raises:
        ValueError: neither reads ``data`` (the strict parse's error).
        RecursionError: the value is nested too deeply.
    """
    try:
        return json.loads(data, parse_float=decimal.Decimal, parse_constant=_reject_constant)
    except ValueError as strict:
        try:
            return read_leniently(data, _DECODER)
        except (ValueError, RecursionError):
            raise strict from None

#: At most this many envelope openings are remembered by the fast path (or ``schemas.cache.size`` if smaller).
_ENVELOPE_CACHE_SIZE = 32


class _NeedsWriter(Exception):
    """Raised from json.dumps' default hook when the tree holds a value it cannot write (a Decimal)."""


def _no_default(value: Any) -> Any:
    raise _NeedsWriter()


def _dumps(node: Any) -> bytes:
    if _orjson is not None:
        try:
            return _orjson.dumps(node, default=_no_default)
        except (_NeedsWriter, TypeError):
            pass
    else:
        try:
            return json.dumps(node, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                              default=_no_default).encode("utf-8")
        except _NeedsWriter:
            pass
    out: list[str] = []
    _write(node, out)
    return "".join(out).encode("utf-8")


def _write(node: Any, out: list[str]) -> None:
    """A small JSON writer for trees holding ``decimal.Decimal`` numbers (written as plain numbers)."""
    if node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, str):
        out.append(json.dumps(node, ensure_ascii=False))
    elif isinstance(node, decimal.Decimal):
        out.append(str(node))
    elif isinstance(node, (int, float)):
        out.append(json.dumps(node))
    elif isinstance(node, dict):
        out.append("{")
        for i, (key, item) in enumerate(node.items()):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write(item, out)
        out.append("}")
    else:
        out.append("[")
        for i, item in enumerate(node):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")


def _float_node(value: float) -> Any:
    """Jackson writes non-finite numbers as strings ("NaN", "Infinity", "-Infinity")."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _schema_key(node: Any) -> str:
    """A cache key for a parsed JSON schema: its canonical JSON text (``true`` and ``1`` stay different)."""
    return json.dumps(node, sort_keys=True, separators=(",", ":"), default=_decimal_marker)


def _decimal_marker(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    raise TypeError(f"unexpected {type(value).__name__} in a parsed JSON schema")


class JsonConverter(Converter, HeaderConverter):
    """Kafka Connect's JSON format, with or without the schema envelope (see the module docstring).

    Config (as Kafka's ``JsonConverterConfig``):
        ``schemas.enable`` (true): read and write the ``{"schema", "payload"}`` envelope.
        ``schemas.cache.size`` (1000): how many schemas are cached in each direction.
        ``decimal.format`` (``BASE64``): write Decimals as base64 bytes or as ``NUMERIC`` JSON numbers
            (both are read).
        ``replace.null.with.default`` (true): a null field with a default value becomes the default.

    Attributes:
        schemas_enabled, cache_size, decimal_format, replace_null_with_default: the parsed settings,
            read by the vectorized path.
    """

    kafka_class_name = "org.apache.kafka.connect.json.JsonConverter"

    def __init__(self) -> None:
        self.schemas_enabled = True
        self.cache_size = 1000
        self.decimal_format = "BASE64"
        self.replace_null_with_default = True
        self._from_connect_schemas = LruCache(self.cache_size)
        self._to_connect_schemas = LruCache(self.cache_size)
        self._envelopes = EnvelopeCache(min(self.cache_size, _ENVELOPE_CACHE_SIZE), _reject_constant)

    def config(self) -> ConfigDef:
        return (
            converter_config_def()
            .define(SCHEMAS_ENABLE_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.HIGH, group="Schemas",
                    doc="Include schemas within each of the serialized values and keys.")
            .define(SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT, 1000, importance=Importance.HIGH, group="Schemas",
                    doc="The maximum number of schemas that can be cached in this converter instance.")
            .define(DECIMAL_FORMAT_CONFIG, ConfigType.STRING, "BASE64",
                    validator=ValidString.in_("BASE64", "NUMERIC", case_insensitive=True),
                    importance=Importance.LOW, group="Serialization",
                    doc="Controls which format this converter will serialize decimals in. This value is case "
                        "insensitive and can be either 'BASE64' (default) or 'NUMERIC'")
            .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.LOW,
                    group="Serialization",
                    doc="Whether to replace fields that have a default value and that are null to the default "
                        "value. When set to true, the default value is used, otherwise null is used.")
        )

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Parse the settings; ``is_key`` ``None`` means use as a header converter."""
        values = self.config().parse(converter_type(configs, is_key))
        self.schemas_enabled = values[SCHEMAS_ENABLE_CONFIG]
        self.cache_size = values[SCHEMAS_CACHE_SIZE_CONFIG]
        self.decimal_format = values[DECIMAL_FORMAT_CONFIG].upper()
        self.replace_null_with_default = values[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._from_connect_schemas = LruCache(self.cache_size)
        self._to_connect_schemas = LruCache(self.cache_size)
        self._envelopes = EnvelopeCache(min(self.cache_size, _ENVELOPE_CACHE_SIZE), _reject_constant)

    # -- bytes → Connect --

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """Parse JSON bytes; ``None`` (a tombstone) gives ``SchemaAndValue(None, None)``, and so do empty bytes
        when schemas are disabled (with schemas enabled they hold no envelope: an error, as in Kafka).

        With schemas enabled, an envelope opening with the same bytes as one read before (same schema)
        takes the fast path of :mod:`connect_spark.converters.json_fast`, with the same result.

        Raises:
            DataException: for invalid JSON, a missing envelope, or a payload that does not match
                its schema.
        """
        if value is None or (len(value) == 0 and not self.schemas_enabled):
            return SchemaAndValue(None, None)
        if type(value) is bytes:
            if self.schemas_enabled:
                fast = self._envelopes.convert(value)
                if fast is not None:
                    return fast
            else:
                plain = read_schemaless(value)
                if plain is not NOT_READ:
                    return SchemaAndValue(None, plain)
        try:
            node = _loads(bytes(value))
        except (ValueError, RecursionError) as e:
            raise DataException(
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {e}") from e
        if self.schemas_enabled:
            if not (isinstance(node, dict) and len(node) == 2 and ENVELOPE_SCHEMA in node and ENVELOPE_PAYLOAD in node):
                raise DataException(_ENVELOPE_ERROR)
            schema = self.as_connect_schema(node[ENVELOPE_SCHEMA])
            result = SchemaAndValue(schema, self._to_connect(schema, node[ENVELOPE_PAYLOAD]))
            if type(value) is bytes:
                self._register_envelope(value, schema)
            return result
        return SchemaAndValue(None, self._to_connect(None, node))

    def _register_envelope(self, data: bytes, schema: Schema | None) -> None:
        """Let the fast path read later envelopes opening like ``data`` (just read as ``schema``)."""
        def make_to_value() -> Callable[[Any], Any]:
            if schema is None:
                return lambda payload: self._to_connect(None, payload)
            return compile_payload_converter(schema, self.to_connect_value, self.replace_null_with_default)

        self._envelopes.register(data, schema, make_to_value)

    def as_connect_schema(self, node: Any) -> Schema | None:
        """The Connect schema described by a parsed JSON schema (``None`` for JSON null)."""
        if node is None:
            return None
        key = _schema_key(node)
        cached = self._to_connect_schemas.get(key)
        if cached is not None:
            return cached
        schema = self._build_connect_schema(node)
        self._to_connect_schemas.put(key, schema)
        return schema

    def _build_connect_schema(self, node: Any) -> Schema:
        type_name = node.get("type") if isinstance(node, dict) else None
        if not isinstance(type_name, str):
            raise DataException("Schema must contain 'type' field")
        type_ = _TYPES_BY_NAME.get(type_name)
        if type_ is None:
            raise DataException(f"Unknown schema type: {type_name}")
        if type_ is Type.ARRAY:
            items = node.get("items")
            if items is None:
                raise DataException("Array schema did not specify the element type")
            builder = SchemaBuilder.array(self.as_connect_schema(items))  # type: ignore[arg-type]
        elif type_ is Type.MAP:
            if "keys" not in node:
                raise DataException("Map schema did not specify the key type")
            if "values" not in node:
                raise DataException("Map schema did not specify the value type")
            builder = SchemaBuilder.map(self.as_connect_schema(node["keys"]),  # type: ignore[arg-type]
                                        self.as_connect_schema(node["values"]))  # type: ignore[arg-type]
        elif type_ is Type.STRUCT:
            builder = SchemaBuilder.struct()
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise DataException('Struct schema\'s "fields" argument is not an array.')
            for field in fields:
                name = field.get("field") if isinstance(field, dict) else None
                if not isinstance(name, str):
                    raise DataException("Struct schema's field name not specified properly")
                builder.field(name, self.as_connect_schema(field))  # type: ignore[arg-type]
        else:
            builder = SchemaBuilder(type_)

        if node.get("optional") is True:
            builder.optional()
        else:
            builder.required()
        name = node.get("name")
        if isinstance(name, str):
            builder.name(name)
        version = node.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            builder.version(wrap_int(version, 32))
        doc = node.get("doc")
        if isinstance(doc, str):
            builder.doc(doc)
        parameters = node.get("parameters")
        if isinstance(parameters, dict):
            for key, value in parameters.items():
                if not isinstance(value, str):
                    raise DataException("Schema parameters must have string values.")
                builder.parameter(key, value)
        if "default" in node:
            builder.default_value(self._to_connect(builder.build(), node["default"]))
        return builder.build()

    def to_connect_value(self, schema: Schema | None, node: Any) -> Any:
        """The Connect value of a parsed JSON value (a payload) for ``schema``, the general way.

        What :meth:`to_connect_data` does with an envelope's payload; the fast path's compiled converters
        fall back to it and must agree with it. Values inside structs are validated (``Struct.put``); the
        top-level value is not.

        Raises:
            DataException: when the value does not match the schema.
        """
        return self._to_connect(schema, node)

    def _to_connect(self, schema: Schema | None, value: Any) -> Any:
        if schema is None:
            if value is None or value is _MISSING:
                return None
            if isinstance(value, bool):
                return value
            if isinstance(value, int):
                return wrap_int(value, 64)
            if isinstance(value, (float, decimal.Decimal)):
                return _double_value(value)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return [self._to_connect(None, v) for v in value]
            if isinstance(value, dict):
                return {k: self._to_connect(None, v) for k, v in value.items()}
            raise DataException(f"Unknown schema type: {_node_type(value)}")
        if value is None or value is _MISSING:
            if schema.default_value is not None and self.replace_null_with_default:
                return schema.default_value
            if schema.is_optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type} field")
        name = schema.name
        if name is not None:
            logical = _LOGICAL_TO_CONNECT.get(name)
            if logical is not None:
                return logical(schema, value)
        return _TO_CONNECT[schema.type](self, schema, value)

    def _array_to_connect(self, schema: Schema, value: Any) -> list[Any]:
        element_schema = schema.value_schema
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        return [self._to_connect(element_schema, item) for item in items]

    def _map_to_connect(self, schema: Schema, value: Any) -> dict[Any, Any]:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        if key_schema is None or key_schema.type is Type.STRING:
            if not isinstance(value, dict):
                raise DataException(
                    f"Maps with string fields should be encoded as JSON objects, but found {_node_type(value)}")
            return {k: self._to_connect(value_schema, v) for k, v in value.items()}
        if not isinstance(value, list):
            raise DataException(
                f"Maps with non-string fields should be encoded as JSON array of tuples, but found {_node_type(value)}")
        result: dict[Any, Any] = {}
        for entry in value:
            if not isinstance(entry, list):
                raise DataException(f"Found invalid map entry instead of array tuple: {_node_type(entry)}")
            if len(entry) != 2:
                raise DataException(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
            key = self._to_connect(key_schema, entry[0])
            try:
                result[key] = self._to_connect(value_schema, entry[1])
            except TypeError as e:
                raise DataException(f"Map keys of type {key_schema.type} cannot be used in Python: {e}") from e
        return result

    def _struct_to_connect(self, schema: Schema, value: Any) -> Struct:
        if not isinstance(value, dict):
            raise DataException(f"Structs should be encoded as JSON objects, but found {_node_type(value)}")
        result = Struct(schema)
        for field in schema.fields:
            result.put(field, self._to_connect(field.schema, value.get(field.name, _MISSING)))
        return result

    # -- Connect → bytes --

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any, headers: Any = None) -> bytes | None:
        """Write JSON (in the envelope when schemas are enabled); ``None`` when schema and value are both ``None``.

        Raises:
            DataException: when the value does not match its schema.
        """
        if schema is None and value is None:
            return None
        if self.schemas_enabled:
            node = {ENVELOPE_SCHEMA: self.as_json_schema(schema), ENVELOPE_PAYLOAD: self.to_json(schema, value)}
        else:
            node = self.to_json(schema, value)
        return _dumps(node)

    def as_json_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        """The JSON form of a Connect schema, as a dict (do not modify it: it is cached)."""
        if schema is None:
            return None
        cached = self._from_connect_schemas.get(schema)
        if cached is not None:
            return cached
        node: dict[str, Any] = {"type": _TYPE_NAMES[schema.type]}
        if schema.type is Type.ARRAY:
            node["items"] = self.as_json_schema(schema.value_schema)
        elif schema.type is Type.MAP:
            node["keys"] = self.as_json_schema(schema.key_schema)
            node["values"] = self.as_json_schema(schema.value_schema)
        elif schema.type is Type.STRUCT:
            node["fields"] = [{**(self.as_json_schema(f.schema) or {}), "field": f.name} for f in schema.fields]
        node["optional"] = schema.is_optional
        if schema.name is not None:
            node["name"] = schema.name
        if schema.version is not None:
            node["version"] = schema.version
        if schema.doc is not None:
            node["doc"] = schema.doc
        if schema.parameters is not None:
            node["parameters"] = dict(schema.parameters)
        if schema.default_value is not None:
            node["default"] = self.to_json(schema, schema.default_value)
        self._from_connect_schemas.put(schema, node)
        return node

    def to_json(self, schema: Schema | None, value: Any) -> Any:
        """The JSON tree (dicts, lists, numbers, strings) of a Connect value."""
        if value is None:
            if schema is None:
                return None
            if schema.default_value is not None and self.replace_null_with_default:
                return self.to_json(schema, schema.default_value)
            if schema.is_optional:
                return None
            raise DataException("Conversion error: null value for field that is required and has no default value")
        if schema is not None and schema.name is not None:
            logical = _LOGICAL_TO_JSON.get(schema.name)
            if logical is not None:
                return logical(self, schema, value)
        schema_type = schema.type if schema is not None else ConnectSchema.schema_type(value)
        if schema_type is None:
            raise DataException(f"class {type(value).__name__} does not have corresponding schema type.")
        writer = _TO_JSON[schema_type]
        result = writer(self, schema, value)
        if result is _MISMATCH:
            type_text = str(schema.type) if schema is not None else "unknown schema"
            raise DataException(f"Invalid type for {type_text}: class {type(value).__name__}")
        return result

    def _array_to_json(self, schema: Schema | None, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return _MISMATCH
        element_schema = schema.value_schema if schema is not None else None
        return [self.to_json(element_schema, item) for item in value]

    def _map_to_json(self, schema: Schema | None, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return _MISMATCH
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        if schema is not None:
            object_mode = key_schema is not None and key_schema.type is Type.STRING
        else:
            object_mode = all(isinstance(k, str) for k in value)
        if object_mode:
            return {_as_text(self.to_json(key_schema, k)): self.to_json(value_schema, v) for k, v in value.items()}
        return [[self.to_json(key_schema, k), self.to_json(value_schema, v)] for k, v in value.items()]

    def _struct_to_json(self, schema: Schema | None, value: Any) -> Any:
        if not isinstance(value, Struct) or value.schema != schema:
            raise DataException("Mismatching schema.")
        return {f.name: self.to_json(f.schema, value.get_without_default(f)) for f in value.schema.fields}

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None, value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)


_MISMATCH = object()


def _as_text(node: Any) -> str:
    if isinstance(node, str):
        return node
    if node is True or node is False:
        return "true" if node else "false"
    return "null" if node is None else str(node)


def _int_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else _MISMATCH


def _float32_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    if not _is_number(value) or isinstance(value, decimal.Decimal):
        return _MISMATCH
    return _float_node(float32_shortest(float(value)))


def _float64_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    if not _is_number(value) or isinstance(value, decimal.Decimal):
        return _MISMATCH
    return _float_node(float(value))


def _boolean_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    return value if isinstance(value, bool) else _MISMATCH


def _string_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    return value if isinstance(value, str) else _MISMATCH


def _bytes_to_json(converter: JsonConverter, schema: Schema | None, value: Any) -> Any:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise DataException(f"Invalid type for bytes type: class {type(value).__name__}")
    return base64.b64encode(bytes(value)).decode("ascii")


_TO_JSON: dict[Type, Callable[[JsonConverter, Schema | None, Any], Any]] = {
    Type.INT8: _int_to_json,
    Type.INT16: _int_to_json,
    Type.INT32: _int_to_json,
    Type.INT64: _int_to_json,
    Type.FLOAT32: _float32_to_json,
    Type.FLOAT64: _float64_to_json,
    Type.BOOLEAN: _boolean_to_json,
    Type.STRING: _string_to_json,
    Type.BYTES: _bytes_to_json,
    Type.ARRAY: JsonConverter._array_to_json,
    Type.MAP: JsonConverter._map_to_json,
    Type.STRUCT: JsonConverter._struct_to_json,
}


def _decimal_to_json(converter: JsonConverter, schema: Schema, value: Any) -> Any:
    if not isinstance(value, decimal.Decimal):
        raise DataException(f"Invalid type for Decimal, expected BigDecimal but was class {type(value).__name__}")
    if converter.decimal_format == "NUMERIC":
        if not value.is_finite():
            raise DataException(f"Decimal value must be finite, got {value}")
        return value
    return base64.b64encode(Decimal.from_logical(schema, value)).decode("ascii")


def _date_to_json(converter: JsonConverter, schema: Schema, value: Any) -> Any:
    if not isinstance(value, datetime.date):
        raise DataException(f"Invalid type for Date, expected Date but was class {type(value).__name__}")
    return Date.from_logical(schema, value)


def _time_to_json(converter: JsonConverter, schema: Schema, value: Any) -> Any:
    if not isinstance(value, (datetime.time, datetime.datetime)):
        raise DataException(f"Invalid type for Time, expected Date but was class {type(value).__name__}")
    return Time.from_logical(schema, value)


def _timestamp_to_json(converter: JsonConverter, schema: Schema, value: Any) -> Any:
    if not isinstance(value, datetime.datetime):
        raise DataException(f"Invalid type for Timestamp, expected Date but was class {type(value).__name__}")
    return Timestamp.from_logical(schema, value)


_LOGICAL_TO_JSON: dict[str, Callable[[JsonConverter, Schema, Any], Any]] = {
    Decimal.LOGICAL_NAME: _decimal_to_json,
    Date.LOGICAL_NAME: _date_to_json,
    Time.LOGICAL_NAME: _time_to_json,
    Timestamp.LOGICAL_NAME: _timestamp_to_json,
}


def _base64_bytes(value: str) -> bytes:
    return base64.b64decode(java_trim(value), validate=True)


def _bytes_to_connect(converter: JsonConverter, schema: Schema, value: Any) -> Any:
    if not isinstance(value, str):
        return None  # Jackson's binaryValue() of a non-text node
    try:
        return _base64_bytes(value)
    except (binascii.Error, ValueError) as e:
        raise DataException("Invalid bytes field") from e


_TO_CONNECT: dict[Type, Callable[[JsonConverter, Schema, Any], Any]] = {
    Type.BOOLEAN: lambda c, s, v: v if isinstance(v, bool) else False,
    Type.INT8: lambda c, s, v: wrap_int(_int_value(v), 8),
    Type.INT16: lambda c, s, v: wrap_int(_int_value(v), 16),
    Type.INT32: lambda c, s, v: _int_value(v),
    Type.INT64: lambda c, s, v: _long_value(v),
    Type.FLOAT32: lambda c, s, v: to_float32(_double_value(v)),
    Type.FLOAT64: lambda c, s, v: _double_value(v),
    Type.STRING: lambda c, s, v: v if isinstance(v, str) else None,
    Type.BYTES: _bytes_to_connect,
    Type.ARRAY: JsonConverter._array_to_connect,
    Type.MAP: JsonConverter._map_to_connect,
    Type.STRUCT: JsonConverter._struct_to_connect,
}


def _decimal_to_connect(schema: Schema, value: Any) -> decimal.Decimal:
    if _is_number(value):
        if isinstance(value, float):
            return decimal.Decimal(repr(value))
        return value if isinstance(value, decimal.Decimal) else decimal.Decimal(value)
    if isinstance(value, str):
        try:
            return Decimal.to_logical(schema, _base64_bytes(value))
        except Exception as e:
            raise DataException("Invalid bytes for Decimal field") from e
    raise DataException(
        f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {_node_type(value)}")


def _is_int32(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31


def _date_to_connect(schema: Schema, value: Any) -> datetime.date:
    if not _is_int32(value):
        raise DataException(
            f"Invalid type for Date, underlying representation should be integer but was {_node_type(value)}")
    return Date.to_logical(schema, value)


def _time_to_connect(schema: Schema, value: Any) -> datetime.time:
    if not _is_int32(value):
        raise DataException(
            f"Invalid type for Time, underlying representation should be integer but was {_node_type(value)}")
    return Time.to_logical(schema, value)


def _timestamp_to_connect(schema: Schema, value: Any) -> datetime.datetime:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DataException(
            f"Invalid type for Timestamp, underlying representation should be integral but was {_node_type(value)}")
    return Timestamp.to_logical(schema, wrap_int(value, 64))


_LOGICAL_TO_CONNECT: dict[str, Callable[[Schema, Any], Any]] = {
    Decimal.LOGICAL_NAME: _decimal_to_connect,
    Date.LOGICAL_NAME: _date_to_connect,
    Time.LOGICAL_NAME: _time_to_connect,
    Timestamp.LOGICAL_NAME: _timestamp_to_connect,
}
