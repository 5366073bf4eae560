"""One Arrow column for the keys or values of a batch of records, and the records that do not fit it.

Called by :func:`connect_spark.columnar.records.records_to_frame`, when a bulk task's frame is built from
converted records (the per-record fallback of the vectorized plan, the per-record path of Arrow tasks).
Real topics are not uniform, so a batch's values need not share one type; this module decides the
column's type and names every record whose value cannot be stored in it, instead of letting Arrow fail
the whole batch:

* **With Connect schemas** (JsonConverter with ``schemas.enable``, Avro, ...): the batch's schemas are
  merged, starting from the most frequent one and taking the others in the order they first appear.
  Two struct schemas merge when each field they share merges: a field only one of them has becomes
  optional (records without it hold its default, else null), integers widen (INT8 → INT16 → INT32 →
  INT64, any integer or FLOAT32 → FLOAT64), arrays and maps merge their elements. Anything else (a
  STRING field that is INT64 in another version, two logical types) is a conflict: the records of the
  schema that does not merge are misfits, and the message names the field and both schemas.
* **Schemaless** (JsonConverter without schemas): per field path, the kind most records have wins
  (integers and fractions count together as numbers: a column with any fraction is double, so
  integers widen to double); object fields are the union of the fields records carry, in the order
  they first appear. A record whose value, or one of its fields, has another kind (a string in a
  double column, a bare number among objects, an array where the others hold an object), an integer
  beyond 64 bits, or nesting deeper than :data:`MAX_DEPTH` is a misfit. A field that is null in every
  record is a string column; an object field that is empty (``{}``) in every record is left out (it
  holds nothing a column could carry).

Debezium's semantic types (:mod:`connect_spark.api.data.semantic_types`) are converted to their typed
columns here (a MicroTimestamp's microseconds into a ``timestamp_ntz`` column, a VariableScaleDecimal into
``decimal(38,18)``, ...): integers become the column's days or microseconds (Arrow builds the date and
timestamp arrays from them), so no datetime object is made per value. A value its column cannot hold (a
timestamp outside the years 1-9999, a ZonedTimestamp that does not parse, a VariableScaleDecimal with more
than 18 digits after the point) makes its record a misfit naming the field. Two schemas whose field has a
semantic name in one and not the other, or two different names, do not merge (the integers would mean
different things); two versions of one name merge whatever their parameters (an Enum gaining a value).

Nothing is cast silently: the only conversions are the widenings above. As a last guard, a batch Arrow
still refuses (a string with a lone surrogate, say) is converted record by record, and the records
Arrow refuses are misfits carrying Arrow's message.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyarrow as pa

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.schema import ConnectSchema, Field
from connect_spark.api.data.semantic_types import SemanticValueError, semantic_type, to_column_value
from connect_spark.api.errors import DataException

__all__ = ["Misfit", "FittedColumn", "fit_column", "merge_schemas", "SchemaConflict", "MAX_DEPTH", "describe_arrow_type",
           "type_conflict"]

#: Values nested deeper than this (objects and arrays) are misfits: a column that deep breaks Spark
#: code generation and Parquet writers long before it helps anyone.
MAX_DEPTH = 64

_INT_RANK = {Type.INT8: 1, Type.INT16: 2, Type.INT32: 3, Type.INT64: 4}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class SchemaConflict(DataException):
    """Two Connect schemas that no column can hold both of; the message names the field.

    Attributes:
        path: the field (``a.b``, ``tags[]``), empty for the schemas themselves.
        first, second: the field's type in the first and in the second schema.
    """

    def __init__(self, path: str, first: Schema, second: Schema) -> None:
        where = f"field '{path}'" if path else "the schema"
        super().__init__(f"{where} is {_type_name(first)} in one and {_type_name(second)} in the other")
        self.path, self.first, self.second = path, first, second


@dataclass(frozen=True)
class Misfit:
    """A record whose key or value does not fit the batch's column (``index`` into the records given)."""

    index: int
    reason: str


@dataclass
class FittedColumn:
    """The Arrow column of the records that fit (nulls at misfits' rows) and the misfits."""

    array: pa.Array
    schema: Schema | None
    misfits: list[Misfit]


# --- Connect schemas --------------------------------------------------------------------------------


def _describe_schema(schema: Schema) -> str:
    text = str(schema)
    return f"{text} version {schema.version}" if schema.version is not None else text


