"""Which row shapes :func:`~connect_spark.columnar.variant_schema.fewer_fields_regex` lets through: some of the
candidate's fields, each with its type or VOID, in ``schema_of_variant``'s order, and nothing else.

Read with Python's re module (Java's and Python's syntax agree on everything the expression uses but the end
anchor ``\\z``).
"""

import re

import pytest

from connect_spark.columnar.variant_schema import fewer_fields_regex

CANDIDATE = ("OBJECT<`a, b`: STRING, amount: FRACTION, id: BIGINT, nested: OBJECT<x: BIGINT, y: ARRAY<STRING>>, "
             "note: STRING, wide: DECIMAL(20,0)>")


def _matches(shape: str, candidate: str = CANDIDATE) -> bool:
    regex = fewer_fields_regex(candidate)
    assert regex is not None
    return re.compile(regex.replace(r"\z", r"\Z")).search(shape) is not None


@pytest.mark.parametrize("shape", [
    CANDIDATE,
    "OBJECT<amount: FRACTION, id: BIGINT, nested: OBJECT<x: BIGINT, y: ARRAY<STRING>>, wide: DECIMAL(20,0)>",
    "OBJECT<`a, b`: STRING>",
    "OBJECT<id: BIGINT>",
    "OBJECT<wide: DECIMAL(20,0)>",
    "OBJECT<amount: VOID, id: BIGINT, note: VOID>",
    "OBJECT<`a, b`: VOID, nested: VOID>",
    "OBJECT<>",
    "OBJECT<nested: OBJECT<x: BIGINT>>",                                  # a nested object with fewer fields
    "OBJECT<nested: OBJECT<x: VOID, y: ARRAY<STRING>>, note: STRING>",
    "OBJECT<nested: OBJECT<>>",
])
def test_some_of_the_fields_with_their_types_or_null_pass(shape):
    assert _matches(shape)


@pytest.mark.parametrize("shape", [
    "OBJECT<amount: STRING, id: BIGINT>",                     # another type
    "OBJECT<amount: BIGINT>",                                  # an integer where the candidate has a fraction
    "OBJECT<id: BIGINT, extra: STRING>",                       # a field the candidate lacks
    "OBJECT<id: BIGINT, zzz: STRING>",
    "OBJECT<aaa: STRING, id: BIGINT>",
    "OBJECT<id: BIGINT, amount: FRACTION>",                    # not in schema_of_variant's order
    "OBJECT<nested: OBJECT<x: STRING>>",                       # a nested field of another type
    "OBJECT<nested: OBJECT<x: BIGINT, z: BIGINT>>",            # ... or one the candidate's object lacks
    "OBJECT<nested: OBJECT<y: ARRAY<BIGINT>>>",
    "OBJECT<nested: BIGINT>",
    "OBJECT<`a`: STRING>",
    "OBJECT<`a, b`: STRING, `a, b`: STRING>",                  # a field twice
    "OBJECT<id: BIGINT, id: BIGINT>",
    "OBJECT<id: BIGINTX>",
    "OBJECT<id: BIGINT>>",
    "ARRAY<OBJECT<id: BIGINT>>",
    "VOID",
    "BIGINT",
])
def test_other_types_other_fields_and_other_orders_do_not(shape):
    assert not _matches(shape)


@pytest.mark.parametrize("candidate", ["ARRAY<BIGINT>", "BIGINT", "VOID", "OBJECT<id BIGINT>"])
def test_only_an_object_candidate_has_an_expression(candidate):
    assert fewer_fields_regex(candidate) is None
