"""The schemaless JSON fast path parses a row with the fields in the order its sample wrote them."""

from __future__ import annotations

import re

from pyspark.sql import types as T

from connect_spark.columnar.json_columns import TRAILING_ZEROS, ordered_like, written_compactly

SORTED = T.StructType([
    T.StructField("a", T.LongType()),
    T.StructField("b", T.StructType([T.StructField("x", T.StringType()), T.StructField("y", T.DoubleType())])),
    T.StructField("c", T.ArrayType(T.LongType())),
])


def test_fields_take_the_text_order_at_every_level():
    ordered = ordered_like('{"c":[1],"b":{"y":1.5,"x":"s"},"a":1}', SORTED)
    assert ordered.fieldNames() == ["c", "b", "a"]
    assert ordered["b"].dataType.fieldNames() == ["y", "x"]
    assert ordered["c"].dataType == T.ArrayType(T.LongType())
    assert ordered["b"].dataType["y"].dataType == T.DoubleType()


def test_an_example_with_other_fields_gives_no_order():
    assert ordered_like('{"a":1,"b":{"x":"s","y":1.5}}', SORTED) is None  # c missing
    assert ordered_like('{"a":1,"b":{"x":"s","y":1.5,"z":0},"c":[]}', SORTED) is None  # nested extra
    assert ordered_like('{"a":1,"a":2,"b":{"x":"s","y":1.5},"c":[]}', SORTED) is None  # duplicate key
    assert ordered_like('not json', SORTED) is None


def test_trailing_zeros_are_dropped_from_numbers_only_before_a_delimiter():
    def strip(text: str) -> str:
        return re.sub(TRAILING_ZEROS, r"\1", text)  # Java's and Python's regex agree on this pattern

    assert strip('{"a":12.40,"b":5.00,"c":[0.500000],"d":100.0}') == '{"a":12.4,"b":5.0,"c":[0.5],"d":100.0}'
    assert strip('{"a":1.05,"b":5.10e5}') == '{"a":1.05,"b":5.10e5}'
    assert strip('{"s":"x.10","t":10}') == '{"s":"x.10","t":10}'


def test_only_compact_examples_get_the_cheap_check():
    assert written_compactly('{"a":1,"b":"é\\"q","c":[1.5,2.50],"d":{"x":null}}')
    assert not written_compactly('{"a": 1, "b": "x"}')  # spaces: as json.dumps writes by default
    assert not written_compactly('{"b":"\\u00e9"}')  # an escape to_json would not write
    assert not written_compactly("{bad")
