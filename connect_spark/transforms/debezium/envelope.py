"""The change event envelope of Debezium (``io.debezium.data.Envelope``): field names, op codes, validity.

A Debezium change event's value is a struct whose schema is named ``<topic>.Envelope``, with the row
before and after the change (``before``, ``after``), the operation code (``op``), where it came from
(``source``), the transaction it belongs to (``transaction``) and when the connector saw it (``ts_ms``,
``ts_us``, ``ts_ns``). Debezium's transforms recognize a change event by the schema name alone
(:func:`is_valid_envelope`); anything else (heartbeats, schema change events, schemaless values) passes
through them unchanged.

Read by every module of :mod:`connect_spark.transforms.debezium`. :class:`Envelope` builds change events
the way Debezium's connectors do, for tests and tools that need some.
"""

from __future__ import annotations

import enum

from typing import Any

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.records import SinkRecord

__all__ = [
    "BEFORE",
    "AFTER",
    "OPERATION",
    "SOURCE",
    "TRANSACTION",
    "TIMESTAMP",
    "TIMESTAMP_US",
    "TIMESTAMP_NS",
    "TRANSACTION_ID",
    "TRANSACTION_TOTAL_ORDER",
    "TRANSACTION_DATA_COLLECTION_ORDER",
    "SCHEMA_NAME_SUFFIX",
    "TRANSACTION_BLOCK_SCHEMA",
    "Operation",
    "Envelope",
    "envelope_schema_name",
    "is_envelope_schema",
    "is_valid_envelope",
]

BEFORE = "before"
AFTER = "after"
OPERATION = "op"
SOURCE = "source"
TRANSACTION = "transaction"
TIMESTAMP = "ts_ms"
TIMESTAMP_US = "ts_us"
TIMESTAMP_NS = "ts_ns"

#: Fields of the ``transaction`` struct (Debezium's ``TransactionStructMaker``).
TRANSACTION_ID = "id"
TRANSACTION_TOTAL_ORDER = "total_order"
TRANSACTION_DATA_COLLECTION_ORDER = "data_collection_order"

SCHEMA_NAME_SUFFIX = ".Envelope"
"""What the name of every envelope schema ends with."""


class Operation(enum.Enum):
    """The ``op`` codes of a change event."""

    READ = "r"
    """A row read by a snapshot."""
    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"
    MESSAGE = "m"
    """A generic message (PostgreSQL's logical decoding messages)."""

    @classmethod
    def for_code(cls, code: str | None) -> "Operation | None":
        """The operation of a code in any case, or ``None`` for ``None`` or an unknown code."""
        if code is None:
            return None
        return _BY_CODE.get(code.lower())


_BY_CODE = {operation.value: operation for operation in Operation}


def envelope_schema_name(topic: str) -> str:
    """The envelope schema name Debezium gives a topic's change events (``<topic>.Envelope``)."""
    return topic + SCHEMA_NAME_SUFFIX


def is_envelope_schema(schema: Schema) -> bool:
    """True when the schema's name ends with ``.Envelope`` (a schema without a name is no envelope)."""
    name = schema.name
    return name is not None and name.endswith(SCHEMA_NAME_SUFFIX)


def is_valid_envelope(record: SinkRecord) -> bool:
    """True when the record's value schema is an envelope schema (Debezium's ``SmtManager.isValidEnvelope``).

    Only the schema is looked at: a tombstone keeping an envelope schema counts, a schemaless value never does.
    """
    return record.value_schema is not None and is_envelope_schema(record.value_schema)


TRANSACTION_BLOCK_SCHEMA = (SchemaBuilder.struct().optional().name("event.block").version(1)
                            .field(TRANSACTION_ID, Schema.STRING_SCHEMA)
                            .field(TRANSACTION_TOTAL_ORDER, Schema.INT64_SCHEMA)
                            .field(TRANSACTION_DATA_COLLECTION_ORDER, Schema.INT64_SCHEMA)
                            .build())
"""The schema of the ``transaction`` field (Debezium's ``event.block``)."""


class Envelope:
    """The change events of one table, built as Debezium's connectors build them (Debezium's ``Envelope``).

    Example::

        events = Envelope.define("shop.public.orders", row_schema, source_schema)
        created = events.create(row, source, ts_ms=1700000000000)

    Args:
        schema: the envelope schema (see :meth:`define`).

    Attributes:
        schema: the envelope schema.
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    @classmethod
    def define(cls, topic: str, row_schema: Schema, source_schema: Schema,
               transaction_schema: Schema = TRANSACTION_BLOCK_SCHEMA) -> "Envelope":
        """The envelope ``<topic>.Envelope`` (version 2) of rows of ``row_schema`` (which should be optional)."""
        schema = (SchemaBuilder.struct().name(envelope_schema_name(topic)).version(2)
                  .field(BEFORE, row_schema).field(AFTER, row_schema).field(SOURCE, source_schema)
                  .field(TRANSACTION, transaction_schema).field(OPERATION, Schema.STRING_SCHEMA)
                  .field(TIMESTAMP, Schema.OPTIONAL_INT64_SCHEMA).field(TIMESTAMP_US, Schema.OPTIONAL_INT64_SCHEMA)
                  .field(TIMESTAMP_NS, Schema.OPTIONAL_INT64_SCHEMA)
                  .build())
        return cls(schema)

    def _event(self, operation: Operation, before: Any, after: Any, source: Any, ts_ms: int | None,
               transaction: Struct | None) -> Struct:
        event = Struct(self.schema).put(OPERATION, operation.value).put(BEFORE, before).put(AFTER, after)
        event.put(SOURCE, source).put(TRANSACTION, transaction)
        if ts_ms is not None:
            event.put(TIMESTAMP, ts_ms).put(TIMESTAMP_US, ts_ms * 1000).put(TIMESTAMP_NS, ts_ms * 1_000_000)
        return event

    def read(self, row: Struct, source: Struct, ts_ms: int | None = None) -> Struct:
        """A snapshot read (``op=r``) of ``row``."""
        return self._event(Operation.READ, None, row, source, ts_ms, None)

    def create(self, row: Struct, source: Struct, ts_ms: int | None = None,
               transaction: Struct | None = None) -> Struct:
        """An insert (``op=c``) of ``row``."""
        return self._event(Operation.CREATE, None, row, source, ts_ms, transaction)

    def update(self, before: Struct | None, after: Struct, source: Struct, ts_ms: int | None = None,
               transaction: Struct | None = None) -> Struct:
        """An update (``op=u``); ``before`` is ``None`` when the table does not log old rows."""
        return self._event(Operation.UPDATE, before, after, source, ts_ms, transaction)

    def delete(self, before: Struct | None, source: Struct, ts_ms: int | None = None,
               transaction: Struct | None = None) -> Struct:
        """A delete (``op=d``); ``before`` is the old row (its key columns only, by PostgreSQL's default)."""
        return self._event(Operation.DELETE, before, None, source, ts_ms, transaction)

    def truncate(self, source: Struct, ts_ms: int) -> Struct:
        """A truncate (``op=t``): neither ``before`` nor ``after``."""
        return self._event(Operation.TRUNCATE, None, None, source, ts_ms, None)
