"""Typed configuration declarations: the Python counterpart of Kafka's ``ConfigDef``.

Every configuration key connect_spark or a plugin reads is declared once, with its type, default,
validator, importance and documentation::

    cd = (ConfigDef()
          .define("spec", Type.LIST, NO_DEFAULT, importance=Importance.HIGH, doc="...")
          .define("delimiter", Type.STRING, ".", importance=Importance.MEDIUM, doc="..."))
    values = cd.parse(props)

Who calls what:

* Plugins return a :class:`ConfigDef` from their ``config()`` method; the runtime validates it
  before any SparkSession exists (``connect_spark.config.validation``) and the plugin parses its
  own properties with :meth:`ConfigDef.parse` in ``configure``/``start``.
* The worker and connector declarations (``connect_spark.config.worker`` and ``.connector``) are
  built from this module, and the Markdown reference is rendered from them
  (``connect_spark.config.docs``).

Parsing collects every problem at once: :meth:`ConfigDef.parse` raises one
:class:`ConfigValidationError` listing them all; :meth:`ConfigDef.validate` returns them.

Values given as strings are parsed the way Kafka parses them (strings are trimmed, booleans are
``true``/``false`` in any case, lists are comma separated); values that already have the right
Python type are accepted as they are.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from connect_spark.api.errors import ConfigException

__all__ = [
    "NO_DEFAULT",
    "Type",
    "Importance",
    "Password",
    "ConfigKey",
    "ConfigIssue",
    "ConfigValidationError",
    "ConfigDef",
    "Validator",
    "Range",
    "ValidString",
    "ValidList",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "ValidRegex",
    "CompositeValidator",
    "LambdaValidator",
]


class _NoDefault:
    """Marker type of :data:`NO_DEFAULT`."""

    _instance: "_NoDefault | None" = None

    def __new__(cls) -> "_NoDefault":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Default of a required key: parsing fails when the key is missing."""


class Type(enum.Enum):
    """The type of a configuration value, and how a string is parsed into it."""

    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


class Importance(enum.Enum):
    """How much a user should care about a key; orders the generated reference."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Password:
    """A secret configuration value whose string form never shows the secret.

    ``str()`` and ``repr()`` give ``[hidden]``, so a Password may be logged or put in an error
    message safely. :attr:`value` gives the secret to the code that needs it.
    """

    HIDDEN = "[hidden]"
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    @property
    def value(self) -> str:
        """The secret itself."""
        return self._value

    def __str__(self) -> str:
        return self.HIDDEN

    def __repr__(self) -> str:
        return self.HIDDEN

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


Validator = Callable[[str, Any], None]
"""A callable ``(name, value) -> None`` that raises :class:`ConfigException` for a bad value.

