"""Connect schemas: types, fields, immutable schemas and the fluent builder.

Mapping to Kafka (``org.apache.kafka.connect.data``): :class:`Type` is ``Schema.Type``; :class:`Schema`
is the ``Schema`` interface with its predefined constants (``Schema.INT32_SCHEMA``...);
:class:`ConnectSchema` is ``ConnectSchema``; :class:`SchemaBuilder` is ``SchemaBuilder``. Getters are
read-only properties in snake case (``schema.type``, ``schema.is_optional``, ``schema.default_value``,
``schema.key_schema``...). ``ConnectSchema.validateValue`` is :meth:`ConnectSchema.validate_value`.

Python values for each type:

========== ============================================== ==========================================
Type       Python value                                   Logical types on this type
========== ============================================== ==========================================
INT8..64   ``int`` (within the type's range)              Date (``datetime.date``) on INT32,
                                                          Time (``datetime.time``) on INT32,
                                                          Timestamp (``datetime.datetime``) on INT64
FLOAT32/64 ``float`` (an ``int`` is accepted too)
BOOLEAN    ``bool``
STRING     ``str``
BYTES      ``bytes`` or ``bytearray``                     Decimal (``decimal.Decimal``)
ARRAY      ``list`` (or ``tuple``)
MAP        ``dict`` (any ``Mapping``)
STRUCT     :class:`~connect_spark.api.data.Struct`
========== ============================================== ==========================================
"""

from __future__ import annotations

import datetime
import decimal
import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Callable, Iterable

from connect_spark.api.data.java_semantics import INT_BOUNDS
from connect_spark.api.errors import DataException

__all__ = [
    "Type",
    "Field",
    "Schema",
    "ConnectSchema",
    "SchemaBuilder",
    "SchemaBuilderException",
    "DECIMAL_LOGICAL_NAME",
    "DATE_LOGICAL_NAME",
    "TIME_LOGICAL_NAME",
    "TIMESTAMP_LOGICAL_NAME",
]

DECIMAL_LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
TIME_LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"


class SchemaBuilderException(DataException):
    """An invalid :class:`SchemaBuilder` call (Kafka's ``SchemaBuilderException``)."""


class Type(enum.Enum):
    """The type of a schema (Kafka's ``Schema.Type``); ``value`` is Kafka's lower-case ``getName()``."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """True for every type except ARRAY, MAP and STRUCT (``isPrimitive()``)."""
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)

    def __str__(self) -> str:
        return self.name


class Field:
    """One field of a struct schema: name, position and schema (Kafka's ``Field``). Immutable."""

    __slots__ = ("_name", "_index", "_schema")

    def __init__(self, name: str, index: int, schema: "Schema") -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_schema", schema)

    @property
    def name(self) -> str:
        return self._name

    @property
    def index(self) -> int:
        return self._index

    @property
    def schema(self) -> "Schema":
        return self._schema

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Field is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Field, (self._name, self._index, self._schema))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Field):
            return NotImplemented
        return self._name == other._name and self._index == other._index and self._schema == other._schema

    def __hash__(self) -> int:
        return hash((self._name, self._index, self._schema))

    def __repr__(self) -> str:
        return f"Field{{name={self._name}, index={self._index}, schema={self._schema}}}"


