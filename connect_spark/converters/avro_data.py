"""Avro → Connect data, by the rules of Confluent's ``AvroData`` (``io.confluent.connect.avro.AvroData``).

Called by :class:`~connect_spark.converters.avro.AvroConverter` once per writer schema
(:meth:`AvroData.compile`) and then per record (:meth:`AvroReader.read`).

The rules, each checked against Confluent's ``AvroData.toConnectSchema`` / ``toConnectData``:

* record → STRUCT named by the record's full name, fields in order; with ``connect.meta.data`` (default)
  the record's doc is parameter ``io.confluent.connect.avro.record.doc`` and each field's doc
  ``io.confluent.connect.avro.field.doc.<field>``; a field with a default gets that default (converted
  as Connect data) and parameter ``io.confluent.connect.avro.field.default=true``;
* ``["null", T]`` (either order) → T made optional; its field default is dropped, as Confluent does;
* any other union → a STRUCT named ``io.confluent.connect.avro.Union`` with one optional field per
  non-null member, named by the member's type (``int``, ``string``, ``array``...) or, for a record, enum
  or fixed, its simple name (its full name with ``enhanced.avro.schema.support``); a ``null`` member
  makes the struct optional; the value is a Struct with only the member that was written set;
* enum → STRING named by the enum's full name with parameters ``io.confluent.connect.avro.Enum`` (full
  name), ``io.confluent.connect.avro.Enum.<symbol>`` for each symbol, and with ``connect.meta.data`` its
  doc and default (``io.confluent.connect.avro.enum.doc.<Name>`` / ``.enum.default.<Name>``);
* fixed → BYTES named by its full name with parameter ``connect.fixed.size``;
* bytes/fixed with logicalType decimal → Connect Decimal (scale parameter, 0 when absent; precision as
  ``connect.decimal.precision`` unless it is 64); int date → Date; int time-millis → Time; long
  timestamp-millis → Timestamp. Other logical types (time-micros, timestamp-micros, local-timestamp-*,
  uuid) are not mapped by AvroData: they stay INT64 / STRING, unnamed;
* int with ``connect.type`` int8/int16 → INT8/INT16; map → MAP with STRING keys; an array of
  ``MapEntry`` records (``io.confluent.connect.avro.MapEntry`` or ``connect.internal.type``) → MAP with
  those key and value types;
* ``connect.name``, ``connect.doc`` (with ``connect.meta.data``), ``connect.version``,
  ``connect.parameters`` (with ``connect.meta.data``), ``connect.default`` properties are honoured; every
  property whose name starts with ``avro`` becomes a parameter; the version is otherwise the registry's
  version of the writer schema; the name ``io.confluent.connect.avro.ConnectDefault*`` is dropped.

Recursive schemas (a record that contains itself) are refused with a DataException: a Connect schema here
is immutable and built bottom-up.

Decoding uses fastavro on a *reading form* of the writer schema that is byte-for-byte the same encoding:
logical types removed (AvroData converts the raw values itself) and every member of a general union
wrapped in a one-field record, so the decoded value says which member was written.
"""

from __future__ import annotations

import decimal
import io
import json
import re
from typing import Any, Callable

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect_spark.api.errors import DataException

__all__ = ["AvroData", "AvroReader", "UNION_NAME", "ENUM_PARAMETER"]

