"""ConfigDef: parsing of every type, validators, and reporting every problem at once."""

from __future__ import annotations

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import (
    NO_DEFAULT,
    CompositeValidator,
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    LambdaValidator,
    NonEmptyString,
    NonEmptyStringWithoutControlChars,
    Password,
    Range,
    Type,
    ValidList,
    ValidRegex,
    ValidString,
)


def one(type_: Type, raw: object, validator=None) -> object:
    return ConfigDef().define("k", type_, NO_DEFAULT, validator).parse({"k": raw})["k"]


def issues_of(type_: Type, raw: object, validator=None) -> list[ConfigIssue]:
    return ConfigDef().define("k", type_, NO_DEFAULT, validator).validate({"k": raw})


def test_the_documented_example_parses_with_defaults():
    cd = (
        ConfigDef()
        .define("spec", Type.LIST, NO_DEFAULT, validator=None, importance=Importance.HIGH, doc="the spec")
        .define("delimiter", Type.STRING, ".", importance=Importance.MEDIUM, doc="the delimiter")
    )
    assert cd.parse({"spec": "a.b, c", "unknown": "x"}) == {"spec": ["a.b", "c"], "delimiter": "."}
    assert cd.names() == ["spec", "delimiter"]
    key = cd.keys["spec"]
    assert (key.name, key.type, key.default, key.importance, key.doc, key.group) == (
        "spec", Type.LIST, NO_DEFAULT, Importance.HIGH, "the spec", None,
    )
    assert key.required and not cd.keys["delimiter"].required


@pytest.mark.parametrize("raw, expected", [("true", True), ("FALSE", False), (" True ", True), (True, True)])
def test_boolean(raw, expected):
    assert one(Type.BOOLEAN, raw) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "", 1])
def test_boolean_rejects(raw):
    [issue] = issues_of(Type.BOOLEAN, raw)
    assert "Expected value to be either true or false" in issue.message


@pytest.mark.parametrize(
    "type_, raw, expected",
    [
        (Type.INT, "42", 42),
        (Type.INT, " -7 ", -7),
        (Type.INT, "+3", 3),
        (Type.INT, 5, 5),
        (Type.INT, str(2**31 - 1), 2**31 - 1),
        (Type.SHORT, "-32768", -32768),
        (Type.LONG, str(2**63 - 1), 2**63 - 1),
        (Type.DOUBLE, "1.5", 1.5),
        (Type.DOUBLE, 2, 2.0),
        (Type.DOUBLE, "1e3", 1000.0),
    ],
)
def test_numbers(type_, raw, expected):
    assert one(type_, raw) == expected


@pytest.mark.parametrize(
    "type_, raw",
    [
        (Type.INT, "abc"),
        (Type.INT, "1.0"),
        (Type.INT, "1_000"),
        (Type.INT, str(2**31)),
        (Type.INT, True),
        (Type.SHORT, "32768"),
        (Type.LONG, str(2**63)),
        (Type.DOUBLE, "x"),
    ],
)
def test_numbers_reject(type_, raw):
    [issue] = issues_of(type_, raw)
    assert f"Not a number of type {type_.name}" in issue.message
    assert issue.key == "k" and issue.value == raw


def test_kafka_like_message_names_key_value_and_type():
    [issue] = ConfigDef().define("tasks.max", Type.INT, 1).validate({"tasks.max": "abc"})
    assert issue.message == "Invalid value 'abc' for configuration tasks.max: Not a number of type INT"


@pytest.mark.parametrize(
    "raw, expected",
    [("a, b ,c", ["a", "b", "c"]), ("", []), ("   ", []), ("a,,b", ["a", "", "b"]), (["x ", "y"], ["x", "y"])],
)
def test_list(raw, expected):
    assert one(Type.LIST, raw) == expected


def test_string_is_trimmed_and_class_kept_as_string():
    assert one(Type.STRING, "  x ") == "x"
    assert one(Type.CLASS, " org.example.Foo ") == "org.example.Foo"
    assert one(Type.CLASS, Password) == "connect_spark.config.definition:Password"


def test_password_is_hidden():
    value = one(Type.PASSWORD, "s3cret")
    assert isinstance(value, Password)
    assert value.value == "s3cret"
    assert str(value) == repr(value) == "[hidden]"
    assert f"{[value]}" == "[[hidden]]"


def test_password_never_in_issue_messages():
    bad = ConfigDef().define("pw", Type.PASSWORD, None, LambdaValidator.with_(_always_fail, "never"))
    [issue] = bad.validate({"pw": "s3cret"})
    assert "s3cret" not in issue.message and "s3cret" not in repr(issue)


def _always_fail(name, value):
    raise ConfigException("nope", name, value)


def test_missing_required():
    [issue] = ConfigDef().define("name", Type.STRING).validate({})
    assert issue == ConfigIssue("name", None, 'Missing required configuration "name" which has no default value.')