class Schema:
    """What every schema offers (Kafka's ``Schema`` interface), plus the predefined schemas.

    Schemas are immutable and hashable, so they can key caches (transforms cache the schema they
    derive from each input schema). Build them with :class:`SchemaBuilder`.
    """

    __slots__ = ()

    Type = Type

    # Predefined schemas, assigned below once ConnectSchema exists.
    INT8_SCHEMA: "Schema"
    INT16_SCHEMA: "Schema"
    INT32_SCHEMA: "Schema"
    INT64_SCHEMA: "Schema"
    FLOAT32_SCHEMA: "Schema"
    FLOAT64_SCHEMA: "Schema"
    BOOLEAN_SCHEMA: "Schema"
    STRING_SCHEMA: "Schema"
    BYTES_SCHEMA: "Schema"
    OPTIONAL_INT8_SCHEMA: "Schema"
    OPTIONAL_INT16_SCHEMA: "Schema"
    OPTIONAL_INT32_SCHEMA: "Schema"
    OPTIONAL_INT64_SCHEMA: "Schema"
    OPTIONAL_FLOAT32_SCHEMA: "Schema"
    OPTIONAL_FLOAT64_SCHEMA: "Schema"
    OPTIONAL_BOOLEAN_SCHEMA: "Schema"
    OPTIONAL_STRING_SCHEMA: "Schema"
    OPTIONAL_BYTES_SCHEMA: "Schema"

    @property
    def type(self) -> Type:
        raise NotImplementedError

    @property
    def is_optional(self) -> bool:
        raise NotImplementedError

    @property
    def default_value(self) -> Any:
        raise NotImplementedError

    @property
    def name(self) -> str | None:
        raise NotImplementedError

    @property
    def version(self) -> int | None:
        raise NotImplementedError

    @property
    def doc(self) -> str | None:
        raise NotImplementedError

    @property
    def parameters(self) -> Mapping[str, str] | None:
        raise NotImplementedError

    @property
    def fields(self) -> tuple[Field, ...]:
        raise NotImplementedError

    def field(self, name: str) -> Field | None:
        raise NotImplementedError

    @property
    def key_schema(self) -> "Schema | None":
        raise NotImplementedError

    @property
    def value_schema(self) -> "Schema | None":
        raise NotImplementedError

    def schema(self) -> "Schema":
        """This schema (Kafka's ``schema()``; a builder returns what it would build)."""
        return self


