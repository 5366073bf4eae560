"""Struct: a record value with a schema (Kafka's ``org.apache.kafka.connect.data.Struct``).

Mapping to Kafka: ``put``/``get``/``getWithoutDefault``/``validate`` keep their meaning
(``get_without_default``); the typed getters are ``get_int8`` ... ``get_struct``.
"""

from __future__ import annotations

from typing import Any, Iterator

from connect_spark.api.data.schema import ConnectSchema, Field, Schema, Type
from connect_spark.api.errors import DataException

__all__ = ["Struct"]


class Struct:
    """Field values for a STRUCT schema; only the schema's fields may be set, each is validated.

    ``put`` returns the struct, so values chain::

        person = Struct(schema).put("name", "Bobby McGee").put("age", 21)

    Two structs are equal when their schemas and values are equal. A struct is mutable and so not
    hashable.

    Args:
        schema: a STRUCT schema.

    Raises:
        DataException: if ``schema`` is not a STRUCT schema.
    """

    __slots__ = ("_schema", "_values")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataException(f"Not a struct schema: {schema}")
        self._schema = schema
        self._values: list[Any] = [None] * len(schema.fields)

    @classmethod
    def from_valid_values(cls, schema: Schema, values: list[Any]) -> "Struct":
        """A struct of ``schema`` holding ``values`` (one per field, in field order), taken as they are.

        For code that produced the values itself and knows each one is what ``put`` would accept (the
        JsonConverter's compiled payload converters, the columnar readers of Arrow rows): nothing is checked, and the list is kept, not copied.
        Anything else should use ``Struct(schema).put(...)``.
        """
        struct = object.__new__(cls)
        struct._schema = schema
        struct._values = values
        return struct

    @property
    def schema(self) -> Schema:
        """The struct's schema."""
        return self._schema

    def _lookup(self, field: "str | Field") -> Field:
        if isinstance(field, Field):
            return field
        found = self._schema.field(field)
        if found is None:
            raise DataException(f"{field} is not a valid field name")
        return found

    def get(self, field: "str | Field") -> Any:
        """The field's value, or the field schema's default when the value is ``None``.

        Raises:
            DataException: if there is no such field.
        """
        f = self._lookup(field)
        value = self._values[f.index]
        if value is None:
            return f.schema.default_value
        return value

    def field_values(self) -> list[Any]:
        """Every field's value in schema order, each as :meth:`get` gives it (the default for ``None``).

        A new list each call; for readers that take many fields of many structs of one schema.
        """
        values = self._values
        if None not in values:
            return list(values)
        return [value if value is not None else f.schema.default_value
                for value, f in zip(values, self._schema.fields)]

    def get_without_default(self, field: "str | Field") -> Any:
        """The field's raw value, without falling back to the default."""
        return self._values[self._lookup(field).index]

    def _get_check_type(self, name: str, type_: Type) -> Any:
        f = self._lookup(name)
        if f.schema.type is not type_:
            raise DataException(f"Field '{name}' is not of type {type_}")
        return self._values[f.index]

    def get_int8(self, name: str) -> int | None:
        return self._get_check_type(name, Type.INT8)

    def get_int16(self, name: str) -> int | None:
        return self._get_check_type(name, Type.INT16)

    def get_int32(self, name: str) -> int | None:
        return self._get_check_type(name, Type.INT32)

    def get_int64(self, name: str) -> int | None:
        return self._get_check_type(name, Type.INT64)

    def get_float32(self, name: str) -> float | None:
        return self._get_check_type(name, Type.FLOAT32)

    def get_float64(self, name: str) -> float | None:
        return self._get_check_type(name, Type.FLOAT64)

    def get_boolean(self, name: str) -> bool | None:
        return self._get_check_type(name, Type.BOOLEAN)

    def get_string(self, name: str) -> str | None:
        return self._get_check_type(name, Type.STRING)

    def get_bytes(self, name: str) -> bytes | None:
        value = self._get_check_type(name, Type.BYTES)
        return bytes(value) if isinstance(value, bytearray) else value

    def get_array(self, name: str) -> list[Any] | None:
        return self._get_check_type(name, Type.ARRAY)

    def get_map(self, name: str) -> dict[Any, Any] | None:
        return self._get_check_type(name, Type.MAP)

    def get_struct(self, name: str) -> "Struct | None":
        return self._get_check_type(name, Type.STRUCT)

    def put(self, field: "str | Field", value: Any) -> "Struct":
        """Set a field after validating the value against the field's schema; returns the struct.

        Raises:
            DataException: for an unknown field or an invalid value.
        """
        if field is None:
            raise DataException("field cannot be null.")
        f = self._lookup(field)
        ConnectSchema.validate_value(f.schema, value, f.name)
        self._values[f.index] = value
        return self

    def validate(self) -> None:
        """Check that every required field without a default is set and every value is valid.

        Raises:
            DataException: describing the first problem.
        """
        for f in self._schema.fields:
            value = self._values[f.index]
            field_schema = f.schema
            if value is None and (field_schema.is_optional or field_schema.default_value is not None):
                continue
            ConnectSchema.validate_value(field_schema, value, f.name)

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(field name, value)`` pairs in schema order, defaults applied (a Python convenience)."""
        for f in self._schema.fields:
            yield f.name, self.get(f)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Struct):
            return NotImplemented
        return self._schema == other._schema and self._values == other._values

    def __repr__(self) -> str:
        parts = [f"{f.name}={_show(self._values[f.index])}" for f in self._schema.fields
                 if self._values[f.index] is not None]
        return "Struct{" + ",".join(parts) + "}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_struct, (self._schema, list(self._values)))


def _rebuild_struct(schema: Schema, values: list[Any]) -> Struct:
    struct = Struct(schema)
    struct._values = values
    return struct


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return repr(value) if not isinstance(value, Struct) else str(value)
