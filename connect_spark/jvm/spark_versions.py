"""Which Spark is running here, and which JVM pieces exist for it: the one table of version facts.

connect_spark lives inside the user's Spark: it supports every pyspark of the minors in
:data:`SUPPORTED_SPARK_MINORS` and picks the JVM jars for the pyspark and delta-spark that are installed,
never the other way round. Everything that differs between Spark versions is decided here:

* Spark's Kafka source and Avro functions: the same version as pyspark, exactly;
* Delta Lake: the version of the installed delta-spark when there is one (its Python API is a thin layer
  over its jar, so the two must agree), else :data:`DEFAULT_DELTA_FOR_SPARK` (the Delta sink itself uses
  only SQL and needs no Python package of Delta's); from Delta 4.1 on, Delta's Maven artifact carries the
  Spark minor it was built for, and each Spark minor has a first Delta release built for it
  (:data:`FIRST_DELTA_FOR_SPARK`);
* Apache Iceberg: the newest runtime built for the Spark minor (:data:`ICEBERG_FOR_SPARK`), or none.

Called by :mod:`connect_spark.jvm.artifacts` to name the jars of the running versions, by connector
validation (:func:`missing_support_reason`) to refuse a connector whose JVM piece does not exist for the
running Spark before any session starts, and by ``connect-spark jars``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from importlib import metadata

from connect_spark.api.errors import ConnectException

__all__ = [
    "DEFAULT_DELTA_FOR_SPARK",
    "FIRST_DELTA_FOR_SPARK",
    "ICEBERG_FOR_SPARK",
    "SCALA_BINARY",
    "SPARK_VERSION_ENV",
    "SUPPORTED_SPARK_MINORS",
    "TESTED_SPARK_VERSIONS",
    "RunningVersions",
    "UnsupportedSparkVersion",
    "delta_artifact",
    "iceberg_runtime",
    "missing_support_reason",
    "minor_of",
    "running_versions",
]

SCALA_BINARY = "2.13"
#: The Spark minors connect_spark supports; each is tested (``.ci/run``).
SUPPORTED_SPARK_MINORS = ("4.0", "4.1", "4.2")
#: The exact pyspark of each minor that CI tests (``.ci/constraints/``); the default environment is 4.1.
TESTED_SPARK_VERSIONS = {"4.0": "4.0.0", "4.1": "4.1.1", "4.2": "4.2.0"}
#: The first Delta release built for each Spark minor (``io.delta:delta-spark_<minor>_2.13`` from 4.1 on;
#: Delta 4.0.x is the plain ``delta-spark_2.13``, for Spark 4.0 only).
FIRST_DELTA_FOR_SPARK = {"4.0": "4.0.0", "4.1": "4.1.0", "4.2": "4.4.0"}
#: The Delta release whose jars a Spark minor gets when no delta-spark is installed (the tested one).
DEFAULT_DELTA_FOR_SPARK = {"4.0": "4.0.1", "4.1": "4.4.0", "4.2": "4.4.0"}
#: Apache Iceberg's Spark runtime (``iceberg-spark-runtime-<minor>_2.13``) for each Spark minor that has one.
ICEBERG_FOR_SPARK = {"4.0": "1.11.0", "4.1": "1.12.0"}
#: Overrides the Spark version the jars are chosen for (a driver whose pyspark is not pip-installed).
SPARK_VERSION_ENV = "CONNECT_SPARK_SPARK_VERSION"


class UnsupportedSparkVersion(ConnectException):
    """The running pyspark (or the installed delta-spark) is one connect_spark has no jars for."""


def minor_of(version: str) -> str:
    """``"4.1.1"`` -> ``"4.1"``."""
    return ".".join(version.split(".")[:2])


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (``"4.4.0rc1"`` -> ``(4, 4, 0)``), for ordering."""
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit()) if not piece.isdigit() else piece
        parts.append(int(digits or 0))
    return tuple(parts)