NAMESPACE = "io.confluent.connect.avro"
UNION_NAME = NAMESPACE + ".Union"
ENUM_PARAMETER = NAMESPACE + ".Enum"
DEFAULT_SCHEMA_FULL_NAME = NAMESPACE + ".ConnectDefault"
RECORD_DOC_PARAMETER = NAMESPACE + ".record.doc"
FIELD_DOC_PREFIX = NAMESPACE + ".field.doc."
ENUM_DOC_PREFIX = NAMESPACE + ".enum.doc."
ENUM_DEFAULT_PREFIX = NAMESPACE + ".enum.default."
FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
FIXED_SIZE_PARAMETER = "connect.fixed.size"
DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"
GENERALIZED_UNION_PARAMETER = "org.apache.kafka.connect.data.Union"
GENERALIZED_ENUM_PARAMETER = "org.apache.kafka.connect.data.Enum"

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_WRAPPER_PREFIX = "connect_spark_union_member_"
_NAME_PART = re.compile(r"[^A-Za-z0-9_]")

Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def scrub_name(name: str) -> str:
    """Confluent's ``scrubName``: invalid Avro name characters become ``_``, a leading digit gets ``x``."""
    scrubbed = _NAME_PART.sub("_", name)
    if scrubbed and scrubbed[0].isdigit():
        scrubbed = "x" + scrubbed
    return scrubbed


class _Names:
    """Named types (records, enums, fixed) seen so far, by full name, while walking one schema."""

    def __init__(self) -> None:
        self.by_name: dict[str, dict[str, Any]] = {}

    @staticmethod
    def full_name(node: dict[str, Any], namespace: str | None) -> tuple[str, str | None]:
        name = node["name"]
        if "." in name:
            return name, name.rpartition(".")[0]
        space = node.get("namespace", namespace)
        return (f"{space}.{name}" if space else name), space

    def resolve(self, ref: str, namespace: str | None) -> dict[str, Any]:
        candidates = [f"{namespace}.{ref}"] if namespace and "." not in ref else []
        candidates.append(ref)
        for candidate in candidates:
            if candidate in self.by_name:
                return self.by_name[candidate]
        raise DataException(f"Unknown Avro type name {ref!r} in the writer schema")


class AvroReader:
    """Decodes payloads of one writer schema into Connect data (built by :meth:`AvroData.compile`).

    Attributes:
        schema: the Connect schema of the values.
        avro_schema: the writer schema (parsed JSON).
    """

    def __init__(self, schema: Schema, avro_schema: Any, reading_form: Any, convert: Convert) -> None:
        import fastavro

        self.schema = schema
        self.avro_schema = avro_schema
        self._parsed = fastavro.parse_schema(reading_form)
        self._convert = convert
        self._reader = fastavro.schemaless_reader

    def read(self, payload: bytes | memoryview) -> Any:
        """The Connect value of one payload.

        Raises:
            DataException: the bytes do not decode under the writer schema.
        """
        try:
            # Java's Avro reads malformed UTF-8 as U+FFFD (new String(bytes, UTF_8)), so does this reader
            decoded = self._reader(io.BytesIO(payload), self._parsed, None, True, True, "replace")
        except Exception as e:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, IndexError...
            raise DataException(f"Bytes do not decode under the writer schema: {type(e).__name__}: {e}") from e
        return self._convert(decoded)

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("AvroReader is rebuilt from the writer schema, not pickled")


class AvroData:
    """Builds Connect schemas and value converters from Avro writer schemas, as Confluent's ``AvroData``.

    Args:
        connect_meta_data: ``connect.meta.data``: keep docs, Connect parameters and default flags.
        enhanced_schema_support: ``enhanced.avro.schema.support``: union member fields of named types
            carry the full name.
        scrub_invalid_names: ``scrub.invalid.names``: names are scrubbed when looked up.
        generalized_sum_type_support: ``generalized.sum.type.support``: unions and enums use Connect's
            generalized parameters (``connect_union_<n>``, ``org.apache.kafka.connect.data.Enum``).
    """

    def __init__(self, connect_meta_data: bool = True, enhanced_schema_support: bool = False,
                 scrub_invalid_names: bool = False, generalized_sum_type_support: bool = False) -> None:
        self.connect_meta_data = connect_meta_data
        self.enhanced_schema_support = enhanced_schema_support
        self.scrub_invalid_names = scrub_invalid_names
        self.generalized_sum_type_support = generalized_sum_type_support

    def compile(self, avro_schema: Any, version: int | None = None) -> AvroReader:
        """A reader for payloads written with ``avro_schema`` (parsed JSON or its text).

        Args:
            avro_schema: the writer schema.
            version: the writer schema's version in the registry (the Connect version unless the schema
                has ``connect.version``).

        Raises:
            DataException: a schema AvroData cannot express in Connect (a standalone null, a recursive
                record, a union whose members map to one field name...).
        """
        if isinstance(avro_schema, str):
            try:
                avro_schema = json.loads(avro_schema)
            except ValueError as e:
                raise DataException(f"The writer schema is not valid JSON: {e}") from e
        state = _Compilation(self)
        schema, convert, reading_form = state.convert(avro_schema, None, force_optional=False, default=_NO_DEFAULT,
                                                      version=version)
        return AvroReader(schema, avro_schema, reading_form, convert)


