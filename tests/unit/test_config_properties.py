"""The .properties parser against the rules of java.util.Properties.load (cases from its Javadoc)."""

from __future__ import annotations

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.config.properties import format_properties, load_properties, parse_properties


@pytest.mark.parametrize(
    "line",
    ["Truth = Beauty", "  Truth:Beauty", "Truth                    :Beauty", "Truth\tBeauty", "Truth=Beauty"],
)
def test_javadoc_separators(line):
    assert parse_properties(line) == {"Truth": "Beauty"}


def test_javadoc_continuation():
    text = (
        "fruits                           apple, banana, pear, \\\n"
        "                                 cantaloupe, watermelon, \\\n"
        "                                 kiwi, mango\n"
    )
    assert parse_properties(text) == {"fruits": "apple, banana, pear, cantaloupe, watermelon, kiwi, mango"}


def test_javadoc_key_without_value():
    assert parse_properties("cheeses\n") == {"cheeses": ""}


def test_javadoc_escaped_separators_in_key():
    # Escaped separator characters belong to the key.
    assert parse_properties("\\:\\= = value") == {":=": "value"}
    assert parse_properties("key\\ with\\ spaces = v") == {"key with spaces": "v"}


def test_separator_variants():
    assert parse_properties("a=") == {"a": ""}
    assert parse_properties("=v") == {"": "v"}
    assert parse_properties("a = = b") == {"a": "= b"}  # only one separator char is consumed
    assert parse_properties("a  :  :b") == {"a": ":b"}
    assert parse_properties("a b=c") == {"a": "b=c"}
    assert parse_properties("a:b=c") == {"a": "b=c"}
    assert parse_properties("a\f=\fb") == {"a": "b"}


def test_trailing_whitespace_of_value_is_kept():
    assert parse_properties("a = b  \n") == {"a": "b  "}


@pytest.mark.parametrize("marker", ["#", "!"])
def test_comments(marker):
    text = f"{marker} comment\n   {marker} indented comment\na=1\nb=2 {marker} not a comment\n"
    assert parse_properties(text) == {"a": "1", "b": f"2 {marker} not a comment"}


def test_comment_ending_in_backslash_does_not_continue():
    assert parse_properties("# comment \\\na=1\n") == {"a": "1"}


def test_hash_at_start_of_continuation_line_is_data():
    assert parse_properties("a=1\\\n  # two\n") == {"a": "1# two"}


def test_blank_lines_and_whitespace_only_lines_are_skipped():
    assert parse_properties("\n   \n\t\f\na=1\n\n") == {"a": "1"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a=x\\\\\n", "x\\"),  # even number of backslashes: no continuation
        ("a=x\\\\\\\ny\n", "x\\y"),  # odd: continuation after an escaped backslash
        ("a=x\\\n\nb=2\n", "x"),  # empty line after a continuation ends the value
        ("a=x\\\n   \nb=2\n", "x"),
        ("a=x\\", "x"),  # backslash at end of file is dropped
        ("a=x\\\n", "x"),
        ("a=x\\\n\\\n  y", "xy"),  # a continuation line that only continues
    ],
)
def test_continuations(text, expected):
    assert parse_properties(text)["a"] == expected


def test_continuation_in_key():
    assert parse_properties("ke\\\n   y=v") == {"key": "v"}


@pytest.mark.parametrize("ending", ["\n", "\r", "\r\n"])
def test_line_endings(ending):
    text = ending.join(["a=1", "b=2\\", "  3", "# c", "d=4"]) + ending
    assert parse_properties(text) == {"a": "1", "b": "23", "d": "4"}


def test_escapes():
    assert parse_properties(r"a=\t\n\r\f") == {"a": "\t\n\r\f"}
    assert parse_properties(r"a=\u0041\u00e9\u20AC") == {"a": "Aé€"}
    assert parse_properties(r"a=\b\z\"\'") == {"a": "bz\"'"}
    assert parse_properties(r"a=C:\\temp\\x") == {"a": "C:\\temp\\x"}
    assert parse_properties(r"\u0061\u003d=v") == {"a=": "v"}
    assert parse_properties("a=\\ leading") == {"a": " leading"}
    assert parse_properties(r"a\\=b") == {"a\\": "b"}  # an escaped backslash does not escape the separator
    assert parse_properties(r"a\=b=c") == {"a=b": "c"}


@pytest.mark.parametrize("bad", [r"a=\u12", r"a=\u12G4", "a=\\u"])
def test_malformed_unicode_escape(bad):
    with pytest.raises(ConfigException, match=r"line 1: Malformed \\uxxxx encoding"):
        parse_properties(bad)


def test_later_duplicate_wins():
    assert parse_properties("a=1\nb=2\na=3\n") == {"a": "3", "b": "2"}


def test_load_file_utf8_latin1_and_bom(tmp_path):
    path = tmp_path / "w.properties"
    path.write_bytes("\ufeffname=caf\u00e9\n".encode("utf-8"))
    assert load_properties(path) == {"name": "café"}
    path.write_bytes("name=caf\u00e9\n".encode("iso-8859-1"))
    assert load_properties(str(path)) == {"name": "café"}


def test_load_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigException, match="nope.properties"):
        load_properties(missing)


def test_error_names_file_and_line(tmp_path):
    path = tmp_path / "bad.properties"
    path.write_text("a=1\n\nb=\\u00zz\n")
    with pytest.raises(ConfigException, match=r"bad.properties:3"):
        load_properties(path)


@pytest.mark.parametrize(
    "props",
    [
        {"a": "1", "b c": " d ", "e=f": "g:h", "#x": "!y", "t": "a\tb\nc\\", "uni": "é€\x01", "": ""},
    ],
)
def test_format_round_trip(props):
    text = format_properties(props, header="written by a test\nsecond line")
    assert text.startswith("# written by a test\n# second line\n")
    assert parse_properties(text) == props
