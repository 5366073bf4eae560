"""The single message transform (SMT) and predicate contracts.

Configured from ``transforms.<alias>.*`` and ``predicates.<alias>.*`` keys (prefix stripped). The
runtime applies the transforms in the listed order to every converted record (stage
``TRANSFORMATION``); a transform guarded by a predicate runs only when ``negate ^ predicate.test``.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.api.records import SinkRecord

if TYPE_CHECKING:
    from connect_spark.config.definition import ConfigDef

__all__ = ["Transformation", "Predicate"]


class Transformation(abc.ABC):
    """Changes one record at a time, or drops it by returning ``None``.

    Build the output with ``record.new_record(...)`` so that the offset and the ``original_*``
    coordinates are kept. A :class:`~connect_spark.api.errors.DataException` marks the record failed.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Called once before first use with the transform's own keys."""

    @abc.abstractmethod
    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Return the transformed record, or ``None`` to drop it (its offset is still committed)."""

    def config(self) -> "ConfigDef":
        """The transform's configuration keys; validated before the connector starts."""
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def close(self) -> None:
        """Called when the runtime no longer needs the transform."""


class Predicate(abc.ABC):
    """Decides whether a guarded transformation applies to a record."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Called once before first use with the predicate's own keys."""

    @abc.abstractmethod
    def test(self, record: SinkRecord) -> bool:
        """True when the guarded transform should apply (before ``negate``)."""

    def config(self) -> "ConfigDef":
        from connect_spark.config.definition import ConfigDef

        return ConfigDef()

    def close(self) -> None:
        """Called when the runtime no longer needs the predicate."""
