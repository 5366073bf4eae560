"""Fit a small record frame (records converted per record) to the types of a batch's vectorized frame.

Called by the frame path (:mod:`connect_spark.runtime.processors.dataframe_batches`) when some rows of a batch were
converted per record and the rest by the plan: the survivors' frame is rebuilt, column by column and
struct field by struct field (matched by name), into the good rows' types so the two can be unioned.
Only lossless changes are made: a missing struct field becomes null, an integer widens to a wider
integer or a double, a float to a double, a null-typed column takes any type. Anything else raises
:class:`CannotFit` (the caller then builds the batch another way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connect_spark.api.errors import ConnectException

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = ["CannotFit", "fitted", "arrow_fitted", "arrow_types", "spark_arrow_type"]


class CannotFit(ConnectException):
    """A column of the small frame has no lossless form in the target type; the message says which."""


def fitted(frame: "DataFrame", target: Any) -> "DataFrame":
    """``frame`` with exactly the columns of ``target`` (a ``StructType``), in its order and types.

    Raises:
        CannotFit: a column or field that ``target`` lacks, or a type that does not widen losslessly.
    """
    from pyspark.sql import functions as F

    source = {f.name: f.dataType for f in frame.schema.fields}
    extra = sorted(set(source) - set(target.fieldNames()))
    if extra:
        raise CannotFit(f"columns {', '.join(extra)} are not in the frame")
    columns = []
    for f in target.fields:
        if f.name in source:
            columns.append(_fit(F.col(f"`{f.name}`"), source[f.name], f.dataType, f.name).alias(f.name))
        else:
            columns.append(F.lit(None).cast(f.dataType).alias(f.name))
    return frame.select(*columns)


def arrow_fitted(table: "pa.Table", target: "pa.Schema") -> "pa.Table":
    """``table`` (columns by name, a subset of ``target``'s) cast to ``target``'s types, with the same rules as
    :func:`fitted` for Arrow data on an executor (Arrow's own cast would drop struct fields the target lacks and
    parse strings into numbers).

    Raises:
        CannotFit: a column or field that ``target`` lacks, or a type that does not widen losslessly.
    """
    import pyarrow as pa

    for name in table.schema.names:
        if target.get_field_index(name) < 0:
            raise CannotFit(f"column {name} is not in the frame")
        _check_arrow(table.schema.field(name).type, target.field(name).type, name)
    columns = [_fit_array(table.column(f.name).combine_chunks(), f.type) if f.name in table.schema.names
               else pa.nulls(table.num_rows, f.type) for f in target]
    return pa.Table.from_arrays(columns, schema=target)


def _fit_array(array: "pa.Array", target: "pa.DataType") -> "pa.Array":
    """``array`` (checked by :func:`_check_arrow`) in ``target``'s type; structs are rebuilt by field name, since
    older pyarrow casts structs only between the same fields."""
    import pyarrow as pa

    t = pa.types
    if array.type == target:
        return array
    if t.is_null(array.type):
        return pa.nulls(len(array), target)
    mask = array.is_null() if array.null_count else None
    if t.is_struct(target):
        present = {array.type.field(i).name for i in range(array.type.num_fields)}
        children = [_fit_array(array.field(f.name), f.type) if f.name in present else pa.nulls(len(array), f.type)
                    for f in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if t.is_list(target) and t.is_list(array.type):
        values = _fit_array(array.values, target.value_type)
        return pa.ListArray.from_arrays(array.offsets, values, type=target, mask=mask)
    return array.cast(target)


def _check_arrow(source: "pa.DataType", target: "pa.DataType", path: str) -> None:
    import pyarrow as pa

    t = pa.types
    if source == target or t.is_null(source):
        return
    if t.is_struct(source) and t.is_struct(target):
        names = {target.field(i).name: target.field(i).type for i in range(target.num_fields)}
        for i in range(source.num_fields):
            field = source.field(i)
            if field.name not in names:
                raise CannotFit(f"{path} has field {field.name} the others lack")
            _check_arrow(field.type, names[field.name], f"{path}.{field.name}")
        return
    if (t.is_list(source) or t.is_large_list(source)) and (t.is_list(target) or t.is_large_list(target)):
        return _check_arrow(source.value_type, target.value_type, f"{path}[]")
    if t.is_map(source) and t.is_map(target):
        _check_arrow(source.key_type, target.key_type, f"{path} key")
        return _check_arrow(source.item_type, target.item_type, f"{path} value")
    if t.is_integer(source) and (t.is_floating(target) or (t.is_integer(target) and target.bit_width >= source.bit_width
                                                             and t.is_signed_integer(target))):
        return
    if t.is_floating(source) and t.is_floating(target) and target.bit_width >= source.bit_width:
        return
    if t.is_timestamp(source) and t.is_timestamp(target):
        return
    if (t.is_string(source) or t.is_large_string(source)) and (t.is_string(target) or t.is_large_string(target)):
        return
    if (t.is_binary(source) or t.is_large_binary(source)) and (t.is_binary(target) or t.is_large_binary(target)):
        return
    raise CannotFit(f"{path} is {source} where the others have {target}")


def spark_arrow_type(data_type: Any) -> "pa.DataType":
    """The Arrow type Spark hands a Spark SQL ``data_type`` to Python as (timestamps in UTC), on every supported
    Spark: 4.0 and 4.1 take ``timestamp_utc``, 4.2 wants the time zone named."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_type

    if "timezone" in inspect.signature(to_arrow_type).parameters:
        return to_arrow_type(data_type, timezone="UTC")
    return to_arrow_type(data_type)


def arrow_types(schema: Any, *names: str) -> list[Any]:
    """The Arrow types of the columns ``names`` of a Spark ``schema`` (``StructType``), as Spark would hand
    them to Python; a column Arrow has no type for (or that is missing) gives Arrow's null type."""
    import pyarrow as pa

    types = []
    for name in names:
        try:
            types.append(spark_arrow_type(schema[name].dataType))
        except Exception:  # a type Spark's Arrow mapping refuses: no conflict can be certain
            types.append(pa.null())
    return types


_INTEGERS = ("ByteType", "ShortType", "IntegerType", "LongType")


def _widens(source: Any, target: Any) -> bool:
    s, t = type(source).__name__, type(target).__name__
    if s in _INTEGERS:
        return (t in _INTEGERS and _INTEGERS.index(s) <= _INTEGERS.index(t)) or t == "DoubleType"
    return s == "FloatType" and t == "DoubleType"


def _fit(c: "Column", source: Any, target: Any, path: str) -> "Column":
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if source == target:
        return c
    if isinstance(source, T.NullType):
        return F.lit(None).cast(target)
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        names = {f.name: f.dataType for f in source.fields}
        extra = sorted(set(names) - set(target.fieldNames()))
        if extra:
            raise CannotFit(f"{path} has field(s) {', '.join(extra)} the others lack")
        parts = [(_fit(c[f.name], names[f.name], f.dataType, f"{path}.{f.name}") if f.name in names
                  else F.lit(None).cast(f.dataType)).alias(f.name) for f in target.fields]
        return F.when(c.isNull(), F.lit(None)).otherwise(F.struct(*parts))
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return F.transform(c, lambda x: _fit(x, source.elementType, target.elementType, f"{path}[]"))
    if isinstance(source, T.MapType) and isinstance(target, T.MapType) and source.keyType == target.keyType:
        return F.transform_values(c, lambda k, v: _fit(v, source.valueType, target.valueType, f"{path}{{}}"))
    if _widens(source, target):
        return c.cast(target)
    raise CannotFit(f"{path} is {source.simpleString()} where the others have {target.simpleString()}")
