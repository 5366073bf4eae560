"""The Spark catalog an Iceberg sink writes through: registered from ``iceberg.catalog.*`` at the task's ``open``.

Spark finds a catalog by its ``spark.sql.catalog.<name>`` settings, which may be set at runtime as long as
the catalog has not been used yet in the session. :func:`register_catalog` sets them (the catalog class
``org.apache.iceberg.spark.SparkCatalog``, each ``iceberg.catalog.<key>`` as ``spark.sql.catalog.<name>.<key>``,
each ``iceberg.hadoop.<key>`` as ``spark.sql.catalog.<name>.hadoop.<key>``), then lists the catalog's
namespaces once, so a missing Iceberg runtime or an unreachable catalog fails at ``open`` with a clear
message instead of at the first write.

Table metadata caching (``cache-enabled``) is off unless configured: the offsets a table holds must be
read fresh when a task resumes after another writer (or an earlier run) committed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from connect_spark.api.errors import ConnectException
from connect_spark.config.secrets import is_secret_key
from connect_spark.connectors.iceberg.config import CATALOG, CATALOG_PREFIX, IcebergSinkConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register_catalog", "catalog_settings", "java_reason", "IcebergRuntimeMissing", "SPARK_CATALOG_CLASS"]

log = logging.getLogger(__name__)

SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"

_HOW_TO_GET_ICEBERG = (
    "A session connect_spark's standalone worker builds for an Iceberg connector carries it, and so does "
    "connect_spark.spark_session.get_or_create_session(optional_sets=['iceberg']); for a session built elsewhere "
    "(a notebook, a cluster, distributed mode) add the jar `connect-spark jars` puts in .jars/spark-<version>/iceberg "
    "(spark.jars) or --packages org.apache.iceberg:iceberg-spark-runtime-<Spark minor>_2.13:<version>, with "
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
)


class IcebergRuntimeMissing(ConnectException):
    """The SparkSession has no Iceberg runtime on its classpath."""


def catalog_settings(config: IcebergSinkConfig) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>*`` settings of the sink's catalog (empty: use the session's own)."""
    if not config.catalog_properties and not config.hadoop_properties:
        return {}
    prefix = f"spark.sql.catalog.{config.catalog}"
    settings = {prefix: SPARK_CATALOG_CLASS, f"{prefix}.cache-enabled": "false"}
    settings.update({f"{prefix}.{k}": v for k, v in config.catalog_properties.items()})
    settings.update({f"{prefix}.hadoop.{k}": v for k, v in config.hadoop_properties.items()})
    return settings


def register_catalog(spark: "SparkSession", config: IcebergSinkConfig) -> None:
    """Register the sink's catalog in ``spark`` and check that it answers.

    Called by the task's ``open`` (and before its first write). Idempotent for the same settings.

    Raises:
        ConnectException: the catalog name is already registered with other settings, or no
            ``iceberg.catalog.*`` key is set and the session has no such catalog.
        IcebergRuntimeMissing: the session cannot load Iceberg's classes.
    """
    prefix = f"spark.sql.catalog.{config.catalog}"
    wanted = catalog_settings(config)
    if not wanted:
        if not spark.conf.get(prefix, None):
            raise ConnectException(
                f"No Iceberg catalog: set {CATALOG_PREFIX}type (hadoop, hive, jdbc, rest) or "
                f"{CATALOG_PREFIX}catalog-impl with its properties ({CATALOG_PREFIX}warehouse, {CATALOG_PREFIX}uri, "
                f"...), or register the catalog {config.catalog!r} in the session as {prefix} "
                f"({CATALOG}={config.catalog})")
    else:
        clashes = sorted(k for k, v in wanted.items()
                         if k != f"{prefix}.cache-enabled" and spark.conf.get(k, None) not in (None, v))
        if clashes:
            shown = ", ".join(k if not is_secret_key(k) else f"{k} (secret)" for k in clashes)
            raise ConnectException(
                f"The Spark catalog {config.catalog!r} is already registered in this session with other settings "
                f"({shown}); give this connector another {CATALOG} name")
        for key, value in wanted.items():
            if key == f"{prefix}.cache-enabled" and spark.conf.get(key, None) is not None:
                continue
            spark.conf.set(key, value)
    check_catalog(spark, config.catalog)


def check_catalog(spark: "SparkSession", catalog: str) -> None:
    """List the catalog's namespaces once: fails clearly when Iceberg is missing or the catalog is unreachable."""
    try:
        spark.sql(f"SHOW NAMESPACES IN `{catalog}`").collect()
    except Exception as e:  # Spark raises AnalysisException / Py4JJavaError with the JVM's reason
        text = str(e)
        if "NoSuchNamespaceException" in text:
            return  # an empty warehouse (a Hadoop catalog's folder not created yet): the catalog loaded
        if "ClassNotFound" in text or "CATALOG_PLUGIN_CLASS_NOT_FOUND" in text or "org.apache.iceberg" in text \
                and "NoClassDefFound" in text:
            raise IcebergRuntimeMissing(
                f"The SparkSession cannot load Iceberg's catalog {SPARK_CATALOG_CLASS} for catalog {catalog!r}: "
                f"the Iceberg runtime is not on its classpath. {_HOW_TO_GET_ICEBERG}.") from e
        raise ConnectException(f"The Iceberg catalog {catalog!r} does not answer: {java_reason(text)}") from e
    log.debug("Iceberg catalog %s ready", catalog)


def java_reason(text: str) -> str:
    """The first line of a Spark/Py4J error that names the JVM exception (else the first line)."""
    lines = [line.strip(" :") for line in text.splitlines() if line.strip()]
    for line in lines:
        if "Exception" in line and not line.startswith("An error occurred"):
            return line
    return lines[0] if lines else text