_NO_DEFAULT = object()


class _Compilation:
    """One walk over a writer schema: builds the Connect schema, the value converter and the reading form."""

    def __init__(self, data: AvroData) -> None:
        self.data = data
        self.names = _Names()
        # full name → (Connect schema, converter, converter for another schema of the same type)
        self.compiled: dict[str, tuple[Schema, Convert, Callable[[Schema], Convert]]] = {}
        self.in_progress: set[str] = set()
        self.union_index = 0
        self.wrappers = 0

    # -- the walk ------------------------------------------------------------------------------

    def convert(self, node: Any, namespace: str | None, force_optional: bool, default: Any,
                version: int | None = None, doc: str | None = None) -> tuple[Schema, Convert, Any]:
        """``(Connect schema, value converter, reading form)`` of one Avro schema node."""
        if isinstance(node, list):
            return self._union(node, namespace, force_optional, default, doc)
        if isinstance(node, str):
            if node in _PRIMITIVES:
                node = {"type": node}
            else:
                named = self.names.resolve(node, namespace)
                full_name = self.names.full_name(named, namespace)[0]
                if full_name in self.in_progress:
                    raise DataException(f"Recursive Avro schema {full_name} cannot be expressed as a Connect schema")
                schema, convert, rebind = self.compiled[full_name]
                reused = self._reuse(schema, force_optional, default, named)
                return reused, (convert if reused is schema else rebind(reused)), full_name
        if not isinstance(node, dict) or "type" not in node:
            raise DataException(f"Invalid Avro schema node: {node!r}")
        avro_type = node["type"]
        if isinstance(avro_type, (dict, list)) or (isinstance(avro_type, str) and avro_type not in _PRIMITIVES
                                                    and avro_type not in ("record", "error", "enum", "fixed",
                                                                          "array", "map")):
            # {"type": {"type": ...}} or {"type": "SomeName"}: the node only wraps another schema
            return self.convert(avro_type, namespace, force_optional, default, version, doc)
        return self._typed(node, avro_type, namespace, force_optional, default, version)

    def _typed(self, node: dict[str, Any], avro_type: str, namespace: str | None, force_optional: bool,
               default: Any, version: int | None) -> tuple[Schema, Convert, Any]:
        data = self.data
        logical = node.get("logicalType")
        logical = logical.lower() if isinstance(logical, str) else None
        convert: Convert = _identity
        reading: Any = {k: v for k, v in node.items() if k != "logicalType"}
        full_name: str | None = None
        after_build: Callable[[Schema], None] | None = None
        rebind: Callable[[Schema], Convert] | None = None

        if avro_type == "boolean":
            builder = SchemaBuilder.bool()
        elif avro_type in ("bytes", "fixed"):
            if avro_type == "fixed":
                full_name, _ = self.names.full_name(node, namespace)
                self.names.by_name[full_name] = node
            if logical == "decimal":
                scale = node.get("scale")
                builder = Decimal.builder(int(scale) if isinstance(scale, (int, float)) else 0)
                precision = node.get("precision")
                if precision is not None:
                    if not isinstance(precision, (int, float)) or isinstance(precision, bool):
                        raise DataException("precision property must be a JSON Integer. "
                                            "https://avro.apache.org/docs/1.9.1/spec.html#Decimal")
                    if int(precision) != 64:
                        builder.parameter(DECIMAL_PRECISION_PARAMETER, str(int(precision)))
            else:
                builder = SchemaBuilder.bytes()
            if avro_type == "fixed":
                builder.parameter(FIXED_SIZE_PARAMETER, str(node["size"]))
        elif avro_type == "double":
            builder = SchemaBuilder.float64()
        elif avro_type == "float":
            builder = SchemaBuilder.float32()
        elif avro_type == "int":
            connect_type = node.get("connect.type")
            if connect_type is None and logical is None:
                builder = SchemaBuilder.int32()
            elif logical is not None:
                builder = Date.builder() if logical == "date" else Time.builder() if logical == "time-millis" \
                    else SchemaBuilder.int32()
            elif connect_type == "int8":
                builder = SchemaBuilder.int8()
            elif connect_type == "int16":
                builder = SchemaBuilder.int16()
            else:
                raise DataException("Connect type annotation for Avro int field is null")
        elif avro_type == "long":
            builder = Timestamp.builder() if logical == "timestamp-millis" else SchemaBuilder.int64()
        elif avro_type == "string":
            builder = SchemaBuilder.string()
        elif avro_type == "array":
            element = node["items"]
            entry = self._map_entry(element, namespace)
            if entry is not None:
                (key_schema, key_convert, _), (value_schema, value_convert, _) = entry[0], entry[1]
                builder = SchemaBuilder.map(key_schema, value_schema)
                convert = _map_entries_converter(key_convert, value_convert)
                reading = {**reading, "items": entry[2]}
            else:
                element_schema, element_convert, element_reading = self.convert(element, namespace, False, _NO_DEFAULT)
                builder = SchemaBuilder.array(element_schema)
                convert = _array_converter(element_convert)
                reading = {**reading, "items": element_reading}
        elif avro_type == "map":
            value_schema, value_convert, value_reading = self.convert(node["values"], namespace, False, _NO_DEFAULT)
            builder = SchemaBuilder.map(Schema.STRING_SCHEMA, value_schema)
            convert = _map_converter(value_convert)
            reading = {**reading, "values": value_reading}
        elif avro_type in ("record", "error"):
            full_name, space = self.names.full_name(node, namespace)
            self.names.by_name[full_name] = node
            self.in_progress.add(full_name)
            builder = SchemaBuilder.struct()
            meta = data.connect_meta_data
            if meta and node.get("doc") is not None:
                builder.parameter(RECORD_DOC_PARAMETER, node["doc"])
            field_converters: list[tuple[str, Convert]] = []
            reading_fields = []
            for field in node.get("fields", []):
                name = field["name"]
                if meta and field.get("doc") is not None:
                    builder.parameter(FIELD_DOC_PREFIX + name, field["doc"])
                field_default = field["default"] if "default" in field else _NO_DEFAULT
                field_schema, field_convert, field_reading = self.convert(
                    field["type"], space, False, field_default, doc=field.get("doc"))
                builder.field(name, field_schema)
                field_converters.append((name, field_convert))
                reading_fields.append({k: v for k, v in field.items() if k not in ("default",)} | {"type": field_reading})
            reading = {**reading, "fields": reading_fields}
            convert_holder: list[Convert] = []
            convert = _deferred(convert_holder)

            def after_build(schema: Schema, holder: list[Convert] = convert_holder,
                            fields: list[tuple[str, Convert]] = field_converters) -> None:
                holder.append(_struct_converter(schema, fields))

            def rebind(schema: Schema, fields: list[tuple[str, Convert]] = field_converters) -> Convert:
                return _struct_converter(schema, fields)
        elif avro_type == "enum":
            full_name, _ = self.names.full_name(node, namespace)
            self.names.by_name[full_name] = node
            builder = SchemaBuilder.string()
            simple = node["name"].rpartition(".")[2]
            if data.connect_meta_data:
                if node.get("doc") is not None:
                    builder.parameter(ENUM_DOC_PREFIX + simple, node["doc"])
                if node.get("default") is not None:
                    builder.parameter(ENUM_DEFAULT_PREFIX + simple, node["default"])
            parameter = GENERALIZED_ENUM_PARAMETER if data.generalized_sum_type_support else ENUM_PARAMETER
            builder.parameter(parameter, full_name)
            for index, symbol in enumerate(node.get("symbols", [])):
                builder.parameter(f"{parameter}.{symbol}",
                                  str(index) if data.generalized_sum_type_support else symbol)
        elif avro_type == "null":
            raise DataException("Standalone null schemas are not supported by this converter")
        else:
            raise DataException(f"Couldn't translate unsupported schema type {avro_type}.")

        self._common_properties(builder, node, avro_type, default, version, full_name)
        if force_optional:
            builder.optional()
        schema = builder.build()
        if after_build is not None:
            after_build(schema)
        convert = _with_logical(schema, convert)
        if full_name is not None:
            if avro_type not in ("record", "error"):
                def rebind(_: Schema, same: Convert = convert) -> Convert:
                    return same
            self.compiled[full_name] = (schema, convert, rebind)
            self.in_progress.discard(full_name)
        return schema, convert, reading

    def _common_properties(self, builder: SchemaBuilder, node: dict[str, Any], avro_type: str, default: Any,
                           version: int | None, full_name: str | None) -> None:
        """doc, version, parameters, ``avro*`` properties, default and name (AvroData's tail of toConnectSchema)."""
        data = self.data
        if data.connect_meta_data and isinstance(node.get("connect.doc"), str):
            builder.doc(node["connect.doc"])
        connect_version = node.get("connect.version")
        if connect_version is not None:
            if not isinstance(connect_version, (int, float)) or isinstance(connect_version, bool):
                raise DataException(f"Invalid Connect version found: {connect_version}")
            builder.version(int(connect_version))
        elif version is not None and version >= 0:
            builder.version(version)
        parameters = node.get("connect.parameters")
        if data.connect_meta_data and parameters is not None:
            if not isinstance(parameters, dict):
                raise DataException(f"Expected JSON object for schema parameters but found: {parameters}")
            for key, value in parameters.items():
                if not isinstance(value, str):
                    raise DataException(f"Expected schema parameter values to be strings but found: {value}")
                builder.parameter(key, value)
        for key, value in node.items():
            if key.startswith("avro"):
                builder.parameter(key, value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
        # The name is set before the default (Confluent sets it after, on the same mutable builder, so a
        # struct default there sees the named schema too).
        name = node.get("connect.name")
        if name is not None and not isinstance(name, str):
            raise DataException(f"Invalid schema name: {name}")
        if name is None and avro_type in ("record", "error", "enum", "fixed"):
            name = full_name
        if name is not None and not name.startswith(DEFAULT_SCHEMA_FULL_NAME):
            current = builder.build().name
            if current is not None and current != name:  # e.g. a fixed with logicalType decimal, as in Confluent
                raise DataException(f"Mismatched names: name already added to SchemaBuilder ({current}) differs "
                                    f"from name in source schema ({name})")
            builder.name(name)
        connect_default = node.get("connect.default")
        if default is _NO_DEFAULT:
            default = connect_default if connect_default is not None else _NO_DEFAULT
        elif data.connect_meta_data and connect_default is None:
            builder.parameter(FIELD_DEFAULT_FLAG, "true")
        if default is not _NO_DEFAULT and default is not None:
            try:
                builder.default_value(self._default_value(builder.build(), node, default))
            except DataException:
                pass  # Confluent logs "Ignoring invalid default" and goes on without it

    def _union(self, members: list[Any], namespace: str | None, force_optional: bool, default: Any,
               doc: str | None) -> tuple[Schema, Convert, Any]:
        data = self.data
        if len(members) == 2 and any(_is_null(m) for m in members):
            member = next(m for m in members if not _is_null(m))
            schema, convert, reading = self.convert(member, namespace, True, _NO_DEFAULT, doc=doc)
            reading_members = [reading if not _is_null(m) else "null" for m in members]
            return schema, _optional(convert), reading_members
        if data.generalized_sum_type_support:
            union_name = f"connect_union_{self.union_index}"
            self.union_index += 1
        else:
            union_name = UNION_NAME
        builder = SchemaBuilder.struct().name(union_name)
        if data.generalized_sum_type_support:
            builder.parameter(GENERALIZED_UNION_PARAMETER, union_name)
        field_names: set[str] = set()
        reading_members: list[Any] = []
        member_converters: dict[str, tuple[str, Convert]] = {}
        only_member: tuple[str, Convert] | None = None
        for index, member in enumerate(members):
            if _is_null(member):
                builder.optional()
                reading_members.append("null")
                continue
            member_schema, member_convert, member_reading = self.convert(member, namespace, True, _NO_DEFAULT)
            field_name = self._member_field_name(member, member_schema, index, namespace)
            if field_name in field_names:
                raise DataException("Multiple union schemas map to the Connect union field name")
            field_names.add(field_name)
            builder.field(field_name, member_schema)
            wrapper = f"{_WRAPPER_PREFIX}{self.wrappers}"
            self.wrappers += 1
            # The wrapper sits in the enclosing namespace, so names defined inside it keep their full names.
            reading_members.append({"type": "record", "name": wrapper, "namespace": namespace or "",
                                    "fields": [{"name": "v", "type": member_reading}]})
            member_converters[f"{namespace}.{wrapper}" if namespace else wrapper] = (field_name, member_convert)
            only_member = (field_name, member_convert)
        if force_optional:
            builder.optional()
        # Confluent converts a union field's default with the first member's type (the Avro rule).
        first_default = _NO_DEFAULT
        if default is not _NO_DEFAULT and default is not None and members and not _is_null(members[0]):
            first_default = default
        if first_default is not _NO_DEFAULT:
            try:
                struct_schema = builder.build()
                value = self._default_value(struct_schema.fields[0].schema, _as_node(members[0]), first_default)
                default_struct = Struct(struct_schema).put(struct_schema.fields[0].name, value)
                builder.default_value(default_struct)
            except DataException:
                pass
        schema = builder.build()
        single = only_member if len(member_converters) == 1 else None
        return schema, _union_converter(schema, member_converters, single), reading_members

    def _member_field_name(self, member: Any, member_schema: Schema, index: int, namespace: str | None) -> str:
        if self.data.generalized_sum_type_support:
            return f"connect_union_field_{index}"
        node = member
        if isinstance(member, str) and member not in _PRIMITIVES:
            node = self.names.resolve(member, namespace)
        avro_type = node["type"] if isinstance(node, dict) else node
        if isinstance(avro_type, dict):
            avro_type = avro_type.get("type")
        if avro_type in ("record", "error", "enum", "fixed"):
            full_name = self.names.full_name(node, namespace)[0]
            if self.data.enhanced_schema_support:
                return ".".join(scrub_name(p) for p in full_name.split(".")) if self.data.scrub_invalid_names \
                    else full_name
            simple = full_name.rpartition(".")[2]
            return scrub_name(simple) if self.data.scrub_invalid_names else simple
        return "record" if avro_type == "error" else str(avro_type)

    def _map_entry(self, element: Any, namespace: str | None) -> tuple[Any, Any, Any] | None:
        """For an array of MapEntry records: the key and value conversions and the element's reading form."""
        node = element
        if isinstance(element, str) and element not in _PRIMITIVES:
            return None  # a reference to an already defined record: not a MapEntry definition
        if not isinstance(node, dict) or node.get("type") not in ("record", "error"):
            return None
        full_name, space = self.names.full_name(node, namespace)
        if full_name != NAMESPACE + ".MapEntry" and node.get("connect.internal.type") != "MapEntry":
            return None
        fields = {f["name"]: f for f in node.get("fields", [])}
        if len(fields) != 2 or "key" not in fields or "value" not in fields:
            raise DataException("Found map encoded as array of key-value pairs, but array elements do not match "
                                "the expected format.")
        self.names.by_name[full_name] = node
        key = self.convert(fields["key"]["type"], space, False, _NO_DEFAULT)
        value = self.convert(fields["value"]["type"], space, False, _NO_DEFAULT)
        reading = {**node, "fields": [{"name": "key", "type": key[2]}, {"name": "value", "type": value[2]}]}
        return key, value, reading

    def _reuse(self, schema: Schema, force_optional: bool, default: Any, node: dict[str, Any]) -> Schema:
        """A named type used again: the same Connect schema, made optional or given a default as asked."""
        if not force_optional and default is _NO_DEFAULT:
            return schema
        builder = _builder_from(schema)
        if default is not _NO_DEFAULT and default is not None:
            if self.data.connect_meta_data and node.get("connect.default") is None:
                builder.parameter(FIELD_DEFAULT_FLAG, "true")
            try:
                builder.default_value(self._default_value(schema, node, default))
            except DataException:
                pass
        if force_optional:
            builder.optional()
        return builder.build()

    # -- defaults --------------------------------------------------------------------------------

    def _default_value(self, schema: Schema, node: Any, value: Any) -> Any:
        """A default from the Avro schema (JSON) as Connect data of ``schema`` (AvroData's defaultValueFromAvro)."""
        if value is None:
            return None
        node = _as_node(node)
        if isinstance(node, dict) and isinstance(node.get("type"), str) and node["type"] not in _PRIMITIVES \
                and node["type"] not in ("record", "error", "enum", "fixed", "array", "map"):
            node = self.names.resolve(node["type"], None)
        avro_type = node.get("type") if isinstance(node, dict) else "union"
        if isinstance(node, list):
            avro_type = "union"
        raw: Any
        if avro_type == "int":
            raw = int(value) if _is_number(value) else 0
            if schema.type is Type.INT8:
                raw = ((raw + 128) % 256) - 128
            elif schema.type is Type.INT16:
                raw = ((raw + 32768) % 65536) - 32768
        elif avro_type == "long":
            raw = int(value) if _is_number(value) else 0
        elif avro_type in ("float", "double"):
            raw = float(value) if _is_number(value) else 0.0
        elif avro_type == "boolean":
            raw = value is True
        elif avro_type in ("string", "enum"):
            raw = value if isinstance(value, str) else json.dumps(value)
        elif avro_type in ("bytes", "fixed"):
            if not isinstance(value, str):
                raise DataException("Invalid binary data in default value")
            raw = value.encode("iso-8859-1")
        elif avro_type == "array":
            if not isinstance(value, list):
                raise DataException("Invalid JSON for array default value")
            return [self._default_value(schema.value_schema, node["items"], v) for v in value]
        elif avro_type == "map":
            if not isinstance(value, dict):
                raise DataException("Invalid JSON for map default value")
            return {k: self._default_value(schema.value_schema, node["values"], v) for k, v in value.items()}
        elif avro_type in ("record", "error"):
            if not isinstance(value, dict):
                raise DataException("Invalid JSON for record default value")
            result = Struct(schema)
            for field in node.get("fields", []):
                connect_field = schema.field(field["name"])
                field_value = value.get(field["name"], field.get("default"))
                result.put(field["name"], self._default_value(connect_field.schema, field["type"], field_value))
            return result
        elif avro_type == "union":
            members = node if isinstance(node, list) else node["type"]
            first = members[0]
            if _is_null(first):
                return None
            if schema.type is Type.STRUCT and schema.name in (UNION_NAME,) or (
                    schema.parameters and GENERALIZED_UNION_PARAMETER in schema.parameters):
                field = schema.fields[0]
                return Struct(schema).put(field.name, self._default_value(field.schema, first, value))
            return self._default_value(schema, first, value)
        else:
            return None
        return _to_logical(schema, raw)


def _as_node(node: Any) -> Any:
    if isinstance(node, str) and node in _PRIMITIVES:
        return {"type": node}
    return node


def _is_null(node: Any) -> bool:
    return node == "null" or (isinstance(node, dict) and node.get("type") == "null")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _builder_from(schema: Schema) -> SchemaBuilder:
    """A builder holding everything of ``schema`` but optionality and default."""
    if schema.type is Type.ARRAY:
        builder = SchemaBuilder.array(schema.value_schema)
    elif schema.type is Type.MAP:
        builder = SchemaBuilder.map(schema.key_schema, schema.value_schema)
    else:
        builder = SchemaBuilder(schema.type)
    for field in schema.fields if schema.type is Type.STRUCT else ():
        builder.field(field.name, field.schema)
    builder.name(schema.name).version(schema.version).doc(schema.doc)
    if schema.parameters:
        builder.parameters(schema.parameters)
    return builder


def _to_logical(schema: Schema, raw: Any) -> Any:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        if not isinstance(raw, (bytes, bytearray)):
            raise DataException(f"Invalid type for Decimal, underlying representation should be bytes but was "
                                f"{type(raw).__name__}")
        return Decimal.to_logical(schema, bytes(raw))
    if name == Date.LOGICAL_NAME:
        return Date.to_logical(schema, raw)
    if name == Time.LOGICAL_NAME:
        return Time.to_logical(schema, raw)
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, raw)
    return raw


