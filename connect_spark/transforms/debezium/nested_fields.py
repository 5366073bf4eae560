"""Adding fields, possibly nested (``parent.child``), to a struct: what HeaderToValue does with its ``fields``.

Debezium's ``ConnectRecordUtil.makeNewSchema`` / ``makeUpdatedValue``, reproduced with their rules:

* a plain name is added at the top level (unless a field of that name is already there, whose schema is
  kept); ``a.b`` is added as ``b`` inside the struct field ``a``, whose schema is rebuilt (as a required
  struct) with the new field;
* when the top-level struct has no field ``a``, a new optional struct ``a`` is added holding ``b``
  (only the second part of a longer path is used there);
* a struct field is rebuilt when any nested name contains its name followed by a dot; a nested name
  whose parent is a primitive field is an error;
* the values of the existing fields are copied with their defaults applied, and null ones are left unset.

Called by :class:`~connect_spark.transforms.debezium.header_to_value.HeaderToValue` for every record
that carries one of its headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import DataException
from connect_spark.transforms.debezium.settings import java_split
from connect_spark.transforms.util import copy_schema_basics, require_struct

__all__ = ["NewEntry", "make_new_schema", "make_updated_value"]

ROOT = "payload"
"""The name the top level goes by while the struct is walked."""


@dataclass(frozen=True)
class NewEntry:
    """A field to add: its (possibly dotted) name, schema and value."""

    name: str
    schema: Schema | None
    value: Any


def make_new_schema(schema: Schema, entries: list[NewEntry]) -> Schema:
    """``schema`` with the entries' fields added.

    Raises:
        DataException: a nested entry's parent is a primitive field.
        SchemaBuilderException: an entry without a schema, or two new fields of one name.
    """
    nested = _nested(entries)
    _check_parents(schema, nested)
    return _new_schema(ROOT, schema, entries, nested, 0)


def make_updated_value(value: Struct, entries: list[NewEntry], schema: Schema) -> Struct:
    """A struct of ``schema`` (from :func:`make_new_schema`) with ``value``'s fields and the entries' values."""
    return _updated_value(ROOT, value, entries, schema, _nested(entries), 0)


def _nested(entries: list[NewEntry]) -> list[str]:
    return [entry.name for entry in entries if "." in entry.name]


def _check_parents(schema: Schema, nested: list[str]) -> None:
    for name in nested:
        current = schema
        for parent in java_split(name, ".")[:-1]:
            field = current.field(parent)
            if field is None:
                break
            if field.schema.type.is_primitive:
                raise DataException(f"Field '{parent}' is a primitive type, not a struct. "
                                    f"Cannot add nested field '{name}'.")
            current = field.schema


def _contains_children(field_name: str, nested: list[str]) -> bool:
    prefix = field_name + "."
    return any(prefix in name for name in nested)


def _name_at_level(entry_name: str, current: str, level: int) -> str | None:
    """The name the entry gets in the struct being built at ``level`` (``current``), or ``None``."""
    parts = java_split(entry_name, ".")
    if len(parts) == 1 and current == ROOT:
        return parts[0]
    if len(parts) == level + 1 and parts[0 if level == 0 else level - 1] == current:
        return parts[level]
    return None


def _new_parents(current: str, schema: Schema, nested: list[str], level: int) -> list[str]:
    """The struct fields to create at this level for nested entries whose parent does not exist."""
    existing = {field.name for field in schema.fields}
    parents: list[str] = []
    for name in nested:
        parts = java_split(name, ".")
        at_level = (level == 0 and current == ROOT) or (0 < level < len(parts) and parts[level - 1] == current)
        if at_level and level < len(parts) - 1:
            parent = parts[level]
            if parent not in existing and parent not in parents:
                parents.append(parent)
    return parents


def _child_of_new_parent(entry_name: str, parent: str, current: str, level: int) -> str | None:
    parts = java_split(entry_name, ".")
    if level == 0 and current == ROOT:
        if len(parts) > 1 and parts[0] == parent:
            return parts[1]
    elif level > 0:
        if ".".join(parts[:level + 1]) == parent and level + 1 < len(parts):
            return parts[level + 1]
    return None


def _new_schema(current: str, schema: Schema, entries: list[NewEntry], nested: list[str], level: int) -> Schema:
    if schema.type.is_primitive:
        return schema
    builder = copy_schema_basics(schema, SchemaBuilder.struct())
    for field in schema.fields:
        if _contains_children(field.name, nested):
            builder.field(field.name, _new_schema(field.name, field.schema, entries, nested, level + 1))
        else:
            builder.field(field.name, field.schema)
    for entry in entries:
        name = _name_at_level(entry.name, current, level)
        if name is not None and not builder.has_field(name):
            builder.field(name, entry.schema)  # type: ignore[arg-type]
    for parent in _new_parents(current, schema, nested, level):
        parent_builder = SchemaBuilder.struct().optional()
        for entry in entries:
            child = _child_of_new_parent(entry.name, parent, current, level)
            if child is not None:
                parent_builder.field(child, entry.schema)  # type: ignore[arg-type]
        builder.field(parent, parent_builder.build())
    return builder.build()


def _updated_value(current: str, value: Struct, entries: list[NewEntry], schema: Schema, nested: list[str],
                   level: int) -> Struct:
    updated = Struct(schema)
    for field in value.schema.fields:
        field_value = value.get(field)
        if field_value is None:
            continue
        if _contains_children(field.name, nested):
            child = require_struct(field_value, "Nested field")
            child_field = schema.field(field.name)
            if child_field is None:
                raise DataException(f"{field.name} is not a valid field name")
            updated.put(field.name, _updated_value(field.name, child, entries, child_field.schema, nested, level + 1))
        else:
            updated.put(field.name, field_value)
    for entry in entries:
        name = _name_at_level(entry.name, current, level)
        if name is not None:
            updated.put(name, entry.value)
    for parent in _new_parents(current, value.schema, nested, level):
        parent_field = schema.field(parent)
        if parent_field is None:
            continue
        parent_value = Struct(parent_field.schema)
        for entry in entries:
            child = _child_of_new_parent(entry.name, parent, current, level)
            if child is not None:
                parent_value.put(child, entry.value)
        updated.put(parent, parent_value)
    return updated
