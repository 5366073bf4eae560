"""JSON Schema → Connect data, by the rules of Confluent's ``JsonSchemaData`` (``io.confluent.connect.json``).

Called by :class:`~connect_spark.converters.json_schema.JsonSchemaConverter`: :meth:`JsonSchemaData.to_connect_schema`
once per writer schema, :meth:`JsonSchemaData.to_connect_data` per record.

The rules, checked against Confluent's ``JsonSchemaData.toConnectSchema`` / ``toConnectData``:

* ``boolean`` → BOOLEAN; ``integer`` → INT64; ``number`` → FLOAT64; ``string`` → STRING; a
  ``connect.type`` property (int8, int16, int32, int64, float32, float64, bytes, map) overrides;
* ``enum`` → STRING with parameters ``io.confluent.connect.json.Enum`` (empty) and
  ``io.confluent.connect.json.Enum.<symbol>``;
* ``oneOf``/``anyOf`` (and a ``type`` list) of null and one schema → that schema, optional; any other
  → a STRUCT named ``io.confluent.connect.json.OneOf`` with fields
  ``io.confluent.connect.json.OneOf.field.<i>`` (optional when null is a member); the value is matched to
  the first member whose JSON type fits (for objects, the member sharing most property names);
* ``array`` → ARRAY of its ``items`` (with ``connect.type=map`` and object items: a MAP of their
  ``key``/``value``); ``object`` with ``connect.type=map`` → MAP of STRING to
  ``additionalProperties``; any other ``object`` → STRUCT of its ``properties`` in ``connect.index``
  order, else declaration order; properties are required in the Connect schema
  (``use.optional.for.nonrequired`` makes the ones not in ``required`` optional);
* ``title`` → schema name (so Connect logical types come back by name), ``description`` → doc,
  ``connect.version`` or the registry's version → version, ``connect.parameters`` → parameters,
  ``default`` → default value; ``$ref`` to ``#/definitions/..`` or ``#/$defs/..`` is followed;
* values: a property missing from the object is left unset; a JSON null gives the default, or null when
  optional, else a DataException; numbers are read leniently (Jackson's ``intValue``...), strings of
  BYTES are base64.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import json
from typing import Any

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect_spark.api.data.java_semantics import double_to_int, double_to_long, to_float32, wrap_int
from connect_spark.api.errors import DataException

__all__ = ["JsonSchemaData", "ONE_OF_NAME", "ENUM_PARAMETER"]

NAMESPACE = "io.confluent.connect.json"
ONE_OF_NAME = NAMESPACE + ".OneOf"
ENUM_PARAMETER = NAMESPACE + ".Enum"

_CONNECT_TYPES = {
    "int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16, "int32": SchemaBuilder.int32,
    "int64": SchemaBuilder.int64, "float32": SchemaBuilder.float32, "float64": SchemaBuilder.float64,
    "bytes": SchemaBuilder.bytes,
}


class JsonSchemaData:
    """Builds Connect schemas from JSON Schemas and converts parsed JSON values, as Confluent's ``JsonSchemaData``.

    Args:
        optional_for_nonrequired: ``use.optional.for.nonrequired``: properties not listed in ``required``
            become optional fields.
    """

    def __init__(self, optional_for_nonrequired: bool = False) -> None:
        self.optional_for_nonrequired = optional_for_nonrequired

    # -- schemas -------------------------------------------------------------------------------

    def to_connect_schema(self, json_schema: Any, version: int | None = None) -> Schema:
        """The Connect schema of a writer schema (parsed JSON or its text).

        Raises:
            DataException: a schema JsonSchemaData cannot express (no items type, an unsupported allOf...).
        """
        if isinstance(json_schema, str):
            try:
                json_schema = json.loads(json_schema)
            except ValueError as e:
                raise DataException(f"The writer schema is not valid JSON: {e}") from e
        return self._schema(json_schema, json_schema, version, False, set())

    def _schema(self, node: Any, root: Any, version: int | None, force_optional: bool, refs: set[str]) -> Schema:
        if node is True or node == {}:
            raise DataException("Unsupported schema type: an empty schema (any value) has no Connect type")
        if not isinstance(node, dict):
            raise DataException(f"Unsupported JSON schema node: {node!r}")
        if "$ref" in node:
            ref = node["$ref"]
            if ref in refs:
                raise DataException(f"Recursive JSON schema reference {ref} cannot be expressed as a Connect schema")
            return self._schema(_resolve(root, ref), root, version, force_optional, refs | {ref})
        json_type = node.get("type")
        connect_type = node.get("connect.type")
        if isinstance(json_type, list):
            members = [{**{k: v for k, v in node.items() if k != "type"}, "type": t} for t in json_type]
            return self._combined({"oneOf": members}, "oneOf", root, version, force_optional, refs)
        for keyword in ("oneOf", "anyOf"):
            if keyword in node:
                return self._combined(node, keyword, root, version, force_optional, refs)
        if "allOf" in node:
            return self._all_of(node, root, version, force_optional, refs)
        if "enum" in node:
            builder = SchemaBuilder.string().parameter(ENUM_PARAMETER, "")
            for symbol in node["enum"]:
                text = "<NULL>" if symbol is None else symbol if isinstance(symbol, str) else json.dumps(symbol)
                builder.parameter(f"{ENUM_PARAMETER}.{text}", text)
        elif json_type == "boolean":
            builder = SchemaBuilder.bool()
        elif json_type in ("integer", "number"):
            if connect_type is None:
                builder = SchemaBuilder.int64() if json_type == "integer" else SchemaBuilder.float64()
            elif connect_type in _CONNECT_TYPES:
                builder = _CONNECT_TYPES[connect_type]()
            else:
                raise DataException(f"Unsupported type {connect_type}")
        elif json_type == "string":
            builder = SchemaBuilder.bytes() if connect_type == "bytes" else SchemaBuilder.string()
        elif json_type == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                raise DataException("Array schema did not specify the items type")
            if connect_type == "map" and _is_object(items):
                properties = items.get("properties", {})
                builder = SchemaBuilder.map(self._schema(properties.get("key"), root, None, False, refs),
                                            self._schema(properties.get("value"), root, None, False, refs))
            else:
                builder = SchemaBuilder.array(self._schema(items, root, None, False, refs))
        elif _is_object(node):
            if connect_type == "map":
                builder = SchemaBuilder.map(Schema.STRING_SCHEMA,
                                            self._schema(node.get("additionalProperties"), root, None, False, refs))
            else:
                builder = SchemaBuilder.struct()
                properties = node.get("properties", {})
                ordered: dict[int, tuple[str, Any]] = {}
                for name, sub in properties.items():
                    index = sub.get("connect.index") if isinstance(sub, dict) else None
                    ordered[index if isinstance(index, int) else len(ordered)] = (name, sub)
                required = set(node.get("required", []))
                for _, (name, sub) in sorted(ordered.items()):
                    optional = self.optional_for_nonrequired and name not in required
                    builder.field(name, self._schema(sub, root, None, optional, refs))
        elif json_type == "null":
            raise DataException("Unsupported schema type: a standalone null schema")
        else:
            raise DataException(f"Unsupported schema type {json_type!r}")
        return self._finish(builder, node, version, force_optional)

    def _finish(self, builder: SchemaBuilder, node: dict[str, Any], version: int | None,
                force_optional: bool) -> Schema:
        title = node.get("title")
        if isinstance(title, str) and builder.build().name is None:
            builder.name(title)
        connect_version = node.get("connect.version")
        if isinstance(connect_version, int):
            builder.version(connect_version)
        elif version is not None:
            builder.version(version)
        if isinstance(node.get("description"), str):
            builder.doc(node["description"])
        parameters = node.get("connect.parameters")
        if isinstance(parameters, dict):
            builder.parameters({k: str(v) for k, v in parameters.items()})
        if "default" in node:
            builder.default_value(self.to_connect_data(builder.build(), node["default"]))
        if force_optional:
            builder.optional()
        return builder.build()

    def _combined(self, node: dict[str, Any], keyword: str, root: Any, version: int | None, force_optional: bool,
                  refs: set[str]) -> Schema:
        members = node[keyword]
        if len(members) == 2 and any(_is_null_schema(m) for m in members):
            other = next(m for m in members if not _is_null_schema(m))
            return self._schema(other, root, version, True, refs)
        builder = SchemaBuilder.struct().name(ONE_OF_NAME)
        index = 0
        for member in members:
            if _is_null_schema(member):
                builder.optional()
            else:
                builder.field(f"{ONE_OF_NAME}.field.{index}", self._schema(member, root, None, True, refs))
                index += 1
        outer = {k: v for k, v in node.items() if k not in (keyword, "title")}
        return self._finish(builder, outer, version, force_optional)

    def _all_of(self, node: dict[str, Any], root: Any, version: int | None, force_optional: bool,
                refs: set[str]) -> Schema:
        parts = [_resolve(root, p["$ref"]) if isinstance(p, dict) and "$ref" in p else p for p in node["allOf"]]
        by_kind = {("const" if "const" in p else "enum" if "enum" in p else p.get("type")): p
                   for p in parts if isinstance(p, dict)}
        if "string" in by_kind and ("const" in by_kind or "enum" in by_kind):
            chosen = by_kind["enum"] if "enum" in by_kind else by_kind["string"]
        elif "const" in by_kind and ("number" in by_kind or "integer" in by_kind):
            chosen = by_kind.get("number") or by_kind["integer"]
        else:
            raise DataException(f"Unsupported criterion allOf for {json.dumps(node)[:200]}")
        return self._schema(chosen, root, version, force_optional, refs)

    # -- values --------------------------------------------------------------------------------

    def to_connect_data(self, schema: Schema, value: Any, missing: bool = False) -> Any:
        """The Connect value of a parsed JSON value (``missing``: the property was absent).

        Raises:
            DataException: a JSON null for a required field without default, a value of the wrong shape.
        """
        if value is None:
            if schema.default_value is not None:
                return schema.default_value
            if missing or schema.is_optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type} field")
        name = schema.name
        if name == Decimal.LOGICAL_NAME:
            if _is_number(value):
                return value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
            if isinstance(value, str):
                try:
                    return Decimal.to_logical(schema, base64.b64decode(value, validate=True))
                except Exception as e:
                    raise DataException("Invalid bytes for Decimal field") from e
            raise DataException("Invalid type for Decimal, underlying representation should be numeric or bytes")
        if name == Date.LOGICAL_NAME:
            return Date.to_logical(schema, _integral(value, "Date"))
        if name == Time.LOGICAL_NAME:
            return Time.to_logical(schema, _integral(value, "Time"))
        if name == Timestamp.LOGICAL_NAME:
            return Timestamp.to_logical(schema, _integral(value, "Timestamp"))
        schema_type = schema.type
        if schema_type is Type.BOOLEAN:
            return value is True
        if schema_type in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
            bits = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}[schema_type]
            return _int_value(value, bits)
        if schema_type is Type.FLOAT32:
            return to_float32(_double_value(value))
        if schema_type is Type.FLOAT64:
            return _double_value(value)
        if schema_type is Type.STRING:
            return value if isinstance(value, str) else None
        if schema_type is Type.BYTES:
            if isinstance(value, str):
                try:
                    return base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError) as e:
                    raise DataException("Invalid bytes field") from e
            return None
        if schema_type is Type.ARRAY:
            items = value if isinstance(value, list) else []
            return [self.to_connect_data(schema.value_schema, item) for item in items]
        if schema_type is Type.MAP:
            key_schema, value_schema = schema.key_schema, schema.value_schema
            if key_schema.type is Type.STRING and not key_schema.is_optional:
                if not isinstance(value, dict):
                    raise DataException("Maps with string fields should be encoded as JSON objects, but found "
                                        f"{_node_type(value)}")
                return {k: self.to_connect_data(value_schema, v) for k, v in value.items()}
            if not isinstance(value, list):
                raise DataException("Maps with non-string fields should be encoded as JSON array of objects, but "
                                    f"found {_node_type(value)}")
            result = {}
            for entry in value:
                if not isinstance(entry, dict):
                    raise DataException(f"Found invalid map entry instead of object: {_node_type(entry)}")
                if len(entry) != 2:
                    raise DataException(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
                result[self.to_connect_data(key_schema, entry.get("key"))] = self.to_connect_data(
                    value_schema, entry.get("value"))
            return result
        if name == ONE_OF_NAME:
            return self._one_of(schema, value)
        if not isinstance(value, dict):
            raise DataException(f"Structs should be encoded as JSON objects, but found {_node_type(value)}")
        struct = Struct(schema)
        for field in schema.fields:
            present = field.name in value
            converted = self.to_connect_data(field.schema, value.get(field.name), missing=not present)
            if converted is not None:
                struct.put(field, converted)
        return struct

    def _one_of(self, schema: Schema, value: Any) -> Struct:
        best, best_count = None, -1
        for field in schema.fields:
            if _fits(field.schema, value):
                return Struct(schema).put(field, self.to_connect_data(field.schema, value))
            if field.schema.type is Type.STRUCT and isinstance(value, dict):
                count = len({f.name for f in field.schema.fields} & set(value))
                if count > best_count:
                    best, best_count = field, count
        if best is not None:
            return Struct(schema).put(best, self.to_connect_data(best.schema, value))
        raise DataException("Did not find matching oneof field for data")


def _resolve(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        raise DataException(f"Only local schema references (#/...) are supported, not {ref}")
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise DataException(f"Schema reference {ref} does not resolve")
        node = node[part]
    return node


def _is_object(node: Any) -> bool:
    return isinstance(node, dict) and (node.get("type") == "object" or ("type" not in node and "properties" in node))


def _is_null_schema(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "null"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _fits(schema: Schema, value: Any) -> bool:
    """Confluent's isInstanceOfSchemaTypeForSimpleSchema (structs never fit here)."""
    t = schema.type
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        return isinstance(value, int) and not isinstance(value, bool)
    if t in (Type.FLOAT32, Type.FLOAT64):
        return _is_number(value)
    if t is Type.BOOLEAN:
        return isinstance(value, bool)
    if t is Type.STRING:
        return isinstance(value, str)
    if t is Type.BYTES:
        return isinstance(value, decimal.Decimal)
    if t is Type.ARRAY:
        return isinstance(value, list)
    if t is Type.MAP:
        return isinstance(value, (dict, list))
    return False


def _node_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if _is_number(value):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "OBJECT"
    return "NULL" if value is None else "POJO"


def _int_value(value: Any, bits: int) -> int:
    if not _is_number(value):
        return 0
    if isinstance(value, int):
        return wrap_int(value, bits)
    as_long = double_to_long(float(value)) if bits == 64 else double_to_int(float(value))
    return wrap_int(as_long, bits)


def _double_value(value: Any) -> float:
    return float(value) + 0.0 if _is_number(value) else 0.0


def _integral(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DataException(f"Invalid type for {what}, underlying representation should be integer but was "
                            f"{_node_type(value)}")
    return value