def _type_name(schema: Schema) -> str:
    return schema.name or schema.type.name


def merge_schemas(a: Schema, b: Schema, path: str = "") -> Schema:
    """A schema whose column holds values of ``a`` and of ``b`` (see the module docstring).

    Raises:
        SchemaConflict: naming the first field (``path``) where they cannot merge.
    """
    if a == b:
        return a
    optional = a.is_optional or b.is_optional
    if (_is_logical(a) or _is_logical(b)) and not _same_logical(a, b):
        raise SchemaConflict(path, a, b)
    if a.type is Type.STRUCT and b.type is Type.STRUCT:
        fields: list[tuple[str, Schema]] = []
        for f in a.fields:
            other = b.field(f.name)
            if other is None:
                fields.append((f.name, _optional(f.schema)))
            else:
                fields.append((f.name, merge_schemas(f.schema, other.schema, _join(path, f.name))))
        for f in b.fields:
            if a.field(f.name) is None:
                fields.append((f.name, _optional(f.schema)))
        newer = b if (b.version or 0) >= (a.version or 0) else a
        return ConnectSchema(Type.STRUCT, optional, None, newer.name, newer.version, newer.doc, newer.parameters,
                             [Field(name, i, s) for i, (name, s) in enumerate(fields)])
    if a.type is Type.ARRAY and b.type is Type.ARRAY:
        element = merge_schemas(a.value_schema, b.value_schema, path + "[]")
        return ConnectSchema(Type.ARRAY, optional, None, a.name, a.version, a.doc, a.parameters, value_schema=element)
    if a.type is Type.MAP and b.type is Type.MAP:
        key = merge_schemas(a.key_schema, b.key_schema, path + "{key}")
        value = merge_schemas(a.value_schema, b.value_schema, path + "{}")
        return ConnectSchema(Type.MAP, optional, None, a.name, a.version, a.doc, a.parameters, key_schema=key,
                             value_schema=value)
    wider = _wider_primitive(a, b)
    if wider is None:
        raise SchemaConflict(path, a, b)
    return ConnectSchema(wider.type, optional, wider.default_value, wider.name, wider.version, wider.doc,
                         wider.parameters)


def _is_logical(schema: Schema) -> bool:
    return schema.name is not None and (schema.name.startswith("org.apache.kafka.connect.data.")
                                        or semantic_type(schema) is not None)


def _same_logical(a: Schema, b: Schema) -> bool:
    if a.name != b.name or a.type is not b.type:
        return False
    # a semantic type's column does not depend on its parameters (an Enum's ``allowed``, a Bits' ``length``)
    return semantic_type(a) is not None or dict(a.parameters or {}) == dict(b.parameters or {})


def _wider_primitive(a: Schema, b: Schema) -> Schema | None:
    if a.type is b.type and (not _is_logical(a) or _same_logical(a, b)):
        return a
    if _is_logical(a) or _is_logical(b):
        return None
    ra, rb = _INT_RANK.get(a.type), _INT_RANK.get(b.type)
    if ra and rb:
        return a if ra >= rb else b
    numeric = {Type.FLOAT32, Type.FLOAT64}
    if (a.type is Type.FLOAT64 and (rb or b.type in numeric)) or (b.type is Type.FLOAT64 and (ra or a.type in numeric)):
        return a if a.type is Type.FLOAT64 else b
    return None


