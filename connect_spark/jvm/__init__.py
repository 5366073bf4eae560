"""The JVM artifacts connect_spark needs: pinned coordinates and their resolution with Maven."""

from connect_spark.jvm.artifacts import (
    ARTIFACT_SETS,
    DELTA,
    ICEBERG,
    KAFKA_BROKER,
    KAFKA_CONNECT,
    OPENSEARCH,
    OPTIONAL_ARTIFACT_SETS,
    SCHEMA_REGISTRY,
    SPARK_KAFKA,
    ArtifactSet,
    jars_root,
)
from connect_spark.jvm.resolver import JarResolutionError, ensure_resolved, is_resolved, jar_paths

__all__ = [
    "ARTIFACT_SETS",
    "ArtifactSet",
    "DELTA",
    "ICEBERG",
    "JarResolutionError",
    "KAFKA_BROKER",
    "KAFKA_CONNECT",
    "OPENSEARCH",
    "OPTIONAL_ARTIFACT_SETS",
    "SCHEMA_REGISTRY",
    "SPARK_KAFKA",
    "ensure_resolved",
    "is_resolved",
    "jar_paths",
    "jars_root",
]