def test_none_counts_as_unset_and_skips_validators():
    cd = ConfigDef().define("opt", Type.INT, None, Range.at_least(1)).define("d", Type.INT, 3)
    assert cd.parse({"opt": None, "d": None}) == {"opt": None, "d": 3}


def test_every_problem_is_reported_at_once():
    cd = (
        ConfigDef()
        .define("a", Type.INT, NO_DEFAULT)
        .define("b", Type.BOOLEAN, False)
        .define("c", Type.STRING, "x", ValidString.in_("x", "y"))
        .define("d", Type.LONG, 0, Range.at_least(-1))
    )
    with pytest.raises(ConfigValidationError) as info:
        cd.parse({"b": "maybe", "c": "z", "d": "-2"})
    error = info.value
    assert isinstance(error, ConfigException)
    assert [i.key for i in error.issues] == ["a", "b", "c", "d"]
    text = str(error)
    assert text.startswith("4 configuration problems:")
    for issue in error.issues:
        assert issue.message in text
    assert cd.validate({"a": "1"}) == []


def test_define_twice_and_bad_default_are_programming_errors():
    with pytest.raises(ValueError, match="defined twice"):
        ConfigDef().define("a", Type.INT, 1).define("a", Type.INT, 2)
    with pytest.raises(ValueError, match="Invalid default"):
        ConfigDef().define("a", Type.INT, 0, Range.at_least(1))


def test_defaults_are_parsed():
    cd = ConfigDef().define("l", Type.LIST, "a,b").define("p", Type.PASSWORD, "x")
    assert cd.keys["l"].default == ["a", "b"]
    assert isinstance(cd.keys["p"].default, Password)


def test_range():
    r = Range.between(1, 10)
    r("k", 1)
    r("k", 10)
    with pytest.raises(ConfigException, match="between 1 and 10"):
        r("k", 11)
    with pytest.raises(ConfigException, match="at least 1"):
        Range.at_least(1)("k", 0)
    with pytest.raises(ConfigException, match="no more than 5"):
        Range.at_most(5)("k", 6)
    assert str(Range.at_least(1)) == "[1,...]"
    assert str(r) == "[1,...,10]"


def test_valid_string_and_list():
    ValidString.in_("All", "None", case_insensitive=True)("k", "all")
    with pytest.raises(ConfigException, match="case insensitive"):
        ValidString.in_("All", "None", case_insensitive=True)("k", "some")
    with pytest.raises(ConfigException, match="String must be one of: a, b"):
        ValidString.in_("a", "b")("k", "A")
    ValidList.in_("a", "b")("k", ["a", "b", "a"])
    with pytest.raises(ConfigException, match="'c'"):
        ValidList.in_("a", "b")("k", ["a", "c"])
    with pytest.raises(ConfigException, match="must not be empty"):
        ValidList.in_("a", allow_empty=False)("k", [])
    assert str(ValidString.in_("a", "b")) == "[a, b]"


def test_string_validators():
    with pytest.raises(ConfigException, match="non-empty"):
        NonEmptyString()("k", "")
    with pytest.raises(ConfigException, match="control"):
        NonEmptyStringWithoutControlChars()("k", "a\tb")
    with pytest.raises(ConfigException, match="control"):
        NonEmptyStringWithoutControlChars()("k", "a\x85b")
    NonEmptyStringWithoutControlChars()("k", "sink-1 é")
    ValidRegex()("k", "topic-.*")
    with pytest.raises(ConfigException, match="Invalid regular expression"):
        ValidRegex()("k", "topic-(")
    both = CompositeValidator.of(NonEmptyString(), ValidRegex())
    with pytest.raises(ConfigException):
        both("k", "")
    assert str(both) == "non-empty string, valid regex"


def test_validator_without_key_gets_one():
    def bare(name, value):
        raise ConfigException("bad")

    [issue] = ConfigDef().define("k", Type.STRING, None, bare).validate({"k": "v"})
    assert issue.message == "Invalid value 'v' for configuration k: bad"


def test_keys_view_is_read_only_and_copy_is_independent():
    cd = ConfigDef().define("a", Type.INT, 1)
    with pytest.raises(TypeError):
        cd.keys["b"] = None  # type: ignore[index]
    extended = cd.copy().define("b", Type.INT, 2)
    assert "b" in extended and "b" not in cd and len(extended) == 2


def test_with_prefix_names_full_keys():
    embedded = ConfigDef().define("regex", Type.STRING, NO_DEFAULT, ValidRegex()).with_prefix("transforms.route.")
    assert embedded.names() == ["transforms.route.regex"]
    [issue] = embedded.validate({"transforms.route.regex": "("})
    assert issue.key == "transforms.route.regex" and "configuration transforms.route.regex" in issue.message


def test_package_exports_lazily():
    import connect_spark.config as config

    assert config.ConfigDef is ConfigDef
    assert config.WorkerConfig.__name__ == "WorkerConfig"
    with pytest.raises(AttributeError):
        config.NoSuchThing  # noqa: B018