class ConnectSchema(Schema):
    """An immutable schema (Kafka's ``ConnectSchema``). Prefer :class:`SchemaBuilder` to build one.

    Args:
        type: the schema type.
        optional: whether ``None`` is a valid value.
        default_value: the value used for a missing field, or ``None``.
        name, version, doc: optional metadata; ``name`` also selects a logical type.
        parameters: optional string parameters (a logical type's ``scale``...).
        fields: the fields of a STRUCT schema.
        key_schema: the key schema of a MAP schema.
        value_schema: the element schema of an ARRAY or the value schema of a MAP.
    """

    __slots__ = (
        "_type",
        "_optional",
        "_default",
        "_name",
        "_version",
        "_doc",
        "_parameters",
        "_fields",
        "_fields_by_name",
        "_key_schema",
        "_value_schema",
        "_hash",
    )

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default_value: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: Iterable[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "_type", type)
        setter(self, "_optional", bool(optional))
        setter(self, "_default", default_value)
        setter(self, "_name", name)
        setter(self, "_version", version)
        setter(self, "_doc", doc)
        setter(self, "_parameters", None if parameters is None else MappingProxyType(dict(parameters)))
        if type is Type.STRUCT:
            field_tuple = tuple(fields or ())
            setter(self, "_fields", field_tuple)
            setter(self, "_fields_by_name", {f.name: f for f in field_tuple})
        else:
            setter(self, "_fields", None)
            setter(self, "_fields_by_name", None)
        setter(self, "_key_schema", key_schema)
        setter(self, "_value_schema", value_schema)
        setter(self, "_hash", None)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Schemas are immutable; build a new one with SchemaBuilder")

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            ConnectSchema,
            (
                self._type,
                self._optional,
                self._default,
                self._name,
                self._version,
                self._doc,
                None if self._parameters is None else dict(self._parameters),
                self._fields,
                self._key_schema,
                self._value_schema,
            ),
        )

    @property
    def type(self) -> Type:
        return self._type

    @property
    def is_optional(self) -> bool:
        return self._optional

    @property
    def default_value(self) -> Any:
        return self._default

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def version(self) -> int | None:
        return self._version

    @property
    def doc(self) -> str | None:
        return self._doc

    @property
    def parameters(self) -> Mapping[str, str] | None:
        """The parameters as a read-only mapping, or ``None`` when the schema has none."""
        return self._parameters

    @property
    def fields(self) -> tuple[Field, ...]:
        """The fields of a STRUCT schema, in order.

        Raises:
            DataException: if this is not a STRUCT schema.
        """
        if self._type is not Type.STRUCT:
            raise DataException("Cannot list fields on non-struct type")
        return self._fields  # type: ignore[return-value]

    def field(self, name: str) -> Field | None:
        """The field called ``name``, or ``None``.

        Raises:
            DataException: if this is not a STRUCT schema.
        """
        if self._type is not Type.STRUCT:
            raise DataException("Cannot look up fields on non-struct type")
        return self._fields_by_name.get(name)  # type: ignore[union-attr]

    @property
    def key_schema(self) -> Schema | None:
        """The key schema of a MAP schema.

        Raises:
            DataException: if this is not a MAP schema.
        """
        if self._type is not Type.MAP:
            raise DataException("Cannot look up key schema on non-map type")
        return self._key_schema

    @property
    def value_schema(self) -> Schema | None:
        """The element schema of an ARRAY, or the value schema of a MAP.

        Raises:
            DataException: for any other type.
        """
        if self._type is not Type.MAP and self._type is not Type.ARRAY:
            raise DataException("Cannot look up value schema on non-array and non-map type")
        return self._value_schema

    def validate(self, value: Any) -> None:
        """Check that ``value`` is valid for this schema (``validateValue(Object)``).

        Raises:
            DataException: describing the first problem.
        """
        ConnectSchema.validate_value(self, value)

    @staticmethod
    def validate_value(schema: Schema, value: Any, field_name: str | None = None) -> None:
        """Check that ``value`` is valid for ``schema``: its Python type, range and optionality.

        STRUCT values must have an equal schema and be valid themselves; ARRAY and MAP values are
        checked element by element. Messages follow Kafka's.

        Args:
            schema: the schema to check against.
            value: the value.
            field_name: the field being checked, named in the message.

        Raises:
            DataException: describing the first problem.
        """
        if value is None:
            if not schema.is_optional:
                raise DataException(
                    f'Invalid value: null used for required field: "{_or_null(field_name)}", schema type: {schema.type}'
                )
            return
        if schema.name is None:  # fast path for the common primitive cases
            schema_type = schema.type
            value_type = type(value)
            if _EXACT_TYPES.get(schema_type) is value_type:
                return
            bounds = _INT_RANGES.get(schema_type)
            if bounds is not None and value_type is int and bounds[0] <= value <= bounds[1]:
                return
        check = _LOGICAL_CHECKS.get(schema.name) if schema.name is not None else None
        if check is None:
            check = _TYPE_CHECKS[schema.type]
        problem = check(schema.type, value)
        if problem is not None:
            raise DataException(f'{problem} for field: "{_or_null(field_name)}"')
        schema_type = schema.type
        if schema_type is Type.STRUCT:
            if value.schema != schema:
                raise DataException("Struct schemas do not match.")
            value.validate()
        elif schema_type is Type.ARRAY:
            element_schema = schema.value_schema
            if element_schema is not None:
                for element in value:
                    ConnectSchema.validate_value(element_schema, element)
        elif schema_type is Type.MAP:
            key_schema, value_schema = schema.key_schema, schema.value_schema
            for key, item in value.items():
                if key_schema is not None:
                    ConnectSchema.validate_value(key_schema, key)
                if value_schema is not None:
                    ConnectSchema.validate_value(value_schema, item)

    @staticmethod
    def schema_type(value: Any) -> Type | None:
        """The schema type a schemaless Python value maps to, or ``None`` (Kafka's ``schemaType(Class)``).

        ``int`` maps to INT64 and ``float`` to FLOAT64, the types schemaless JSON produces; logical
        values (``Decimal``, dates and times) have no type without a schema, as in Kafka.
        """
        return _PYTHON_TYPES.get(type(value)) or _schema_type_slow(value)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, ConnectSchema):
            return NotImplemented
        return (
            self._type is other._type
            and self._optional == other._optional
            and self._version == other._version
            and self._name == other._name
            and self._doc == other._doc
            and _deep_equal(self._default, other._default)
            and self._fields == other._fields
            and self._key_schema == other._key_schema
            and self._value_schema == other._value_schema
            and _params(self._parameters) == _params(other._parameters)
        )

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(
                (
                    self._type,
                    self._optional,
                    _hashable(self._default),
                    self._fields,
                    self._key_schema,
                    self._value_schema,
                    self._name,
                    self._version,
                    self._doc,
                    None if self._parameters is None else tuple(sorted(self._parameters.items())),
                )
            )
            object.__setattr__(self, "_hash", cached)
        return cached

    def __str__(self) -> str:
        if self._name is not None:
            return f"Schema{{{self._name}:{self._type}}}"
        return f"Schema{{{self._type}}}"

    def __repr__(self) -> str:
        parts = [self._type.name]
        if self._optional:
            parts.append("optional")
        if self._name is not None:
            parts.append(f"name={self._name!r}")
        if self._version is not None:
            parts.append(f"version={self._version}")
        if self._parameters:
            parts.append(f"parameters={dict(self._parameters)!r}")
        if self._default is not None:
            parts.append(f"default={self._default!r}")
        if self._type is Type.STRUCT:
            inner = ", ".join(f"{f.name}: {f.schema!r}" for f in self._fields)  # type: ignore[union-attr]
            parts.append(f"fields=[{inner}]")
        if self._type is Type.MAP:
            parts.append(f"keys={self._key_schema!r}")
        if self._type in (Type.MAP, Type.ARRAY):
            parts.append(f"values={self._value_schema!r}")
        return f"ConnectSchema({', '.join(parts)})"


