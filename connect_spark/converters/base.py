"""What the built-in converters share: the ``converter.type`` key and Java-like string forms.

Kafka's ``ConverterConfig`` declares ``converter.type`` (``key``, ``value`` or ``header``); the runtime
sets it through ``configure(configs, is_key)``. A converter that is also a header converter is
configured with ``configure(configs)`` and then acts as a header converter.
"""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.data import Struct
from connect_spark.api.data.java_semantics import java_double_str
from connect_spark.config.definition import ConfigDef, Importance, Type, ValidString

__all__ = ["TYPE_CONFIG", "converter_config_def", "converter_type", "java_to_string"]

TYPE_CONFIG = "converter.type"
"""Whether the converter handles keys, values or headers (set by the runtime)."""

_TYPE_DOC = "How this converter will be used: key, value or header. Set by the runtime, not by users."


def converter_config_def() -> ConfigDef:
    """A new ConfigDef holding ``converter.type`` (Kafka's ``ConverterConfig.newConfigDef()``)."""
    return ConfigDef().define(
        TYPE_CONFIG, Type.STRING, None, validator=ValidString.in_("key", "value", "header"),
        importance=Importance.LOW, doc=_TYPE_DOC,
    )


def converter_type(configs: Mapping[str, Any], is_key: bool | None) -> dict[str, Any]:
    """``configs`` with ``converter.type`` set from ``is_key`` (``None``: as given, else ``header``)."""
    props = dict(configs)
    if is_key is not None:
        props[TYPE_CONFIG] = "key" if is_key else "value"
    elif props.get(TYPE_CONFIG) is None:
        props[TYPE_CONFIG] = "header"
    return props


def java_to_string(value: Any) -> str:
    """What Java's ``String.valueOf(value)`` gives for a Connect value, near enough for a string form."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, Struct):
        return repr(value)
    return str(value)
