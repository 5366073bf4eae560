"""The contract of the plan's column converters: one Kafka binary column (``key`` or ``value``) as Spark
column expressions.

:func:`connect_spark.columnar.plan.compile_plan` picks one :class:`ColumnConverter` subclass per side (the
plan's byte, string and JSON converters, :class:`~connect_spark.columnar.avro.AvroColumns`);
:meth:`~connect_spark.columnar.plan.ColumnarPlan.apply` calls :meth:`ColumnConverter.needs_sample` and
:meth:`ColumnConverter.resolve` once per batch it builds a projection for, reads :attr:`ColumnConverter.hoisted`
and :attr:`ColumnConverter.hoisted_derived` right after ``resolve`` and :attr:`ColumnConverter.reused` to report
whether a learned shape was reused, and calls :meth:`ColumnConverter.forget` (through ``forget_samples``) when
too many rows of a batch fell back.
:class:`Part` is what ``resolve`` gives: the converted key or value, which transforms then rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect_spark.api.data import Schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ColumnConverter", "Part"]


@dataclass(frozen=True)
class Part:
    """The key or the value while the plan builds it.

    Attributes:
        column: the frame column expression.
        schema: the Connect schema of non-null values (``None``: schemaless).
        null_schema: the Connect schema a record with a null here carries.
        spark_type: the Spark type of ``column`` (needed for schemaless structs).
        fields: set by transforms that build a struct: ``(name, column, Spark type)`` per field, so the
            next transform reads the fields directly instead of re-extracting them from ``column``
            (which would grow the expression tree exponentially along a chain).
        null: with ``fields``, the condition under which ``column`` is null.
    """

    column: "Column"
    schema: Schema | None
    null_schema: Schema | None
    spark_type: Any
    fields: tuple[tuple[str, "Column", Any], ...] | None = None
    null: "Column | None" = None


class ColumnConverter:
    """A converter as column expressions over one binary column (``key`` or ``value``).

    Data-dependent converters (JSON, Avro) learn the batch's shape from a sample and keep it: the next
    batches reuse it without sampling (``reused`` says whether the last ``resolve`` did) until
    :meth:`forget` is called, which the runtime does when too many rows of a batch fell back.
    Subclasses override :meth:`resolve`, and :meth:`forget` and :meth:`needs_sample` when they learn.
    """

    reused = False
    #: ``(column name, expression)`` the last ``resolve`` wants computed once per row before the staged
    #: projection (a parse its expressions read many times: Spark does not share a subexpression that
    #: sits in conditional branches, so it would parse once per reference).
    hoisted: tuple[tuple[str, "Column"], ...] = ()
    #: ``(column name, expression)`` over :attr:`hoisted` columns, computed once per row in a projection after
    #: theirs (a Decimal's bytes decoded from the parsed text: read by the value and by the exactness guard).
    hoisted_derived: tuple[tuple[str, "Column"], ...] = ()

    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        """The converted part and the condition under which a row converts exactly (column expressions over
        ``name``); ``raw`` (the batch, or a sample of it) is read only to learn a shape, in one small action."""
        raise NotImplementedError

    def forget(self) -> None:
        """Drop what was learned from earlier batches; the next ``resolve`` samples again."""

    def needs_sample(self) -> bool:
        """True when the next ``resolve`` reads a sample (it has learned nothing yet, or forgot it)."""
        return False

    def _hoist(self, name: str, expression: "Column") -> "Column":
        """``expression`` computed in its own projection column ``name`` (see :attr:`hoisted`)."""
        from pyspark.sql import functions as F

        self.hoisted = (*self.hoisted, (name, expression))
        return F.col(name)

    def _hoist_derived(self, name: str, expression: "Column") -> "Column":
        """``expression``, which reads columns :meth:`_hoist` returned, computed in its own projection column
        ``name`` after theirs (see :attr:`hoisted_derived`)."""
        from pyspark.sql import functions as F

        self.hoisted_derived = (*self.hoisted_derived, (name, expression))
        return F.col(name)
