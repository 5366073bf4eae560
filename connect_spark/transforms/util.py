"""Helpers the built-in transforms share (Kafka's ``transforms.util`` and ``transforms.field`` packages).

* ``require_*``: type checks with Kafka's messages (``Requirements``).
* :func:`copy_schema_basics`: name, version, doc and parameters onto a builder (``SchemaUtil``).
* :class:`OperatesOnKey` / :class:`OperatesOnValue`: the ``$Key`` / ``$Value`` variants.
* :class:`SingleFieldPath`: ``field.syntax.version`` V1 (plain names) and V2 (dotted paths with
  backtick quoting), as KIP-821 defines them.
* :func:`java_regex`, :func:`java_replace_first`: Java regular expressions and ``$n`` replacements.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from connect_spark.api.data import Schema, SchemaBuilder, Struct, Type
from connect_spark.api.errors import ConfigException, DataException
from connect_spark.api.records import Headers, SinkRecord
from connect_spark.api.transforms import Transformation
from connect_spark.config.definition import ConfigDef, Importance, ValidString
from connect_spark.config.definition import Type as ConfigType

__all__ = [
    "class_name",
    "require_map",
    "require_map_or_null",
    "require_struct",
    "require_struct_or_null",
    "require_schema",
    "require_sink_record",
    "copy_schema_basics",
    "BaseTransformation",
    "KeyOrValueTransformation",
    "OperatesOnKey",
    "OperatesOnValue",
    "REPLACE_NULL_WITH_DEFAULT_CONFIG",
    "define_replace_null_with_default",
    "field_value",
    "non_empty_list",
    "FIELD_SYNTAX_VERSION_CONFIG",
    "define_field_syntax_version",
    "SingleFieldPath",
    "java_regex",
    "java_replace_first",
    "check_java_replacement",
]


def class_name(value: Any) -> str:
    """``null`` or the Python class name of ``value`` (Kafka's ``nullSafeClassName``)."""
    return "null" if value is None else type(value).__name__


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else :class:`DataException` (Kafka's ``requireMap``)."""
    if not isinstance(value, Mapping):
        raise DataException(
            f"Only Map objects supported in absence of schema for [{purpose}], found: {class_name(value)}")
    return value


def require_map_or_null(value: Any, purpose: str) -> Mapping[str, Any] | None:
    """``None``, or :func:`require_map`."""
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    """``value`` if it is a :class:`Struct`, else :class:`DataException` (Kafka's ``requireStruct``)."""
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: {class_name(value)}")
    return value


def require_struct_or_null(value: Any, purpose: str) -> Struct | None:
    """``None``, or :func:`require_struct`."""
    return None if value is None else require_struct(value, purpose)


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataException(f"Schema required for [{purpose}]")
    return schema


def require_sink_record(record: Any, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], found: {class_name(record)}")
    return record


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """Copy name, version, doc and parameters of ``source`` onto ``builder`` (a new one of its type by default).

    Not copied: optionality, default value and, for structs, the fields. Arrays and maps keep their
    element schemas when a new builder is made.
    """
    if builder is None:
        if source.type is Type.ARRAY:
            builder = SchemaBuilder.array(source.value_schema)  # type: ignore[arg-type]
        elif source.type is Type.MAP:
            builder = SchemaBuilder.map(source.key_schema, source.value_schema)  # type: ignore[arg-type]
        else:
            builder = SchemaBuilder(source.type)
    builder.name(source.name)
    builder.version(source.version)
    builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    return builder


class BaseTransformation(Transformation):
    """A transform whose configuration is declared by :meth:`config` and parsed by :meth:`parse_config`.

    ``kafka_class_name`` is the Kafka class this transform reproduces; the runtime reports it as the
    executing class of the TRANSFORMATION stage (``__connect.errors.class.name`` in the DLQ).
    """

    kafka_class_name = ""

    def parse_config(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``props`` with :meth:`config` (raises ``ConfigValidationError`` listing every problem)."""
        return self.config().parse(props)

    def close(self) -> None:
        """Nothing to release."""


class KeyOrValueTransformation(BaseTransformation):
    """Base of the transforms that come as ``$Key`` and ``$Value`` variants.

    The variant mixin (:class:`OperatesOnKey` or :class:`OperatesOnValue`, listed first in the
    variant's bases) supplies the three methods below.
    """

    def operating_schema(self, record: SinkRecord) -> Schema | None:
        """The schema of the part this variant operates on."""
        raise NotImplementedError

    def operating_value(self, record: SinkRecord) -> Any:
        """The part (key or value) this variant operates on."""
        raise NotImplementedError

    def new_record(self, record: SinkRecord, schema: Schema | None, value: Any,
                   headers: Headers | None = None) -> SinkRecord:
        """A copy of ``record`` with this variant's part replaced."""
        raise NotImplementedError


class OperatesOnKey:
    """The ``$Key`` variant: the transform reads and replaces the record key."""

    @staticmethod
    def operating_schema(record: SinkRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: SinkRecord) -> Any:
        return record.key

    @staticmethod
    def new_record(record: SinkRecord, schema: Schema | None, value: Any, headers: Headers | None = None) -> SinkRecord:
        return record.new_record(record.topic, record.kafka_partition, schema, value, record.value_schema,
                                 record.value, record.timestamp, headers)


class OperatesOnValue:
    """The ``$Value`` variant: the transform reads and replaces the record value."""

    @staticmethod
    def operating_schema(record: SinkRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: SinkRecord) -> Any:
        return record.value

    @staticmethod
    def new_record(record: SinkRecord, schema: Schema | None, value: Any, headers: Headers | None = None) -> SinkRecord:
        return record.new_record(record.topic, record.kafka_partition, record.key_schema, record.key, schema, value,
                                 record.timestamp, headers)


REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
_REPLACE_NULL_DOC = ("Whether to replace fields that have a default value and that are null to the default value. "
                     "When set to true, the default value is used, otherwise null is used.")


def define_replace_null_with_default(config: ConfigDef) -> ConfigDef:
    """Declare ``replace.null.with.default`` (BOOLEAN, default true) on ``config``."""
    return config.define(REPLACE_NULL_WITH_DEFAULT_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.MEDIUM,
                         doc=_REPLACE_NULL_DOC)


def field_value(struct: Struct, field: Any, replace_null_with_default: bool) -> Any:
    """A struct field's value, with its default for a null when ``replace_null_with_default``."""
    return struct.get(field) if replace_null_with_default else struct.get_without_default(field)


class _NonEmptyList:
    """Kafka's ``NonEmptyListValidator``."""

    def __call__(self, name: str, value: Any) -> None:
        if not value:
            raise ConfigException("Empty list", name, value)

    def __str__(self) -> str:
        return "non-empty list"


non_empty_list = _NonEmptyList()


# --- field paths (KIP-821) ----------------------------------------------------------------------

FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
_FIELD_SYNTAX_VERSION_DOC = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths are limited to access "
    "the elements at the root level of the struct or map. If set to `V2`, the syntax will support accessing nested "
    "elements. To access nested elements, dotted notation is used. If dots are already included in the field name, "
    "then backtick pairs can be used to wrap field names containing dots. E.g. to access the subfield `baz` from a "
    "field named \"foo.bar\" in a struct/map the following format can be used to access its elements: "
    "\"`foo.bar`.baz\"."
)


def define_field_syntax_version(config: ConfigDef) -> ConfigDef:
    """Declare ``field.syntax.version`` (``V1`` default or ``V2``, any case) on ``config``."""
    return config.define(FIELD_SYNTAX_VERSION_CONFIG, ConfigType.STRING, "V1",
                         validator=ValidString.in_("V1", "V2", case_insensitive=True), importance=Importance.HIGH,
                         doc=_FIELD_SYNTAX_VERSION_DOC)


class SingleFieldPath:
    """A path to one field: a plain name (V1), or dotted steps with backtick quoting (V2).

    V2 examples: ``foo.bar`` is ``["foo", "bar"]``; ```foo.bar`.baz`` is ``["foo.bar", "baz"]``; a
    backtick inside a quoted step is escaped with a backslash.

    Attributes:
        version: ``"V1"`` or ``"V2"``.
        steps: the field names from the root, as a tuple.
    """

    def __init__(self, path: str, version: str = "V1") -> None:
        self.version = version.upper()
        if self.version == "V1":
            self.steps: tuple[str, ...] = (path,)
        elif self.version == "V2":
            self.steps = tuple(_parse_v2(path))
        else:
            raise ConfigException(f"Unknown syntax version: {version}; allowed: V1, V2", FIELD_SYNTAX_VERSION_CONFIG,
                                  version)
        self.path = path

    def field_from(self, schema: Schema | None) -> Any:
        """The :class:`~connect_spark.api.data.Field` at this path in a struct schema, or ``None``."""
        if schema is None:
            return None
        current = schema
        for step in self.steps[:-1]:
            if current.type is not Type.STRUCT:
                return None
            field = current.field(step)
            if field is None:
                return None
            current = field.schema
        if current.type is not Type.STRUCT:
            return None
        return current.field(self.steps[-1])

    def value_from_struct(self, struct: Struct | None, replace_null_with_default: bool = True) -> Any:
        """The value at this path in a struct, or ``None`` when a step is missing or null."""
        current = struct
        for step in self.steps[:-1]:
            if current is None or current.schema.field(step) is None:
                return None
            current = require_struct_or_null(field_value(current, step, replace_null_with_default),
                                             "nested field access")
        if current is None or current.schema.field(self.steps[-1]) is None:
            return None
        return field_value(current, self.steps[-1], replace_null_with_default)

    def value_from_map(self, value: Mapping[str, Any] | None) -> Any:
        """The value at this path in a map, or ``None`` when a step is missing or null."""
        current = value
        for step in self.steps[:-1]:
            if current is None:
                return None
            current = require_map_or_null(current.get(step), "nested field access")
        return None if current is None else current.get(self.steps[-1])

    def __repr__(self) -> str:
        return f"SingleFieldPath({self.path!r}, {self.version})"


def _incomplete_backtick(path: str, position: int) -> ConfigException:
    return ConfigException(
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position "
        f"{position} to escape it"
    )


def _parse_v2(path: str) -> list[str]:
    steps: list[str] = []
    idx = 0
    length = len(path)
    while 0 <= idx < length:
        if path[idx] != "`":
            start = idx
            idx = path.find(".", idx)
            if idx >= 0:
                steps.append(path[start:idx])
                idx += 1
            else:
                steps.append(path[start:])
        else:
            backtick_at = idx
            idx += 1
            parts: list[str] = []
            start = idx
            while True:
                idx = path.find("`", idx)
                if idx == -1:
                    raise _incomplete_backtick(path, backtick_at)
                escaped = path[idx - 1] == "\\"
                if idx >= length - 1:
                    if escaped:
                        raise _incomplete_backtick(path, backtick_at)
                    parts.append(path[start:idx])
                    steps.append("".join(parts))
                    idx += 1
                    break
                if path[idx + 1] != ".":
                    idx += 1  # a backtick inside the name; keep looking for one followed by a dot
                    continue
                if escaped:
                    parts.append(path[start:idx - 1])
                    parts.append("`")
                    idx += 1
                    start = idx
                    continue
                parts.append(path[start:idx])
                steps.append("".join(parts))
                idx += 2
                break
    if path and path[-1] == ".":
        steps.append("")
    return steps


# --- Java regular expressions -------------------------------------------------------------------

_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_BACK_REFERENCE = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regular expression with Python's ``re``.

    The common syntax is shared; Java's named groups ``(?<name>...)``, back references
    ``\\k<name>`` and ``\\Q...\\E`` quoting are translated. Constructs Python lacks (``\\p{...}``
    classes, for instance) fail to compile.

    Raises:
        re.error: when the pattern does not compile.
    """
    return re.compile(_translate_java_regex(pattern))


def _translate_java_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        if pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i + 2)
            literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
            out.append(re.escape(literal))
            i = n if end < 0 else end + 2
            continue
        match = _NAMED_GROUP.match(pattern, i)
        if match:
            out.append(f"(?P<{match.group(1)}>")
            i = match.end()
            continue
        match = _BACK_REFERENCE.match(pattern, i)
        if match:
            out.append(f"(?P={match.group(1)})")
            i = match.end()
            continue
        if pattern[i] == "\\" and i + 1 < n:
            out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def _expand_java_replacement(match: re.Match[str], replacement: str) -> str:
    """Expand ``$n``, ``${name}`` and backslash escapes the way Java's ``Matcher.appendReplacement`` does."""
    out: list[str] = []
    i = 0
    n = len(replacement)
    group_count = match.re.groups
    while i < n:
        char = replacement[i]
        if char == "\\":
            i += 1
            if i >= n:
                raise ValueError("character to be escaped is missing")
            out.append(replacement[i])
            i += 1
        elif char == "$":
            i += 1
            if i >= n:
                raise ValueError("Illegal group reference: group index is missing")
            if replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1:end]
                if name not in match.re.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                out.append(match.group(name) or "")
                i = end + 1
            else:
                if not replacement[i].isdigit():
                    raise ValueError("Illegal group reference")
                number = int(replacement[i])
                if number > group_count:
                    raise ValueError(f"No group {number}")
                i += 1
                while i < n and replacement[i].isdigit():
                    candidate = number * 10 + int(replacement[i])
                    if candidate > group_count:
                        break
                    number = candidate
                    i += 1
                out.append(match.group(number) or "")
        else:
            out.append(char)
            i += 1
    return "".join(out)


def java_replace_first(pattern: re.Pattern[str], text: str, replacement: str) -> str:
    """``pattern.matcher(text).replaceFirst(replacement)`` with Java's replacement syntax."""
    return pattern.sub(lambda m: _expand_java_replacement(m, replacement), text, count=1)


def check_java_replacement(pattern: re.Pattern[str], replacement: str) -> None:
    """Check a Java replacement string against a pattern's groups, without a match.

    Raises:
        ValueError: naming the problem (an unknown group, a dangling ``$`` or ``\\``).
    """

    class _NoMatch:  # the parts of re.Match that the expander reads
        re = pattern

        @staticmethod
        def group(key: Any) -> str:
            return ""

    _expand_java_replacement(_NoMatch(), replacement)  # type: ignore[arg-type]