@dataclasses.dataclass(frozen=True)
class RunningVersions:
    """The pyspark and delta-spark this process would run (``delta`` is None without delta-spark)."""

    spark: str
    delta: str | None

    @property
    def spark_minor(self) -> str:
        return minor_of(self.spark)

    @property
    def delta_jars(self) -> str:
        """The Delta release whose jars this Spark gets: the installed delta-spark's, else the default."""
        return self.delta or DEFAULT_DELTA_FOR_SPARK[self.spark_minor]

    def check(self) -> None:
        """Refuse a Spark minor or a Spark/Delta pair no jars exist for, naming what would work.

        Raises:
            UnsupportedSparkVersion: with the versions found and the supported ones.
        """
        if self.spark_minor not in SUPPORTED_SPARK_MINORS:
            raise UnsupportedSparkVersion(
                f"pyspark {self.spark} is not supported by connect_spark; supported: Spark "
                f"{', '.join(SUPPORTED_SPARK_MINORS)} (tested: {', '.join(TESTED_SPARK_VERSIONS.values())}). "
                f"Install one of them (pip install 'pyspark>={SUPPORTED_SPARK_MINORS[0]},"
                f"<{_next_minor(SUPPORTED_SPARK_MINORS[-1])}') or set {SPARK_VERSION_ENV}.")
        if self.delta is None:
            return
        first = FIRST_DELTA_FOR_SPARK[self.spark_minor]
        built_for_spark_40_only = _release(self.delta)[:2] == (4, 0)
        if _release(self.delta) < _release(first) or (built_for_spark_40_only and self.spark_minor != "4.0"):
            raise UnsupportedSparkVersion(
                f"delta-spark {self.delta} has no build for Spark {self.spark_minor} (pyspark {self.spark}); "
                f"the first Delta release for Spark {self.spark_minor} is {first}: "
                f"pip install 'delta-spark>={first}'.")


def _next_minor(minor: str) -> str:
    major, low = minor.split(".")
    return f"{major}.{int(low) + 1}"


@functools.lru_cache(maxsize=1)
def running_versions() -> RunningVersions:
    """The installed pyspark (or :data:`SPARK_VERSION_ENV`) and delta-spark; read once per process.

    Raises:
        UnsupportedSparkVersion: pyspark is not installed and the environment names no version.
    """
    spark = os.environ.get(SPARK_VERSION_ENV) or _installed("pyspark")
    if spark is None:
        try:
            from pyspark.version import __version__ as spark  # a pyspark on PYTHONPATH (SPARK_HOME/python)
        except ImportError:
            raise UnsupportedSparkVersion(
                f"pyspark is not installed; connect_spark needs pyspark {', '.join(SUPPORTED_SPARK_MINORS)} "
                f"(or {SPARK_VERSION_ENV} naming the cluster's Spark version)") from None
    return RunningVersions(spark=spark, delta=_installed("delta-spark"))


def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def delta_artifact(delta_version: str, spark_minor: str) -> str:
    """Delta's Maven artifact id for a Delta release and the Spark minor it runs on."""
    if _release(delta_version)[:2] >= (4, 1):
        return f"delta-spark_{spark_minor}_{SCALA_BINARY}"
    return f"delta-spark_{SCALA_BINARY}"


def iceberg_runtime(spark_minor: str) -> str | None:
    """``group:artifact:version`` of Iceberg's Spark runtime for the Spark minor, or None when none exists."""
    version = ICEBERG_FOR_SPARK.get(spark_minor)
    if version is None:
        return None
    return f"org.apache.iceberg:iceberg-spark-runtime-{spark_minor}_{SCALA_BINARY}:{version}"


#: What a connector may ask for (``SinkConnector.required_spark_support``) that some Spark minors lack, and
#: the table saying which minors have it.
_SUPPORT_BY_MINOR = {"iceberg": ("Apache Iceberg's Spark runtime", "Iceberg", ICEBERG_FOR_SPARK)}


def missing_support_reason(needs: "tuple[str, ...] | list[str]", versions: RunningVersions | None = None) -> str | None:
    """Why the running Spark cannot give a connector what it ``needs``, or None when it can.

    Called by connector validation before any session exists, so a connector whose JVM piece was never
    built for this Spark is refused with the versions that have it, not with a missing class at its first batch.
    """
    versions = versions or running_versions()
    for need in needs:
        if need not in _SUPPORT_BY_MINOR:
            continue
        what, short, by_minor = _SUPPORT_BY_MINOR[need]
        if versions.spark_minor not in by_minor:
            having = ", ".join(f"Spark {m} ({short} {v})" for m, v in by_minor.items())
            return (f"{what} does not exist for Spark {versions.spark_minor} (pyspark {versions.spark} is running); "
                    f"it exists for {having}: run this connector with one of those pyspark versions")
    return None