def _or_null(name: str | None) -> str:
    return "null" if name is None else name


def _params(parameters: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if parameters is None else dict(parameters)


def _deep_equal(a: Any, b: Any) -> bool:
    if isinstance(a, (bytes, bytearray)) and isinstance(b, (bytes, bytearray)):
        return bytes(a) == bytes(b)
    return bool(a == b)


_HASHABLE_SCALARS = (str, int, float, bool, bytes, decimal.Decimal, datetime.date, datetime.time)


def _hashable(value: Any) -> Any:
    """A hashable stand-in for a (possibly mutable) default value, for schema hashing."""
    if value is None or isinstance(value, _HASHABLE_SCALARS):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, Mapping):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    from connect_spark.api.data.struct import Struct

    if isinstance(value, Struct):
        return (value.schema, tuple(_hashable(value.get_without_default(f.name)) for f in value.schema.fields))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


# --- value checks -------------------------------------------------------------------------------

_Check = Callable[[Type, Any], "str | None"]


def _type_problem(schema_type: Type, value: Any) -> str:
    return f"Invalid Python object for schema type {schema_type}: class {type(value).__name__}"


def _int_check(bits: int) -> _Check:
    low, high = INT_BOUNDS[bits]

    def check(schema_type: Type, value: Any) -> str | None:
        if type(value) is bool or not isinstance(value, int):
            return _type_problem(schema_type, value)
        if not low <= value <= high:
            return f"Invalid value {value} for schema type {schema_type}: out of range [{low}, {high}]"
        return None

    return check


def _instance_check(*classes: type, exclude_bool: bool = False) -> _Check:
    def check(schema_type: Type, value: Any) -> str | None:
        if not isinstance(value, classes) or (exclude_bool and type(value) is bool):
            return _type_problem(schema_type, value)
        return None

    return check