Validators are called with the parsed value, and not called when the value is ``None`` (a key whose
default is ``None`` and that was not set). Give validators a ``__str__`` describing the valid values:
it is shown in the generated reference.
"""


@dataclass(frozen=True)
class ConfigKey:
    """One declared key. Built by :meth:`ConfigDef.define`; read by parsers and the docs renderer.

    Attributes:
        name: the key.
        type: the value type.
        default: the parsed default, ``None`` for an optional key without a value, or
            :data:`NO_DEFAULT` for a required key.
        validator: checks the parsed value, or ``None``.
        importance: how much a user should care.
        doc: one or a few sentences for the reference.
        group: an optional heading the reference groups keys under.
    """

    name: str
    type: Type
    default: Any
    validator: Validator | None
    importance: Importance
    doc: str
    group: str | None = None

    @property
    def required(self) -> bool:
        """True when the key has no default and must be set."""
        return self.default is NO_DEFAULT


class ConfigIssue(NamedTuple):
    """One configuration problem: the key, the offending value and a full sentence saying what is wrong.

    ``value`` is ``None`` for a missing key; for a PASSWORD key it is a :class:`Password`, which never
    shows the secret.
    """

    key: str
    value: Any
    message: str

    def __str__(self) -> str:
        return self.message


class ConfigValidationError(ConfigException):
    """Every problem found in one or more configurations, reported at once.

    Args:
        issues: the problems, in the order found. ``str()`` of the error lists every message, one a line.
        title: an optional first line (defaults to a count of the problems).

    Attributes:
        issues: the list of :class:`ConfigIssue`.
    """

    def __init__(self, issues: Sequence[ConfigIssue], title: str | None = None) -> None:
        self.issues: list[ConfigIssue] = list(issues)
        count = len(self.issues)
        if title is None:
            title = f"{count} configuration problem{'s' if count != 1 else ''}"
        lines = [f"{title}:"] + [f"  - {issue.message}" for issue in self.issues]
        super().__init__("\n".join(lines))


# --- value parsing ------------------------------------------------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+")
_COMMA = re.compile(r"\s*,\s*")
_BOUNDS = {
    Type.SHORT: (-(2**15), 2**15 - 1),
    Type.INT: (-(2**31), 2**31 - 1),
    Type.LONG: (-(2**63), 2**63 - 1),
}


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def parse_type(name: str, value: Any, type_: Type) -> Any:
    """Parse one raw value (a string or an already-typed value) into ``type_``.

    Called by :meth:`ConfigDef.parse` for every key that is set, and for defaults at declaration time.

    Raises:
        ConfigException: naming the key, the value and the expected type.
    """
    if value is None:
        return None
    if isinstance(value, Password) and type_ is not Type.PASSWORD:
        value = value.value
    trimmed = value.strip() if isinstance(value, str) else value
    if type_ is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            if trimmed.lower() == "true":
                return True
            if trimmed.lower() == "false":
                return False
        raise ConfigException("Expected value to be either true or false", name, value)
    if type_ is Type.PASSWORD:
        if isinstance(value, Password):
            return value
        if isinstance(value, str):
            return Password(trimmed)
        raise ConfigException(f"Expected value to be a string, but it was a {type(value).__name__}", name, "[hidden]")
    if type_ is Type.STRING:
        if isinstance(value, str):
            return trimmed
        raise ConfigException(f"Expected value to be a string, but it was a {type(value).__name__}", name, value)
    if type_ in _BOUNDS:
        low, high = _BOUNDS[type_]
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _INTEGER.fullmatch(trimmed):
            number = int(trimmed)
        else:
            raise ConfigException(f"Not a number of type {type_.name}", name, value)
        if not low <= number <= high:
            raise ConfigException(f"Not a number of type {type_.name} (out of range {low}..{high})", name, value)
        return number
    if type_ is Type.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and "_" not in trimmed:
            try:
                return float(trimmed)
            except ValueError:
                pass
        raise ConfigException("Not a number of type DOUBLE", name, value)
    if type_ is Type.LIST:
        if isinstance(value, str):
            return [] if not trimmed else _COMMA.split(trimmed)
        if isinstance(value, (list, tuple)):
            return [item.strip() if isinstance(item, str) else item for item in value]
        raise ConfigException("Expected a comma separated list", name, value)
    if type_ is Type.CLASS:
        if isinstance(value, str):
            return trimmed
        if isinstance(value, type):
            return _class_name(value)
        raise ConfigException("Expected a class name", name, value)
    raise AssertionError(f"unknown type {type_}")  # pragma: no cover


# --- the declaration ----------------------------------------------------------------------------


class ConfigDef:
    """An ordered set of declared keys; parses and validates property mappings against them.

    ``define`` returns the ConfigDef itself, so declarations chain. Declaring a key twice is a
    programming error (``ValueError``); so is a default that does not pass its own validator.
    """

    def __init__(self) -> None:
        self._keys: dict[str, ConfigKey] = {}

    def define(
        self,
        name: str,
        type: Type,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        doc: str = "",
        group: str | None = None,
    ) -> "ConfigDef":
        """Declare one key.

        Args:
            name: the key.
            type: its :class:`Type`.
            default: the default (a string or a typed value, parsed like a user value), ``None`` for an
                optional key, or :data:`NO_DEFAULT` for a required one.
            validator: a :data:`Validator`, run on the parsed value.
            importance: how much a user should care.
            doc: the documentation shown in the generated reference.
            group: an optional heading for the reference.

        Returns:
            This ConfigDef, to chain calls.

        Raises:
            ValueError: when the key is already declared or its default is invalid.
        """
        if name in self._keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        if default is not NO_DEFAULT and default is not None:
            try:
                default = parse_type(name, default, type)
                if validator is not None:
                    validator(name, default)
            except ConfigException as e:
                raise ValueError(f"Invalid default for configuration {name}: {e}") from e
        self._keys[name] = ConfigKey(name, type, default, validator, importance, doc, group)
        return self

    def define_all(self, other: "ConfigDef") -> "ConfigDef":
        """Declare every key of ``other`` here too (same rules as :meth:`define`); returns self."""
        for key in other._keys.values():
            if key.name in self._keys:
                raise ValueError(f"Configuration {key.name} is defined twice.")
            self._keys[key.name] = key
        return self

    def with_prefix(self, prefix: str) -> "ConfigDef":
        """A new ConfigDef with every key renamed ``prefix + name`` (like Kafka's ``ConfigDef.embed``).

        Used to validate a plugin's keys where they live in the connector configuration
        (``transforms.<alias>.``, ``value.converter.``), so that messages name the full key.
        """
        embedded = ConfigDef()
        for key in self._keys.values():
            embedded._keys[prefix + key.name] = ConfigKey(
                prefix + key.name, key.type, key.default, key.validator, key.importance, key.doc, key.group
            )
        return embedded

    def copy(self) -> "ConfigDef":
        """A new ConfigDef with the same keys, to extend without touching this one."""
        return ConfigDef().define_all(self)

    @property
    def keys(self) -> Mapping[str, ConfigKey]:
        """The declared keys by name, in declaration order (read-only view)."""
        return _ReadOnly(self._keys)

    def names(self) -> list[str]:
        """The declared key names, in declaration order."""
        return list(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def default_values(self) -> dict[str, Any]:
        """The defaults of every key that has one (``None`` included), by name."""
        return {k.name: k.default for k in self._keys.values() if not k.required}

    def parse_with_issues(self, props: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
        """Parse what can be parsed and collect every problem.

        A key whose value is invalid or missing is left out of the returned values. Keys that are not
        declared are ignored. A value of ``None`` counts as not set.

        Returns:
            ``(values, issues)``.
        """
        values: dict[str, Any] = {}
        issues: list[ConfigIssue] = []
        for key in self._keys.values():
            raw = props.get(key.name)
            if raw is None:
                if key.required:
                    issues.append(
                        ConfigIssue(
                            key.name, None, f'Missing required configuration "{key.name}" which has no default value.'
                        )
                    )
                    continue
                values[key.name] = key.default
                continue
            try:
                value = parse_type(key.name, raw, key.type)
                if key.validator is not None and value is not None:
                    key.validator(key.name, value)
            except ConfigException as e:
                shown = Password(str(raw)) if key.type is Type.PASSWORD and not isinstance(raw, Password) else raw
                issues.append(ConfigIssue(key.name, shown, _message(e, key.name, shown)))
                continue
            values[key.name] = value
        return values, issues

    def validate(self, props: Mapping[str, Any]) -> list[ConfigIssue]:
        """Every problem with ``props``, without raising. Empty when the configuration is valid."""
        return self.parse_with_issues(props)[1]

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``props`` into typed values, defaults included, for every declared key.

        Raises:
            ConfigValidationError: listing every problem found.
        """
        values, issues = self.parse_with_issues(props)
        if issues:
            raise ConfigValidationError(issues)
        return values


def _message(error: ConfigException, name: str, value: Any) -> str:
    """The full sentence of an error: the key, the value as the user wrote it, and the reason."""
    key = getattr(error, "key", None)
    if key is not None and key != name:
        return str(error)
    reason = getattr(error, "reason", None) or str(error)
    return str(ConfigException(reason, name, value))


class _ReadOnly(Mapping[str, ConfigKey]):
    def __init__(self, data: dict[str, ConfigKey]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> ConfigKey:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"{{{', '.join(self._data)}}}"


# --- validators ---------------------------------------------------------------------------------


class Range:
    """A numeric range, inclusive at both ends. Build with :meth:`at_least`, :meth:`at_most` or :meth:`between`."""

    def __init__(self, low: float | None, high: float | None) -> None:
        self.low = low
        self.high = high

    @classmethod
    def at_least(cls, low: float) -> "Range":
        """Values ``>= low``."""
        return cls(low, None)

    @classmethod
    def at_most(cls, high: float) -> "Range":
        """Values ``<= high``."""
        return cls(None, high)

    @classmethod
    def between(cls, low: float, high: float) -> "Range":
        """Values in ``[low, high]``."""
        return cls(low, high)

    def __call__(self, name: str, value: Any) -> None:
        if self.low is not None and value < self.low:
            if self.high is None:
                raise ConfigException(f"Value must be at least {self.low}", name, value)
            raise ConfigException(f"Value must be between {self.low} and {self.high}", name, value)
        if self.high is not None and value > self.high:
            if self.low is None:
                raise ConfigException(f"Value must be no more than {self.high}", name, value)
            raise ConfigException(f"Value must be between {self.low} and {self.high}", name, value)

    def __str__(self) -> str:
        low = "..." if self.low is None else str(self.low)
        high = "..." if self.high is None else str(self.high)
        if self.low is not None and self.high is not None:
            return f"[{low},...,{high}]"
        return f"[{low},{high}]" if self.low is None else f"[{low},...]"


class ValidString:
    """A string from a fixed set. Build with :meth:`in_`."""

    def __init__(self, allowed: Sequence[str], case_insensitive: bool = False) -> None:
        self.allowed = list(allowed)
        self.case_insensitive = case_insensitive

    @classmethod
    def in_(cls, *allowed: str, case_insensitive: bool = False) -> "ValidString":
        """One of ``allowed`` (compared ignoring case when ``case_insensitive``)."""
        return cls(allowed, case_insensitive)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is one of the allowed strings."""
        if not isinstance(value, str):
            return False
        if self.case_insensitive:
            return value.lower() in {a.lower() for a in self.allowed}
        return value in self.allowed

    def __call__(self, name: str, value: Any) -> None:
        if not self.accepts(value):
            how = " (case insensitive)" if self.case_insensitive else ""
            raise ConfigException(f"String must be one of{how}: {', '.join(self.allowed)}", name, value)

    def __str__(self) -> str:
        return f"[{', '.join(self.allowed)}]"


class ValidList:
    """A list whose every item is from a fixed set. Build with :meth:`in_`."""

    def __init__(self, allowed: Sequence[str], allow_empty: bool = True, case_insensitive: bool = False) -> None:
        self.items = ValidString(allowed, case_insensitive)
        self.allow_empty = allow_empty

    @classmethod
    def in_(cls, *allowed: str, allow_empty: bool = True, case_insensitive: bool = False) -> "ValidList":
        """Each item one of ``allowed``; an empty list only when ``allow_empty``."""
        return cls(allowed, allow_empty, case_insensitive)

    def __call__(self, name: str, value: Any) -> None:
        if not value and not self.allow_empty:
            raise ConfigException("List must not be empty", name, value)
        for item in value:
            if not self.items.accepts(item):
                raise ConfigException(
                    f"Item {item!r} is not allowed; each item must be one of: {', '.join(self.items.allowed)}",
                    name,
                    value,
                )

    def __str__(self) -> str:
        return str(self.items)


class NonEmptyString:
    """A string that is not empty (after the trimming all strings get)."""

    def __call__(self, name: str, value: Any) -> None:
        if isinstance(value, str) and not value:
            raise ConfigException("String must be non-empty", name, value)

    def __str__(self) -> str:
        return "non-empty string"


class NonEmptyStringWithoutControlChars:
    """A non-empty string without ISO control characters (used for connector names, as in Kafka)."""

    def __call__(self, name: str, value: Any) -> None:
        if isinstance(value, str):
            if not value:
                raise ConfigException("String may not be empty", name, value)
            if any(_is_iso_control(c) for c in value):
                raise ConfigException("String may not contain control sequences", name, value)

    def __str__(self) -> str:
        return "non-empty string without ISO control characters"


def _is_iso_control(char: str) -> bool:
    code = ord(char)
    return code <= 0x1F or 0x7F <= code <= 0x9F


class ValidRegex:
    """A string that compiles as a regular expression (Python ``re`` syntax, close to Java's for common patterns)."""

    def __call__(self, name: str, value: Any) -> None:
        if not isinstance(value, str):
            return
        try:
            re.compile(value)
        except re.error as e:
            raise ConfigException(f"Invalid regular expression: {e}", name, value) from None

    def __str__(self) -> str:
        return "valid regex"


class CompositeValidator:
    """All of several validators, in order; the first failure is reported."""

    def __init__(self, validators: Iterable[Validator]) -> None:
        self.validators = list(validators)

    @classmethod
    def of(cls, *validators: Validator) -> "CompositeValidator":
        """Combine ``validators``."""
        return cls(validators)

    def __call__(self, name: str, value: Any) -> None:
        for validator in self.validators:
            validator(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


class LambdaValidator:
    """A validator from a function and a description (the description is shown in the reference)."""

    def __init__(self, check: Validator, description: str) -> None:
        self.check = check
        self.description = description

    @classmethod
    def with_(cls, check: Validator, description: str) -> "LambdaValidator":
        """Wrap ``check`` (which raises :class:`ConfigException`) with ``description``."""
        return cls(check, description)

    def __call__(self, name: str, value: Any) -> None:
        self.check(name, value)

    def __str__(self) -> str:
        return self.description
