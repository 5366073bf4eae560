"""Configuration: typed declarations, ``.properties`` files, config providers, secrets, worker and
connector configs, and the up-front validation the CLI runs before any SparkSession exists.

Modules, one job each:

* ``definition``: :class:`ConfigDef`, types, validators, :class:`ConfigValidationError`.
* ``properties``: Java ``.properties`` files.
* ``providers``: ``${env:VAR}`` / ``${file:path:key}`` references.
* ``secrets``: which keys are secret; masking.
* ``worker`` / ``connector``: ``WorkerConfig`` and ``ConnectorConfig`` (with ``abstract``, their base).
* ``validation``: ``validate_configs``, every problem of the worker and all connectors at once.
* ``docs``: the generated reference.

The definition names are imported eagerly (plugins use them); the others load on first use, so that
importing this package never imports plugin modules. Nothing in this package imports pyspark.
"""

from __future__ import annotations

import importlib
from typing import Any

from connect_spark.config.definition import (
    NO_DEFAULT,
    ConfigDef,
    ConfigIssue,
    ConfigKey,
    ConfigValidationError,
    Importance,
    NonEmptyString,
    Password,
    Range,
    Type,
    ValidList,
    ValidRegex,
    ValidString,
)

_LAZY = {
    "WorkerConfig": "connect_spark.config.worker",
    "WORKER_CONFIG_DEF": "connect_spark.config.worker",
    "ConnectorConfig": "connect_spark.config.connector",
    "CONNECTOR_CONFIG_DEF": "connect_spark.config.connector",
    "validate_configs": "connect_spark.config.validation",
    "load_properties": "connect_spark.config.properties",
    "parse_properties": "connect_spark.config.properties",
    "masked": "connect_spark.config.secrets",
    "is_secret_key": "connect_spark.config.secrets",
}

__all__ = [
    "NO_DEFAULT",
    "ConfigDef",
    "ConfigIssue",
    "ConfigKey",
    "ConfigValidationError",
    "Importance",
    "NonEmptyString",
    "Password",
    "Range",
    "Type",
    "ValidList",
    "ValidRegex",
    "ValidString",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