def _struct_check(schema_type: Type, value: Any) -> str | None:
    from connect_spark.api.data.struct import Struct

    return None if isinstance(value, Struct) else _type_problem(schema_type, value)


def _date_check(schema_type: Type, value: Any) -> str | None:
    return None if isinstance(value, datetime.date) else _type_problem(schema_type, value)


def _time_check(schema_type: Type, value: Any) -> str | None:
    return None if isinstance(value, (datetime.time, datetime.datetime)) else _type_problem(schema_type, value)


def _timestamp_check(schema_type: Type, value: Any) -> str | None:
    return None if isinstance(value, datetime.datetime) else _type_problem(schema_type, value)


_TYPE_CHECKS: dict[Type, _Check] = {
    Type.INT8: _int_check(8),
    Type.INT16: _int_check(16),
    Type.INT32: _int_check(32),
    Type.INT64: _int_check(64),
    Type.FLOAT32: _instance_check(float, int, exclude_bool=True),
    Type.FLOAT64: _instance_check(float, int, exclude_bool=True),
    Type.BOOLEAN: _instance_check(bool),
    Type.STRING: _instance_check(str),
    Type.BYTES: _instance_check(bytes, bytearray),
    Type.ARRAY: _instance_check(list, tuple),
    Type.MAP: _instance_check(Mapping),
    Type.STRUCT: _struct_check,
}

_EXACT_TYPES: dict[Type, type] = {
    Type.STRING: str,
    Type.BOOLEAN: bool,
    Type.FLOAT32: float,
    Type.FLOAT64: float,
    Type.BYTES: bytes,
}
_INT_RANGES = {Type.INT8: INT_BOUNDS[8], Type.INT16: INT_BOUNDS[16], Type.INT32: INT_BOUNDS[32],
               Type.INT64: INT_BOUNDS[64]}

_LOGICAL_CHECKS: dict[str, _Check] = {
    DECIMAL_LOGICAL_NAME: _instance_check(decimal.Decimal),
    DATE_LOGICAL_NAME: _date_check,
    TIME_LOGICAL_NAME: _time_check,
    TIMESTAMP_LOGICAL_NAME: _timestamp_check,
}

_PYTHON_TYPES: dict[type, Type] = {
    bool: Type.BOOLEAN,
    int: Type.INT64,
    float: Type.FLOAT64,
    str: Type.STRING,
    bytes: Type.BYTES,
    bytearray: Type.BYTES,
    list: Type.ARRAY,
    tuple: Type.ARRAY,
    dict: Type.MAP,
}


def _schema_type_slow(value: Any) -> Type | None:
    from connect_spark.api.data.struct import Struct

    if isinstance(value, Struct):
        return Type.STRUCT
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, (bytes, bytearray)):
        return Type.BYTES
    if isinstance(value, (list, tuple)):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    return None


# --- builder ------------------------------------------------------------------------------------

_UNSET: Any = object()


