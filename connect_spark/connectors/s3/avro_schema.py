"""The Avro schema of a Connect schema, named as Confluent's ``AvroData.fromConnectSchema`` names it.

Called by ``formats`` when it writes an Avro object: the object's writer schema is this mapping of the
value's Connect schema (with Confluent's default ``connect.meta.data=true``), so readers that know
Confluent's objects (their ``connect.name``, ``connect.type`` and logical types) read ours the same way:

* int8 / int16 → ``int`` with ``connect.type``; int32 ``int``; int64 ``long``; float32 ``float``;
  float64 ``double``; bytes, string, boolean as named;
* Decimal → ``bytes``, logicalType ``decimal`` (precision from ``connect.decimal.precision``, else 64);
  Date → ``int`` date; Time → ``int`` time-millis; Timestamp → ``long`` timestamp-millis;
* a struct → a record named by its schema name (namespace from the dotted prefix), unnamed ones
  ``io.confluent.connect.avro.ConnectDefault``, then ``ConnectDefault2``, ... in the order met;
* a map with string keys → an Avro map; other keys → an array of ``io.confluent.connect.avro.MapEntry``
  records (``key``, ``value``);
* an optional schema → the union ``["null", T]``, its field defaulting to null.

Debezium's semantic types keep AvroData's form too: their Connect encoding (``long`` with ``connect.name``
``io.debezium.time.MicroTimestamp``, the VariableScaleDecimal record), so Confluent's readers type them as
Debezium's consumers do. :func:`avro_values` turns ``to_pylist`` values of the Arrow column into what
fastavro writes for it (maps are lists of pairs in Arrow; a semantic type's typed column value back to its
encoding, :func:`~connect_spark.api.data.semantic_types.from_column_value`).
"""

from __future__ import annotations

from typing import Any, Callable

from connect_spark.api.data import Schema
from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Type,
)
from connect_spark.api.data.semantic_types import from_column_value, semantic_type

__all__ = ["avro_schema", "avro_values"]

_NAMESPACE = "io.confluent.connect.avro"
_DEFAULT_RECORD = "ConnectDefault"
_PRECISION_PARAMETER = "connect.decimal.precision"
_PRIMITIVES = {Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "long", Type.FLOAT32: "float",
               Type.FLOAT64: "double", Type.BOOLEAN: "boolean", Type.STRING: "string", Type.BYTES: "bytes"}
_LOGICAL = {DATE_LOGICAL_NAME: ("int", "date"), TIME_LOGICAL_NAME: ("int", "time-millis"),
            TIMESTAMP_LOGICAL_NAME: ("long", "timestamp-millis")}


def avro_schema(schema: Schema) -> Any:
    """The Avro schema (JSON form) of the Connect ``schema``."""
    return _Mapping().convert(schema, top=True)


class _Mapping:
    """One conversion: counts unnamed records, as Confluent's does per schema."""

    def __init__(self) -> None:
        self.unnamed = 0

    def convert(self, schema: Schema, top: bool = False) -> Any:
        node = self._bare(schema)
        if schema.is_optional:
            return ["null", node]
        return node

    def _bare(self, schema: Schema) -> Any:
        kind = schema.type
        if schema.name in _LOGICAL:
            base, logical = _LOGICAL[schema.name]
            return self._meta({"type": base, "logicalType": logical}, schema)
        if schema.name == DECIMAL_LOGICAL_NAME:
            params = dict(schema.parameters or {})
            node = {"type": "bytes", "scale": int(params.get("scale", 0)),
                    "precision": int(params.get(_PRECISION_PARAMETER, 64)), "logicalType": "decimal"}
            return self._meta(node, schema)
        if kind in _PRIMITIVES:
            node: dict[str, Any] = {"type": _PRIMITIVES[kind]}
            if kind in (Type.INT8, Type.INT16):
                node["connect.type"] = kind.name.lower()
            node = self._meta(node, schema)
            return node if len(node) > 1 else node["type"]
        if kind == Type.ARRAY:
            return self._meta({"type": "array", "items": self.convert(schema.value_schema)}, schema)
        if kind == Type.MAP:
            key, value = schema.key_schema, schema.value_schema
            if key.type == Type.STRING and not key.is_optional:
                return self._meta({"type": "map", "values": self.convert(value)}, schema)
            entry = {"type": "record", "name": "MapEntry", "namespace": _NAMESPACE,
                     "fields": [self._field("key", key), self._field("value", value)]}
            return self._meta({"type": "array", "items": entry}, schema)
        if kind == Type.STRUCT:
            if schema.name:
                namespace, _, name = schema.name.rpartition(".")
            else:
                self.unnamed += 1
                namespace, name = _NAMESPACE, _DEFAULT_RECORD + ("" if self.unnamed == 1 else str(self.unnamed))
            node = {"type": "record", "name": name}
            if namespace:
                node["namespace"] = namespace
            if schema.doc:
                node["doc"] = schema.doc
            node["fields"] = [self._field(f.name, f.schema) for f in schema.fields]
            if schema.version is not None:
                node["connect.version"] = schema.version
            if schema.parameters:
                node["connect.parameters"] = dict(schema.parameters)
            if schema.name:
                node["connect.name"] = schema.name
            return node
        raise ValueError(f"no Avro form for a Connect {kind} schema")

    def _field(self, name: str, schema: Schema) -> dict[str, Any]:
        field: dict[str, Any] = {"name": name, "type": self.convert(schema)}
        default = schema.default_value
        if schema.is_optional and default is None:
            field["default"] = None
        elif isinstance(default, (bool, int, float, str)):
            field["default"] = default
        return field

    @staticmethod
    def _meta(node: dict[str, Any], schema: Schema) -> dict[str, Any]:
        if schema.doc:
            node["connect.doc"] = schema.doc
        if schema.version is not None:
            node["connect.version"] = schema.version
        if schema.parameters:
            node["connect.parameters"] = dict(schema.parameters)
        if schema.name:
            node["connect.name"] = schema.name
        return node


def avro_values(schema: Schema) -> Callable[[Any], Any]:
    """A function turning one ``to_pylist`` value of a column of ``schema`` into fastavro's form."""
    convert = _converter(schema)
    return convert if convert is not None else (lambda v: v)


def _converter(schema: Schema) -> Callable[[Any], Any] | None:
    """``None`` when the ``to_pylist`` value is already fastavro's form (no map inside)."""
    kind = schema.type
    semantic = semantic_type(schema)
    if semantic is not None and semantic.column not in ("int", "bigint", "string", "binary"):
        # a typed column (a timestamp_ntz, a decimal(38,18), ...) back to the encoding AvroData writes
        return lambda v: None if v is None else from_column_value(semantic, v)
    if schema.name in _LOGICAL or schema.name == DECIMAL_LOGICAL_NAME or kind in _PRIMITIVES:
        return None
    if kind == Type.ARRAY:
        item = _converter(schema.value_schema)
        return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
    if kind == Type.MAP:
        key = _converter(schema.key_schema) or (lambda x: x)
        value = _converter(schema.value_schema) or (lambda x: x)
        if schema.key_schema.type == Type.STRING and not schema.key_schema.is_optional:
            return lambda v: None if v is None else {k: value(x) for k, x in v}
        return lambda v: None if v is None else [{"key": key(k), "value": value(x)} for k, x in v]
    if kind == Type.STRUCT:
        fields = [(f.name, _converter(f.schema)) for f in schema.fields]
        if all(c is None for _, c in fields):
            return None
        return lambda v: None if v is None else {n: (v[n] if c is None else c(v[n])) for n, c in fields}
    return None
