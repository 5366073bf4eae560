"""Fitting per-record survivors to the good rows' Arrow types on an executor: lossless or refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_spark.columnar.fit_to_frame import CannotFit, arrow_fitted

ORDER = pa.struct([("id", pa.int64()), ("price", pa.float64()), ("tags", pa.list_(pa.int64()))])


def _table(value: list, value_type: pa.DataType | None = None) -> pa.Table:
    return pa.table({"key": pa.array(["k"] * len(value)), "value": pa.array(value, value_type)})


def test_missing_fields_become_null_and_integers_widen():
    target = pa.schema([("key", pa.string()), ("value", ORDER), ("headers", pa.list_(pa.string()))])
    fitted = arrow_fitted(_table([{"id": 1, "price": 7}]), target)
    assert fitted.schema == target
    assert fitted.to_pylist() == [{"key": "k", "value": {"id": 1, "price": 7.0, "tags": None}, "headers": None}]


def test_a_field_the_others_lack_is_refused_where_arrow_would_drop_it():
    target = pa.schema([("key", pa.string()), ("value", ORDER)])
    with pytest.raises(CannotFit, match="value has field coupon the others lack"):
        arrow_fitted(_table([{"id": 1, "price": 2.5, "coupon": "SAVE"}]), target)


@pytest.mark.parametrize("value, value_type, target_type", [
    (["12.5"], pa.string(), pa.float64()),  # Arrow would parse the text
    ([2.5], pa.float64(), pa.int64()),  # narrowing
    ([[{"a": 1}]], None, pa.list_(pa.struct([("b", pa.int64())]))),  # inside a list
])
def test_types_that_do_not_widen_losslessly_are_refused(value, value_type, target_type):
    with pytest.raises(CannotFit):
        arrow_fitted(_table(value, value_type), pa.schema([("key", pa.string()), ("value", target_type)]))


def test_a_column_the_frame_lacks_is_refused():
    with pytest.raises(CannotFit, match="column extra"):
        arrow_fitted(pa.table({"extra": [1]}), pa.schema([("key", pa.string())]))


def test_structs_inside_lists_and_null_rows_are_fitted_by_name():
    item = pa.struct([("sku", pa.string()), ("qty", pa.int64()), ("note", pa.string())])
    target = pa.schema([("key", pa.string()), ("value", pa.struct([("items", pa.list_(item))]))])
    table = pa.table({"key": ["a", "b", "c"],
                      "value": pa.array([{"items": [{"qty": 2, "sku": "x"}, None]}, None, {"items": None}])})
    fitted = arrow_fitted(table, target)
    assert fitted.schema == target
    assert fitted.column("value").to_pylist() == [
        {"items": [{"sku": "x", "qty": 2, "note": None}, None]}, None, {"items": None}]
