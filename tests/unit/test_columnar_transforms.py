"""Pure helpers of the vectorized transforms (no JVM): which timestamp formats and mask kinds compile."""

from __future__ import annotations

import datetime

import pytest
from pyspark.sql import types as T

from connect_spark.api.data import Date, Decimal, Schema, SchemaBuilder, Timestamp
from connect_spark.columnar.transforms import NotVectorizable, mask_sample, schemaless_type, date_tokens
from connect_spark.transforms.mask_field import MaskFieldValue
from connect_spark.transforms.simple_date_format import SimpleDateFormat


@pytest.mark.parametrize("pattern", ["yyyyMMdd", "yyyy-MM-dd'T'HH:mm:ss.SSS", "yy/M/d H", "'week' y"])
def test_numeric_date_patterns_compile(pattern):
    tokens = SimpleDateFormat(pattern)._tokens
    assert date_tokens(tokens) == tokens


@pytest.mark.parametrize("pattern, letter", [("yyyy MMM", "MMM"), ("EEE", "EEE"), ("hh a", "hh"), ("HH z", "z"),
                                             ("YYYY", "YYYY"), ("D", "D")])
def test_names_and_week_fields_are_not_vectorized(pattern, letter):
    with pytest.raises(NotVectorizable, match=f"'{letter}'"):
        date_tokens(SimpleDateFormat(pattern)._tokens)


def _mask(replacement: str | None = None) -> MaskFieldValue:
    transform = MaskFieldValue()
    transform.configure({"fields": "f", **({"replacement": replacement} if replacement else {})})
    return transform


@pytest.mark.parametrize("schema, expected", [
    (Schema.INT8_SCHEMA, 0), (Schema.FLOAT32_SCHEMA, 0.0), (Schema.BOOLEAN_SCHEMA, False), (Schema.STRING_SCHEMA, ""),
    (SchemaBuilder.array(Schema.STRING_SCHEMA).build(), []),
    (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {}),
    (Date.SCHEMA, datetime.date(1970, 1, 1)),
    (Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)),
])
def test_mask_samples_mask_to_the_type_s_empty_value(schema, expected):
    masked = _mask()._masked(mask_sample(schema, None), schema)
    assert (type(masked), masked) == (type(expected), expected)


def test_mask_samples_with_a_replacement_convert_per_schema_type():
    assert _mask("300")._masked(mask_sample(Schema.INT16_SCHEMA, None), Schema.INT16_SCHEMA) == 300
    assert _mask("x")._masked(mask_sample(Schema.STRING_SCHEMA, None), Schema.STRING_SCHEMA) == "x"


@pytest.mark.parametrize("schema, spark_type", [
    (Decimal.schema(2), None),  # not carried by the plan
    (SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build(), None),  # a Struct cannot be masked
    (None, T.StructType([T.StructField("a", T.LongType())])),  # {} does not fit a struct column
    (None, T.NullType()),
])
def test_kinds_without_an_exact_mask_have_no_sample(schema, spark_type):
    assert mask_sample(schema, spark_type) is None


def test_schemaless_spark_types_map_to_connect_types_as_json_values_do():
    assert schemaless_type(T.LongType()).name == "INT64"
    assert schemaless_type(T.DoubleType()).name == "FLOAT64"
    assert schemaless_type(T.ArrayType(T.LongType())) is None
