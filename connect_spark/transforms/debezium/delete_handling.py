"""What ExtractNewRecordState does with deletes, tombstones and truncates (``delete.tombstone.handling.mode``).

Debezium writes a delete as two records: the delete event (``op=d``, ``after`` null) and a tombstone
(same key, null value) for log compaction. The modes:

* ``drop``: the delete event and the tombstone are dropped;
* ``tombstone`` (the default): the delete event becomes a record with a null value (and ``after``'s
  schema); the tombstone is dropped;
* ``rewrite``: the delete event becomes its ``before`` row with ``__deleted=true``, every other row gets
  ``__deleted=false``; the tombstone is dropped;
* ``rewrite-with-tombstone``: as ``rewrite``, and the tombstone is kept;
* ``delete-to-tombstone``: the delete event becomes a tombstone (null value, no value schema); the
  tombstone is dropped.

A change event whose ``after`` and ``before`` are both null (a truncate, a logical decoding message,
or a delete that carries no ``before``) is dropped in every mode.

Before Debezium 3.2 the same choice was made with ``delete.handling.mode`` (``drop``, ``none``,
``rewrite``) and ``drop.tombstones`` (true by default); Debezium 3.2 removed both. They are accepted
here as Debezium 2.x to 3.1 read them when ``delete.tombstone.handling.mode`` is not set
(:meth:`DeleteHandling.legacy`); without any of the three keys the mode is ``tombstone``, Debezium 3.6's
default (where Debezium 3.1 dropped deletes).

The row is taken out with :class:`~connect_spark.transforms.extract_field.ExtractFieldValue` and the
``__deleted`` field added with :class:`~connect_spark.transforms.insert_field.InsertFieldValue`, as
Debezium delegates to Kafka's ``ExtractField`` and ``InsertField``.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from connect_spark.api.data import Schema, Struct
from connect_spark.api.records import SinkRecord
from connect_spark.transforms.debezium import envelope
from connect_spark.transforms.extract_field import ExtractFieldValue
from connect_spark.transforms.insert_field import InsertFieldValue

__all__ = ["DeleteAction", "DeleteHandling", "ExtractRecordStrategy", "MODES", "DELETED_FIELD", "DEFAULT_MODE"]

log = logging.getLogger(__name__)

DELETED_FIELD = "__deleted"
"""The field the rewrite modes add: ``"true"`` on a delete, ``"false"`` otherwise."""


class DeleteAction(enum.Enum):
    """What becomes of a delete event."""

    DROP = "drop"
    NULL_VALUE = "null value"
    """The ``after`` field extracted: a null value that keeps ``after``'s schema."""
    TOMBSTONE = "tombstone"
    """A tombstone: null value and no value schema."""
    REWRITE = "rewrite"
    """The ``before`` row with ``__deleted=true``."""


@dataclass(frozen=True)
class DeleteHandling:
    """A delete handling choice.

    Attributes:
        on_delete: what becomes of a delete event.
        keep_tombstones: whether tombstones pass (otherwise they are dropped).
    """

    on_delete: DeleteAction
    keep_tombstones: bool

    @property
    def rewrites(self) -> bool:
        """True when rows are marked with ``__deleted``."""
        return self.on_delete is DeleteAction.REWRITE

    @classmethod
    def of_mode(cls, mode: str) -> "DeleteHandling":
        """The handling of a ``delete.tombstone.handling.mode`` value (any case, surrounding blanks ignored)."""
        return MODES[mode.strip().lower()]

    @classmethod
    def legacy(cls, delete_handling_mode: str | None, drop_tombstones: bool | None) -> "DeleteHandling":
        """The handling Debezium 2.x-3.1 derived from ``delete.handling.mode`` (default ``drop``) and
        ``drop.tombstones`` (default true)."""
        action = _LEGACY_ACTIONS[(delete_handling_mode or "drop").strip().lower()]
        return cls(action, drop_tombstones is False)


DEFAULT_MODE = "tombstone"