class SchemaBuilder:
    """Fluent construction of a :class:`ConnectSchema` (Kafka's ``SchemaBuilder``).

    Every setter returns the builder; :meth:`build` makes the immutable schema::

        schema = (SchemaBuilder.struct().name("com.example.Person").version(1)
                  .field("name", Schema.STRING_SCHEMA)
                  .field("age", SchemaBuilder.int32().optional())
                  .build())

    Unlike Kafka's, a builder is not itself a :class:`Schema`: where a schema is expected
    (``field``, ``array``, ``map``) a builder is built first. Kafka's static ``type(Type)`` is
    :meth:`of_type`. Setting a property twice to different values raises
    :class:`SchemaBuilderException`, as in Kafka.
    """

    __slots__ = ("_type", "_optional", "_default", "_name", "_version", "_doc", "_parameters", "_fields",
                 "_key_schema", "_value_schema")

    def __init__(self, type: Type) -> None:
        if type is None:
            raise SchemaBuilderException("type cannot be null")
        self._type = type
        self._optional: bool | None = None
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] | None = {} if type is Type.STRUCT else None
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories --

    @staticmethod
    def of_type(type: Type) -> "SchemaBuilder":
        """A builder for ``type`` (Kafka's ``SchemaBuilder.type(Type)``)."""
        return SchemaBuilder(type)

    @staticmethod
    def int8() -> "SchemaBuilder":
        return SchemaBuilder(Type.INT8)

    @staticmethod
    def int16() -> "SchemaBuilder":
        return SchemaBuilder(Type.INT16)

    @staticmethod
    def int32() -> "SchemaBuilder":
        return SchemaBuilder(Type.INT32)

    @staticmethod
    def int64() -> "SchemaBuilder":
        return SchemaBuilder(Type.INT64)

    @staticmethod
    def float32() -> "SchemaBuilder":
        return SchemaBuilder(Type.FLOAT32)

    @staticmethod
    def float64() -> "SchemaBuilder":
        return SchemaBuilder(Type.FLOAT64)

    @staticmethod
    def bool() -> "SchemaBuilder":
        return SchemaBuilder(Type.BOOLEAN)

    @staticmethod
    def string() -> "SchemaBuilder":
        return SchemaBuilder(Type.STRING)

    @staticmethod
    def bytes() -> "SchemaBuilder":
        return SchemaBuilder(Type.BYTES)

    @staticmethod
    def struct() -> "SchemaBuilder":
        return SchemaBuilder(Type.STRUCT)

    @staticmethod
    def array(value_schema: "Schema | SchemaBuilder") -> "SchemaBuilder":
        """An ARRAY builder whose elements follow ``value_schema``."""
        if value_schema is None:
            raise SchemaBuilderException("valueSchema cannot be null.")
        builder = SchemaBuilder(Type.ARRAY)
        builder._value_schema = _as_schema(value_schema)
        return builder

    @staticmethod
    def map(key_schema: "Schema | SchemaBuilder", value_schema: "Schema | SchemaBuilder") -> "SchemaBuilder":
        """A MAP builder with the given key and value schemas."""
        if key_schema is None:
            raise SchemaBuilderException("keySchema cannot be null.")
        if value_schema is None:
            raise SchemaBuilderException("valueSchema cannot be null.")
        builder = SchemaBuilder(Type.MAP)
        builder._key_schema = _as_schema(key_schema)
        builder._value_schema = _as_schema(value_schema)
        return builder

    # -- read access --

    @property
    def type(self) -> Type:
        """The type being built."""
        return self._type

    @property
    def is_optional(self) -> bool:
        """Whether the schema being built is optional (so far)."""
        return bool(self._optional)

    # -- setters --

    def optional(self) -> "SchemaBuilder":
        """Make the schema optional."""
        _check_can_set("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> "SchemaBuilder":
        """Make the schema required (the default)."""
        _check_can_set("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> "SchemaBuilder":
        """Set the default value; it must be valid for the schema as built so far.

        Raises:
            SchemaBuilderException: "Invalid default value" when it is not.
        """
        _check_can_set("default", self._default, value)
        try:
            ConnectSchema.validate_value(self._peek(), value)
        except DataException as e:
            raise SchemaBuilderException("Invalid default value") from e
        self._default = value
        return self

    def name(self, name: str | None) -> "SchemaBuilder":
        _check_can_set("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int | None) -> "SchemaBuilder":
        _check_can_set("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str | None) -> "SchemaBuilder":
        _check_can_set("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, name: str, value: str) -> "SchemaBuilder":
        """Set one parameter (insertion order is kept)."""
        if self._parameters is None:
            self._parameters = {}
        self._parameters[name] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> "SchemaBuilder":
        """Add parameters (additive; an empty mapping changes nothing)."""
        if not parameters:
            return self
        if self._parameters is None:
            self._parameters = {}
        self._parameters.update(parameters)
        return self

    def field(self, name: str, schema: "Schema | SchemaBuilder") -> "SchemaBuilder":
        """Append a field to a STRUCT schema.

        Raises:
            SchemaBuilderException: for a non-struct builder, an empty name, a missing schema or a
                duplicate name.
        """
        if self._type is not Type.STRUCT:
            raise SchemaBuilderException(f"Cannot create fields on type {self._type}")
        if not name:
            raise SchemaBuilderException("fieldName cannot be null.")
        if schema is None:
            raise SchemaBuilderException(f"fieldSchema for field {name} cannot be null.")
        assert self._fields is not None
        if name in self._fields:
            raise SchemaBuilderException(f"Cannot create field because of field name duplication {name}")
        self._fields[name] = Field(name, len(self._fields), _as_schema(schema))
        return self

    def has_field(self, name: str) -> bool:
        """True if a STRUCT builder already has a field called ``name``."""
        return self._fields is not None and name in self._fields

    # -- building --

    def build(self) -> ConnectSchema:
        """The immutable schema."""
        return ConnectSchema(
            self._type,
            bool(self._optional),
            self._default,
            self._name,
            self._version,
            self._doc,
            self._parameters,
            None if self._fields is None else list(self._fields.values()),
            self._key_schema,
            self._value_schema,
        )

    def schema(self) -> ConnectSchema:
        """Same as :meth:`build` (Kafka's ``schema()``)."""
        return self.build()

    def _peek(self) -> ConnectSchema:
        return self.build()

    def __repr__(self) -> str:
        return f"SchemaBuilder({self._type.name})"


def _as_schema(schema: "Schema | SchemaBuilder") -> Schema:
    return schema.build() if isinstance(schema, SchemaBuilder) else schema


def _check_can_set(field_name: str, current: Any, value: Any) -> None:
    if current is not None and current is not value and current != value:
        raise SchemaBuilderException(f"Invalid SchemaBuilder call: {field_name} has already been set.")


def _predefined(type_: Type, optional: bool) -> ConnectSchema:
    return ConnectSchema(type_, optional)


Schema.INT8_SCHEMA = _predefined(Type.INT8, False)
Schema.INT16_SCHEMA = _predefined(Type.INT16, False)
Schema.INT32_SCHEMA = _predefined(Type.INT32, False)
Schema.INT64_SCHEMA = _predefined(Type.INT64, False)
Schema.FLOAT32_SCHEMA = _predefined(Type.FLOAT32, False)
Schema.FLOAT64_SCHEMA = _predefined(Type.FLOAT64, False)
Schema.BOOLEAN_SCHEMA = _predefined(Type.BOOLEAN, False)
Schema.STRING_SCHEMA = _predefined(Type.STRING, False)
Schema.BYTES_SCHEMA = _predefined(Type.BYTES, False)
Schema.OPTIONAL_INT8_SCHEMA = _predefined(Type.INT8, True)
Schema.OPTIONAL_INT16_SCHEMA = _predefined(Type.INT16, True)
Schema.OPTIONAL_INT32_SCHEMA = _predefined(Type.INT32, True)
Schema.OPTIONAL_INT64_SCHEMA = _predefined(Type.INT64, True)
Schema.OPTIONAL_FLOAT32_SCHEMA = _predefined(Type.FLOAT32, True)
Schema.OPTIONAL_FLOAT64_SCHEMA = _predefined(Type.FLOAT64, True)
Schema.OPTIONAL_BOOLEAN_SCHEMA = _predefined(Type.BOOLEAN, True)
Schema.OPTIONAL_STRING_SCHEMA = _predefined(Type.STRING, True)
Schema.OPTIONAL_BYTES_SCHEMA = _predefined(Type.BYTES, True)
