"""Shared transform helpers: field paths (KIP-821), Java regex and replacement syntax, requirements."""

from __future__ import annotations

import pytest

from connect_spark.api import DataException
from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.api.errors import ConfigException
from connect_spark.lru_cache import LruCache
from connect_spark.transforms.util import (
    SingleFieldPath,
    copy_schema_basics,
    java_regex,
    java_replace_first,
    require_map,
    require_struct,
)


@pytest.mark.parametrize(
    "path, steps",
    [
        ("foo", ("foo",)),
        ("foo.bar", ("foo", "bar")),
        ("foo.bar.baz", ("foo", "bar", "baz")),
        ("`foo.bar`.baz", ("foo.bar", "baz")),
        ("foo.`bar.baz`", ("foo", "bar.baz")),
        ("`foo`", ("foo",)),
        ("`foo\\`.bar`.baz", ("foo`.bar", "baz")),
        ("foo.", ("foo", "")),
        ("`fo`o`.bar", ("fo`o", "bar")),
    ],
)
def test_v2_paths(path, steps):
    assert SingleFieldPath(path, "V2").steps == steps


def test_v1_path_is_one_step():
    assert SingleFieldPath("foo.bar", "V1").steps == ("foo.bar",)


def test_incomplete_backticks():
    with pytest.raises(ConfigException, match="Incomplete backtick pair in path: \\[`foo.bar\\]"):
        SingleFieldPath("`foo.bar", "V2")


def test_field_and_value_lookup():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().field("inner", inner).field("n", Schema.INT8_SCHEMA).build()
    value = Struct(outer).put("inner", Struct(inner).put("x", 3)).put("n", 1)
    path = SingleFieldPath("inner.x", "V2")
    assert path.field_from(outer).schema == Schema.INT32_SCHEMA
    assert path.value_from_struct(value) == 3
    assert SingleFieldPath("n.x", "V2").field_from(outer) is None
    assert SingleFieldPath("missing.x", "V2").value_from_struct(value) is None
    assert path.value_from_map({"inner": {"x": 4}}) == 4
    assert path.value_from_map({"inner": None}) is None
    with pytest.raises(DataException, match="nested field access"):
        path.value_from_map({"inner": 5})


def test_java_regex_translation():
    assert java_regex("(?<year>\\d{4})-\\k<year>").fullmatch("2024-2024")
    assert java_regex("\\Qa.b\\E").fullmatch("a.b") and not java_regex("\\Qa.b\\E").fullmatch("axb")
    assert java_replace_first(java_regex("o"), "foo", "0") == "f0o"


def test_requirements():
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema for \[p\], found: int"):
        require_map(1, "p")
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[p\], found: null"):
        require_struct(None, "p")


def test_copy_schema_basics():
    source = SchemaBuilder.array(Schema.STRING_SCHEMA).name("n").version(2).doc("d").parameter("k", "v").optional().build()
    copied = copy_schema_basics(source).build()
    assert copied.name == "n" and copied.version == 2 and copied.doc == "d" and dict(copied.parameters) == {"k": "v"}
    assert copied.value_schema == Schema.STRING_SCHEMA and not copied.is_optional


def test_lru_cache():
    cache = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and len(cache) == 2
    assert cache.get_or_compute("d", lambda k: k * 2) == "dd"