MODES = {
    "drop": DeleteHandling(DeleteAction.DROP, False),
    "tombstone": DeleteHandling(DeleteAction.NULL_VALUE, False),
    "rewrite": DeleteHandling(DeleteAction.REWRITE, False),
    "rewrite-with-tombstone": DeleteHandling(DeleteAction.REWRITE, True),
    "delete-to-tombstone": DeleteHandling(DeleteAction.TOMBSTONE, False),
}
"""``delete.tombstone.handling.mode`` values and what each does."""

_LEGACY_ACTIONS = {"drop": DeleteAction.DROP, "none": DeleteAction.NULL_VALUE, "rewrite": DeleteAction.REWRITE}


def _extractor(field: str) -> ExtractFieldValue:
    extract = ExtractFieldValue()
    extract.configure({"field": field})
    return extract


def _marker(value: str, replace_null_with_default: bool) -> InsertFieldValue:
    insert = InsertFieldValue()
    insert.configure({"static.field": DELETED_FIELD, "static.value": value,
                      "replace.null.with.default": replace_null_with_default})
    return insert


class ExtractRecordStrategy:
    """Takes the row out of a change event according to a :class:`DeleteHandling`.

    Called by ExtractNewRecordState for every record; each method returns the new record or ``None``
    to drop it.

    Args:
        handling: the delete handling.
        replace_null_with_default: whether a rewritten row's null fields take their defaults.
    """

    def __init__(self, handling: DeleteHandling, replace_null_with_default: bool) -> None:
        self.handling = handling
        self.replace_null_with_default = replace_null_with_default
        self._after = _extractor(envelope.AFTER)
        self._before = _extractor(envelope.BEFORE)
        self._removed = _marker("true", replace_null_with_default)
        self._kept = _marker("false", replace_null_with_default)

    def after(self, record: SinkRecord) -> SinkRecord:
        """The record with its value replaced by the event's ``after`` field (and that field's schema)."""
        return self._after.apply(record)  # type: ignore[return-value]

    def before(self, record: SinkRecord) -> SinkRecord:
        """The record with its value replaced by the event's ``before`` field (and that field's schema)."""
        return self._before.apply(record)  # type: ignore[return-value]

    def marked_schema(self, schema: Schema, deleted: bool) -> Schema:
        """The schema of a row of ``schema`` once marked with ``__deleted`` (rewrite modes); called by the
        column form (:mod:`connect_spark.columnar.debezium_transforms`), which must give the per-record schema."""
        return (self._removed if deleted else self._kept).output_schema(schema)

    def handle_truncate(self, record: SinkRecord) -> SinkRecord | None:
        """A change event with neither ``before`` nor ``after``: dropped."""
        log.debug("Dropping change event without before and after at %s", record.coordinates())
        return None

    def handle_tombstone(self, record: SinkRecord) -> SinkRecord | None:
        """A tombstone: kept only by ``rewrite-with-tombstone`` (or ``drop.tombstones=false``)."""
        return record if self.handling.keep_tombstones else None

    def handle_delete(self, record: SinkRecord) -> SinkRecord | None:
        """A delete event (``after`` null, ``before`` set)."""
        action = self.handling.on_delete
        if action is DeleteAction.DROP:
            return None
        if action is DeleteAction.NULL_VALUE:
            return self.after(record)
        if action is DeleteAction.TOMBSTONE:
            return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key,
                                     None, None, record.timestamp)
        old = self.before(record)
        return self._removed.apply(old) if isinstance(old.value, Struct) else old

    def handle_record(self, record: SinkRecord) -> SinkRecord:
        """An insert, update or snapshot read: the ``after`` row (marked ``__deleted=false`` when rewriting)."""
        new = self.after(record)
        if self.handling.rewrites and isinstance(new.value, Struct):
            return self._kept.apply(new)  # type: ignore[return-value]
        return new

    def close(self) -> None:
        for delegate in (self._after, self._before, self._removed, self._kept):
            delegate.close()
