"""Single message transforms and predicates as column expressions, for :mod:`connect_spark.columnar.plan`.

Called by :func:`~connect_spark.columnar.plan.build_plan`: :func:`_step` once per configured transform
when the connector starts (raising :class:`NotVectorizable` for a transform or predicate with no
column form), then :meth:`_Step.run` once per micro-batch, in chain order, on the batch's
:class:`~connect_spark.columnar.plan.RecordColumns`.

Each compiled transform maps ``RecordColumns`` to ``RecordColumns``: new topic / key / value / headers
expressions, and ``require(condition)`` for every row whose per-record result it cannot reproduce
exactly (the per-record transform would raise, or give a value the columns cannot hold). Those rows
go to the fallback, where the per-record transform runs and ``errors.*`` applies. The per-record
transforms in :mod:`connect_spark.transforms` are the reference.

This module never imports :mod:`~connect_spark.columnar.plan` at run time (``plan`` imports it); new
parts are derived from existing ones with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from connect_spark.columnar.variant_schema import NotVectorizable
from connect_spark.transforms.drop_headers import DropHeaders
from connect_spark.transforms.filter import Filter
from connect_spark.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connect_spark.transforms.regex_router import REGEX_CONFIG, REPLACEMENT_CONFIG, RegexRouter
from connect_spark.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue

if TYPE_CHECKING:
    from pyspark.sql import Column

    from connect_spark.columnar.plan import RecordColumns

__all__ = ["NotVectorizable"]



def _java_full_match(regex: str) -> str:
    return f"^(?:{regex})\\z"


def _predicate(predicate: Any, props: dict[str, Any]) -> Callable[[RecordColumns], "Column"]:
    from pyspark.sql import functions as F

    kind = type(predicate)
    if kind is TopicNameMatches:
        # the instance holds a translated Python regex; Spark wants the configured Java one
        pattern = _java_full_match(predicate.config().parse(props)["pattern"])
        return lambda r: r.topic.isNotNull() & r.topic.rlike(pattern)
    if kind is HasHeaderKey:
        name = predicate.name
        return lambda r: F.coalesce(F.exists(r.headers, lambda h: h["key"] == F.lit(name)), F.lit(False))
    if kind is RecordIsTombstone:
        return lambda r: r.value.column.isNull()
    raise NotVectorizable(f"predicate {kind.__name__} has no vectorized form")


def _regex_router(transform: Any, props: dict[str, Any]) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import functions as F

    values = transform.parse_config(props)
    pattern = _java_full_match(values[REGEX_CONFIG])
    replacement = values[REPLACEMENT_CONFIG]

    def apply(r: RecordColumns) -> RecordColumns:
        routed = F.when(r.topic.rlike(pattern), F.regexp_replace(r.topic, pattern, replacement)).otherwise(r.topic)
        return replace(r, topic=routed)
    return apply


def _drop_headers(transform: Any) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import functions as F

    names = sorted(transform.headers)

    def apply(r: RecordColumns) -> RecordColumns:
        dropped = F.array(*[F.lit(n) for n in names])
        return replace(r, headers=F.filter(r.headers, lambda h: ~F.array_contains(dropped, h["key"])))
    return apply


def _replace_field(transform: Any, on_key: bool) -> Callable[[RecordColumns], RecordColumns]:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def apply(r: RecordColumns) -> RecordColumns:
        part = r.key if on_key else r.value
        if not isinstance(part.spark_type, T.StructType):
            raise NotVectorizable(f"ReplaceField on a {part.spark_type.simpleString()} column")
        kept = [f for f in part.spark_type.fields if transform.keeps(f.name)]
        new_names = [transform.renamed(f.name) for f in kept]
        if not kept or len(set(new_names)) != len(new_names):
            raise NotVectorizable("ReplaceField leaves no field or two fields with one name")
        column = F.when(part.column.isNull(), F.lit(None)).otherwise(
            F.struct(*[part.column[f.name].alias(n) for f, n in zip(kept, new_names)]))
        spark_type = T.StructType([T.StructField(n, f.dataType, f.nullable) for f, n in zip(kept, new_names)])
        schema = None if part.schema is None else transform._updated_schema(part.schema)
        new_part = replace(part, column=column, schema=schema, spark_type=spark_type)
        return replace(r, key=new_part) if on_key else replace(r, value=new_part)
    return apply


@dataclass(frozen=True)
class _Step:
    """One compiled transform with its optional predicate."""

    alias: str
    apply: Callable[[RecordColumns], RecordColumns] | None  # None: a Filter
    condition: Callable[[RecordColumns], "Column"] | None
    negate: bool
    reshapes: bool  # changes the key/value type, so it cannot run conditionally

    def run(self, r: RecordColumns) -> RecordColumns:
        from pyspark.sql import functions as F

        applies = None
        if self.condition is not None:
            tested = F.coalesce(self.condition(r), F.lit(False))
            applies = ~tested if self.negate else tested
        if self.apply is None:  # Filter
            return replace(r, keep=r.keep & (~applies if applies is not None else F.lit(False)))
        if applies is None:
            return self.apply(r)
        if self.reshapes:
            raise NotVectorizable(f"transform {self.alias} changes the record shape under a predicate")
        done = self.apply(r)
        return replace(r, topic=F.when(applies, done.topic).otherwise(r.topic),
                       headers=F.when(applies, done.headers).otherwise(r.headers))


def _step(alias: str, transform: Any, props: dict[str, Any], predicate: Any, predicate_props: dict[str, Any],
          negate: bool) -> _Step:
    kind = type(transform)
    condition = _predicate(predicate, predicate_props) if predicate is not None else None
    if kind is Filter:
        return _Step(alias, None, condition, negate, False)
    if kind is RegexRouter:
        return _Step(alias, _regex_router(transform, props), condition, negate, False)
    if kind is DropHeaders:
        return _Step(alias, _drop_headers(transform), condition, negate, False)
    if kind in (ReplaceFieldKey, ReplaceFieldValue):
        return _Step(alias, _replace_field(transform, kind is ReplaceFieldKey), condition, negate, True)
    raise NotVectorizable(f"transform {alias} ({kind.__name__}) has no vectorized form")