def _optional(schema: Schema) -> Schema:
    if schema.is_optional:
        return schema
    return ConnectSchema(schema.type, True, schema.default_value, schema.name, schema.version, schema.doc,
                         schema.parameters, schema.fields if schema.type is Type.STRUCT else None,
                         schema.key_schema if schema.type is Type.MAP else None,
                         schema.value_schema if schema.type in (Type.MAP, Type.ARRAY) else None)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _SemanticMisfit(Exception):
    """A semantic type's value its column cannot hold, at ``path`` (empty: the key or value itself)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = path, reason


#: Semantic column kinds whose Connect values Arrow takes as they are (an Enum's string, a Year's int).
_AS_IS = frozenset({"int", "bigint", "string", "binary"})


def _projector(target: Schema, source: Schema, path: str = "") -> Callable[[Any], Any]:
    """A function from a Connect value of ``source`` (a schema merged into ``target``) to its Arrow form.

    Raises (from the function):
        _SemanticMisfit: a semantic type's value its column cannot hold.
    """
    from connect_spark.api.data.schema import TIME_LOGICAL_NAME

    found = semantic_type(target)
    if found is not None and found.column not in _AS_IS:
        def project_semantic(v: Any) -> Any:
            if v is None:
                return None
            try:
                return to_column_value(found, v)
            except SemanticValueError as e:
                raise _SemanticMisfit(path, str(e)) from None
        return project_semantic
    t = target.type
    if t is Type.STRUCT:
        fields = []
        for f in target.fields:
            own = source.field(f.name)
            fields.append((f.name, own, f.schema.default_value,
                           _projector(f.schema, own.schema if own is not None else f.schema, _join(path, f.name))))

        def project_struct(v: Any) -> Any:
            if v is None:
                return None
            out = {}
            for name, own, default, project in fields:
                x = v.get(own) if own is not None else None
                out[name] = project(default if x is None else x)
            return out
        return project_struct
    if t is Type.ARRAY:
        element = _projector(target.value_schema, source.value_schema, path + "[]")
        return lambda v: None if v is None else [element(x) for x in v]
    if t is Type.MAP:
        pk = _projector(target.key_schema, source.key_schema, path + "{key}")
        pv = _projector(target.value_schema, source.value_schema, path + "{}")
        return lambda v: None if v is None else [(pk(k), pv(x)) for k, x in v.items()]
    if target.name == TIME_LOGICAL_NAME:
        return lambda v: v.replace(tzinfo=None) if v is not None and hasattr(v, "tzinfo") else v
    return lambda v: v


def _schema_column(values: Sequence[Any], schemas: Sequence[Schema | None], which: str) -> FittedColumn:
    from connect_spark.columnar.types import to_arrow_type

    counts = Counter(s for s, v in zip(schemas, values) if v is not None and s is not None)
    misfits: list[Misfit] = []
    base = counts.most_common(1)[0][0]
    merged = base
    refused: dict[Schema, str] = {}
    first_seen = list(dict.fromkeys(s for s, v in zip(schemas, values) if v is not None and s is not None))
    for schema in first_seen:
        if schema == base:
            continue
        try:
            merged = merge_schemas(merged, schema)
        except SchemaConflict as e:
            where = f"field '{e.path}'" if e.path else "it"
            refused[schema] = (f"the {which}'s schema {_describe_schema(schema)} does not fit the frame's schema "
                               f"{_describe_schema(merged)}: {where} is {_type_name(e.second)} in the record's "
                               f"and {_type_name(e.first)} in the frame's")
    projectors = {s: _projector(merged, s) for s in first_seen if s not in refused}
    column: list[Any] = []
    for i, (schema, value) in enumerate(zip(schemas, values)):
        if value is None:
            column.append(None)
        elif schema is None:
            misfits.append(Misfit(i, f"the {which} has no schema where the frame's is {_describe_schema(merged)}"))
            column.append(None)
        elif schema in refused:
            misfits.append(Misfit(i, refused[schema]))
            column.append(None)
        else:
            try:
                column.append(projectors[schema](value))
            except _SemanticMisfit as e:
                where = f"field '{e.path}' of the {which}" if e.path else f"the {which}"
                misfits.append(Misfit(i, f"{where} does not fit its column: {e.reason}"))
                column.append(None)
    array = _guarded_array(column, to_arrow_type(merged), misfits, which)
    return FittedColumn(array, merged, misfits)


# --- schemaless values ------------------------------------------------------------------------------


class _TooDeep(Exception):
    pass


_NUMBER = "number"
_HUGE = "integer beyond 64 bits"


def _kind(v: Any) -> str:
    t = type(v)
    if t is bool:
        return "boolean"
    if t is int:
        return "long" if _INT64_MIN <= v <= _INT64_MAX else _HUGE
    if t is float:
        return "double"
    if t is str:
        return "string"
    if isinstance(v, dict):  # JsonConverter's schemaless maps are JavaHashMap, a dict keeping Java's order
        return "object"
    if isinstance(v, list):
        return "array"
    if t in (bytes, bytearray):
        return "bytes"
    return t.__name__


class _Votes:
    """What the records hold at one field path: how many values of each kind, and the children."""

    __slots__ = ("counts", "fields", "element")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.fields: dict[str, _Votes] | None = None
        self.element: _Votes | None = None

    def observe(self, v: Any, depth: int) -> bool:
        """Count ``v`` (not null); True when kinds now disagree somewhere (a record may not fit)."""
        if depth > MAX_DEPTH:
            raise _TooDeep()
        kind = _kind(v)
        counts = self.counts
        mixed = kind not in counts and bool(counts) and not ({kind} | counts.keys()) <= {"long", "double"}
        mixed = mixed or kind == _HUGE
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "object":
            fields = self.fields
            if fields is None:
                fields = self.fields = {}
            for name, x in v.items():
                if x is None:
                    if name not in fields:
                        fields[name] = _Votes()
                    continue
                child = fields.get(name)
                if child is None:
                    child = fields[name] = _Votes()
                mixed = child.observe(x, depth + 1) or mixed
        elif kind == "array":
            element = self.element
            if element is None:
                element = self.element = _Votes()
            for x in v:
                if x is not None:
                    mixed = element.observe(x, depth + 1) or mixed
        return mixed

    def winner(self) -> str | None:
        groups: dict[str, int] = {}
        for kind, n in self.counts.items():
            if kind == _HUGE:
                continue
            group = _NUMBER if kind in ("long", "double") else kind
            groups[group] = groups.get(group, 0) + n
        if not groups:
            return None
        return max(groups, key=lambda g: groups[g])  # the first seen among equals

    def arrow_type(self) -> pa.DataType | None:
        """The column type; ``None`` for an object field empty in every record (no column)."""
        kind = self.winner()
        if kind is None:
            return pa.string()  # only nulls (or only refused values), as the vectorized plan types them
        if kind == _NUMBER:
            return pa.float64() if "double" in self.counts else pa.int64()
        if kind == "string":
            return pa.string()
        if kind == "boolean":
            return pa.bool_()
        if kind == "bytes":
            return pa.binary()
        if kind == "object":
            fields = []
            for name, child in (self.fields or {}).items():
                t = child.arrow_type()
                if t is not None:
                    fields.append(pa.field(name, t))
            return pa.struct(fields) if fields else None
        if kind == "array":
            element = self.element.arrow_type() if self.element is not None else pa.string()
            return pa.list_(element if element is not None else pa.string())
        raise _Unsupported(kind)


class _Unsupported(Exception):
    """A kind of value this module does not type itself (Arrow infers it)."""


def describe_arrow_type(t: pa.DataType | None) -> str:
    """A short, Spark-like name of a column type (``double``, ``struct``, ``array<string>``)."""
    if t is None:
        return "no column (empty objects only)"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{describe_arrow_type(t.value_type)}>"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_binary(t):
        return "binary"
    return str(t)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


#: The kinds of schemaless values, and the column types only values of one kind give a column.
_KINDS = frozenset({"boolean", "long", "double", "string", "object", "array", "bytes"})


def _typed_by_kind(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_int64(t) or pa.types.is_float64(t) or pa.types.is_boolean(t)
                              or pa.types.is_binary(t) or pa.types.is_struct(t) or pa.types.is_list(t))


def type_conflict(v: Any, t: pa.DataType, which: str) -> str | None:
    """Why the schemaless ``v`` cannot be stored in an existing column of type ``t``, or ``None``.

    Only certain conflicts count: a value of another kind where the column (or a field of it) holds
    numbers, booleans, bytes, objects or arrays, which only values of that kind give it. A field ``t`` lacks
    is no conflict (a frame can gain a column), nor a fraction where ``t`` has integers (it would widen), nor
    any value where ``t`` has a string (a field null in every sampled record is typed string, so the
    others' kind is unknown) or a type JSON does not give (a timestamp a transform made, say). Called
    where records converted per record join rows Spark converted (:func:`connect_spark.columnar.records.split_conflicting`).
    """
    return _misfit_reason(v, t, "", which, conflicts_only=True)


def _misfit_reason(v: Any, t: pa.DataType | None, path: str, which: str, conflicts_only: bool = False) -> str | None:
    """Why ``v`` cannot be stored in a column of type ``t``, or ``None`` when it can (``conflicts_only``: see
    :func:`type_conflict`)."""
    if v is None:
        return None
    kind = _kind(v)
    where = f"field '{path}' of the {which}" if path else f"the {which}"
    if conflicts_only and not (_typed_by_kind(t) and kind in _KINDS):
        return None
    if t is None:
        if kind == "object" and not v:
            return None
        return f"{where} is {_article(kind)} ({_show(v)}) where the frame has no column"
    ok = ((kind == "string" and pa.types.is_string(t))
          or (kind == "long" and (pa.types.is_int64(t) or pa.types.is_float64(t)))
          or (kind == "double" and pa.types.is_float64(t))
          or (kind == "boolean" and pa.types.is_boolean(t))
          or (kind == "bytes" and pa.types.is_binary(t))
          or (kind == "object" and pa.types.is_struct(t))
          or (kind == "array" and pa.types.is_list(t)))
    if not ok:
        if conflicts_only and kind == "double" and pa.types.is_integer(t):
            return None  # the column would widen to double, as a batch's numbers do
        return f"{where} is {_article(kind)} ({_show(v)}) where the frame's column is {describe_arrow_type(t)}"
    if kind == "object":
        for name, x in v.items():
            index = t.get_field_index(name)
            child = t.field(index).type if index >= 0 else None
            reason = _misfit_reason(x, child, _join(path, name), which, conflicts_only)
            if reason is not None:
                return reason
    elif kind == "array":
        for x in v:
            reason = _misfit_reason(x, t.value_type, path + "[]", which, conflicts_only)
            if reason is not None:
                return reason
    return None


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _schemaless_column(values: Sequence[Any], which: str) -> FittedColumn:
    votes = _Votes()
    mixed = False
    too_deep: set[int] = set()
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            mixed = votes.observe(v, 0) or mixed
        except (_TooDeep, RecursionError):
            too_deep.add(i)
    if too_deep:  # count again without them, so their fields do not become columns
        votes, mixed = _Votes(), False
        for i, v in enumerate(values):
            if v is not None and i not in too_deep:
                mixed = votes.observe(v, 0) or mixed
    misfits = [Misfit(i, f"the {which} is nested deeper than {MAX_DEPTH} levels") for i in sorted(too_deep)]
    try:
        arrow_type = votes.arrow_type()
    except _Unsupported:
        arrow_type = None
    if arrow_type is None:
        if votes.winner() == "object":  # only empty objects: a struct without fields
            arrow_type = pa.struct([])
        else:
            arrow_type = _inferred(values)
            mixed = True
    column = list(values)
    for i in too_deep:
        column[i] = None
    if mixed:
        for i, v in enumerate(column):
            reason = _misfit_reason(v, arrow_type, "", which)
            if reason is not None:
                misfits.append(Misfit(i, reason))
                column[i] = None
    array = _guarded_array(column, arrow_type, misfits, which)
    misfits.sort(key=lambda m: m.index)
    return FittedColumn(array, None, misfits)


def _inferred(values: Sequence[Any]) -> pa.DataType:
    """Arrow's own type for values of a kind this module does not know (e.g. dates a custom converter gives)."""
    for v in values:
        if v is not None:
            try:
                return pa.array([v]).type
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                continue
    return pa.string()


# --- both -------------------------------------------------------------------------------------------


def _guarded_array(column: list[Any], arrow_type: pa.DataType, misfits: list[Misfit], which: str) -> pa.Array:
    """``column`` as Arrow; when Arrow refuses the batch, the rows it refuses become misfits (and nulls)."""
    try:
        return pa.array(column, type=arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError):
        pass
    for i, v in enumerate(column):
        if v is None:
            continue
        try:
            pa.array([v], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError) as e:
            misfits.append(Misfit(i, f"the {which} cannot be stored as {describe_arrow_type(arrow_type)}: {e}"))
            column[i] = None
    return pa.array(column, type=arrow_type)


def fit_column(values: Sequence[Any], schemas: Sequence[Schema | None], which: str) -> FittedColumn:
    """The column for ``values`` (one per record, with the Connect schema each record carries).

    Args:
        values: the keys or the values of the records, in row order (``None`` for nulls).
        schemas: each record's key or value schema (``None`` for schemaless data).
        which: ``"key"`` or ``"value"``, for messages.
    """
    if any(s is not None and v is not None for s, v in zip(schemas, values)):
        return _schema_column(values, schemas, which)
    if all(v is None for v in values):
        return FittedColumn(pa.nulls(len(values)), None, [])
    return _schemaless_column(values, which)
