"""One entry of ExtractNewRecordState's ``add.fields`` / ``add.headers``: which envelope field, under what name.

An entry is ``[struct.]field[:new_name]``:

* ``op``, ``ts_ms``, ``ts_us``, ``ts_ns`` name fields of the envelope itself; ``id``, ``total_order``,
  ``data_collection_order`` fields of ``transaction``; ``updateDescription`` (MongoDB) its own struct;
  any other plain name a field of ``source`` (``lsn`` is ``source.lsn``);
* ``struct.field`` names the struct explicitly (``source.ts_ms``, ``transaction.id``); only the first
  two dotted parts count (``a.b.c`` is ``a.b``);
* the added field or header is called ``prefix + field`` for a plain name, ``prefix + struct_field``
  for a qualified one (``__source_ts_ms``), or ``prefix + new_name`` when renamed
  (``source.ts_ms:event_ts`` gives ``__event_ts``);
* a field the struct lacks is looked up in the envelope itself (a field another transform added there);
  a field found in neither is left out, and so is a value whose struct is null (``transaction`` in a
  snapshot) given as null.

Built once per entry by :class:`~connect_spark.transforms.debezium.extract_new_record_state.ExtractNewRecordState`
when it is configured; :meth:`FieldReference.schema_in` and :meth:`FieldReference.value_in` are called for
every change event.
"""

from __future__ import annotations

from typing import Any

from connect_spark.api.data import Schema, SchemaBuilder, Struct, Type
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.debezium.settings import java_split
from connect_spark.transforms.util import copy_schema_basics

__all__ = ["FieldReference", "field_references", "UPDATE_DESCRIPTION"]

UPDATE_DESCRIPTION = "updateDescription"
"""The struct MongoDB's change events describe an update in."""

_ENVELOPE_FIELDS = frozenset((envelope.OPERATION, envelope.TIMESTAMP, envelope.TIMESTAMP_US, envelope.TIMESTAMP_NS))
_TRANSACTION_FIELDS = frozenset((envelope.TRANSACTION_ID, envelope.TRANSACTION_TOTAL_ORDER,
                                 envelope.TRANSACTION_DATA_COLLECTION_ORDER))


def _struct_of(field: str) -> str | None:
    """The struct a plain field name refers to; ``None`` for a field of the envelope itself."""
    if field in _TRANSACTION_FIELDS:
        return envelope.TRANSACTION
    if field in _ENVELOPE_FIELDS:
        return None
    if field == UPDATE_DESCRIPTION:
        return UPDATE_DESCRIPTION
    return envelope.SOURCE


class FieldReference:
    """A field of the change event to copy into the row or a header.

    Args:
        prefix: ``add.fields.prefix`` or ``add.headers.prefix``.
        spec: one entry, ``[struct.]field[:new_name]``.
        key: the key the entry comes from, for the error.

    Attributes:
        struct: the struct holding the field, or ``None`` for a field of the envelope.
        field: the field's name.
        new_field: the name of the added field or header.

    Raises:
        ConfigException: for an entry with more than one ``:``, or nothing before it.
    """

    __slots__ = ("struct", "field", "new_field")

    def __init__(self, prefix: str, spec: str, key: str = "add.fields") -> None:
        parts = java_split(spec, ":")
        path = java_split(parts[0], ".") if parts else []
        if not path or len(parts) > 2:
            raise ConfigException(f"Unexpected field name: {spec}; use [struct.]field[:new_name]", key, spec)
        self.field = path[0] if len(path) == 1 else path[1]
        self.struct = _struct_of(self.field) if len(path) == 1 else path[0]
        if len(parts) == 2:
            self.new_field = prefix + parts[1]
        elif len(path) == 1:
            self.new_field = prefix + self.field
        else:
            self.new_field = f"{prefix}{self.struct}_{self.field}"

    def schema_in(self, envelope_schema: Schema) -> Schema | None:
        """The (optional) schema of the added field or header for this envelope, or ``None`` to leave it out.

        Raises:
            DataException: the envelope has no field for the named struct (Debezium fails on it too).
        """
        parent = envelope_schema
        if self.struct is not None:
            holder = envelope_schema.field(self.struct)
            if holder is None:
                raise DataException(f"Cannot add {self.field} of {self.struct}: the change event has no field "
                                    f"{self.struct} (schema {envelope_schema.name})")
            parent = holder.schema
        found = parent.field(self.field)
        if found is None:
            found = envelope_schema.field(self.field)
            if found is None:
                return None
        source = found.schema
        builder = SchemaBuilder.array(source.value_schema) if source.type is Type.ARRAY else SchemaBuilder(source.type)
        return copy_schema_basics(source, builder).optional().build()

    def value_in(self, event: Struct) -> Any:
        """The field's value in a change event, without defaults (``None`` when its struct is null)."""
        parent = event if self.struct is None else event.get_without_default(self.struct)
        if parent is None:
            return None
        if not isinstance(parent, Struct):
            raise DataException(f"{self.struct} of the change event is not a struct")
        if parent.schema.field(self.field) is not None:
            return parent.get_without_default(self.field)
        return event.get_without_default(self.field)

    def __repr__(self) -> str:
        return f"FieldReference({self.struct}.{self.field} -> {self.new_field})"


def field_references(prefix: str, entries: list[str], key: str) -> list[FieldReference]:
    """The references of a list of entries (already split and trimmed)."""
    return [FieldReference(prefix, entry, key) for entry in entries]
