"""The JVM artifacts connect_spark needs: coordinates for the running Spark and their resolution with Maven."""

from connect_spark.jvm.artifacts import (
    KAFKA_BROKER,
    KAFKA_CONNECT,
    DEBEZIUM_POSTGRES,
    OPENSEARCH,
    SCHEMA_REGISTRY,
    ArtifactSet,
    artifact_sets,
    delta_set,
    iceberg_set,
    jars_root,
    optional_artifact_sets,
    spark_kafka_set,
)
from connect_spark.jvm.resolver import JarResolutionError, ensure_resolved, is_resolved, jar_paths
from connect_spark.jvm.spark_versions import RunningVersions, UnsupportedSparkVersion, running_versions

__all__ = [
    "ArtifactSet",
    "JarResolutionError",
    "KAFKA_BROKER",
    "KAFKA_CONNECT",
    "DEBEZIUM_POSTGRES",
    "RunningVersions",
    "OPENSEARCH",
    "SCHEMA_REGISTRY",
    "UnsupportedSparkVersion",
    "artifact_sets",
    "delta_set",
    "ensure_resolved",
    "iceberg_set",
    "is_resolved",
    "jar_paths",
    "jars_root",
    "optional_artifact_sets",
    "running_versions",
    "spark_kafka_set",
]
