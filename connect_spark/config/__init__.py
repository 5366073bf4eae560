"""Configuration: typed declarations, ``.properties`` files, config providers, secrets, worker and
connector configs, and the up-front validation the CLI runs before any SparkSession exists.

Nothing in this package imports pyspark.
"""

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
]