# -- value converters (fastavro's decoded values → Connect values) -----------------------------------


def _with_logical(schema: Schema, convert: Convert) -> Convert:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return lambda v: Decimal.to_logical(schema, bytes(v))
    if name == Date.LOGICAL_NAME:
        return lambda v: Date.to_logical(schema, v)
    if name == Time.LOGICAL_NAME:
        return lambda v: Time.to_logical(schema, v)
    if name == Timestamp.LOGICAL_NAME:
        return lambda v: Timestamp.to_logical(schema, v)
    if schema.type is Type.INT8:
        return lambda v: ((v + 128) % 256) - 128
    if schema.type is Type.INT16:
        return lambda v: ((v + 32768) % 65536) - 32768
    return convert


def _optional(convert: Convert) -> Convert:
    if convert is _identity:
        return convert
    return lambda v: None if v is None else convert(v)


def _deferred(holder: list[Convert]) -> Convert:
    return lambda v: holder[0](v)


def _array_converter(element: Convert) -> Convert:
    if element is _identity:
        return list
    return lambda v: [element(item) for item in v]


def _map_converter(value: Convert) -> Convert:
    if value is _identity:
        return dict
    return lambda v: {key: value(item) for key, item in v.items()}


def _map_entries_converter(key: Convert, value: Convert) -> Convert:
    return lambda v: {key(entry["key"]): value(entry["value"]) for entry in v}


def _struct_converter(schema: Schema, fields: list[tuple[str, Convert]]) -> Convert:
    plan = [(schema.field(name), name, convert) for name, convert in fields]

    def convert(value: dict[str, Any]) -> Struct:
        struct = Struct(schema)
        for field, name, field_convert in plan:
            item = value.get(name)
            struct.put(field, None if item is None else field_convert(item))
        return struct

    return convert


def _union_converter(schema: Schema, members: dict[str, tuple[str, Convert]],
                     single: tuple[str, Convert] | None) -> Convert:
    def convert(value: Any) -> Struct:
        if isinstance(value, tuple):
            field_name, member_convert = members[value[0]]
            inner = value[1]["v"]
        elif single is not None and isinstance(value, dict):
            field_name, member_convert = single
            inner = value["v"]
        else:
            raise DataException("Did not find matching union field for data")
        return Struct(schema).put(field_name, None if inner is None else member_convert(inner))

    return convert
