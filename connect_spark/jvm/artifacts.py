"""The JVM pieces connect_spark needs, and where their jars live once resolved.

Each set is resolved by Maven into its own folder, never sharing a classpath. Three follow the Spark that
is running (:mod:`connect_spark.jvm.spark_versions` names their versions) and live under
``spark-<pyspark version>/``, so several pyspark versions can share one jars folder:

* :func:`spark_kafka_set`: Spark's Kafka source (``spark-sql-kafka-0-10``) and Avro functions
  (``spark-avro``) at exactly pyspark's version, with their runtime dependencies, minus every jar pyspark
  already ships;
* :func:`delta_set`: the Delta Lake jars of the installed delta-spark (or the default Delta release of the
  running Spark, when none is installed), built for the running Spark minor;
* :func:`iceberg_set`: Apache Iceberg's Spark runtime for the running Spark minor, an *optional* set: a
  session gets it only when a connector whose ``required_spark_support()`` names it runs (the Iceberg
  sink), see ``connect_spark.spark_session``; None on a Spark minor Iceberg has not been built for.

The others do not depend on Spark:

* ``kafka-broker``: Apache Kafka itself, to run the single-node KRaft broker of tests and the demo;
* ``kafka-connect``: Apache Kafka Connect's standalone worker with the file connectors and the JSON
  converter, the reference arm of the benchmarks (``jobs/bench``);
* ``debezium/postgres``: Debezium's PostgreSQL connector with its transforms, a Kafka Connect plugin folder
  (``plugin.path`` = the ``debezium`` folder): the change data capture tests' source and the oracle of the
  Debezium transforms;
* ``schema-registry``: Apicurio Registry, a schema registry serving Confluent's REST API under
  ``/apis/ccompat/v7``, unpacked from its distribution archive (tests and ``connect-spark dev-registry``);
* ``opensearch``: OpenSearch's integration-test distribution, unpacked (the search sink's tests and
  ``connect-spark dev-opensearch``).

The folder is ``$CONNECT_SPARK_JARS`` when set; in a source checkout ``<checkout>/.jars``; otherwise
``~/.cache/connect-spark/jars``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from connect_spark.jvm.spark_versions import (
    SCALA_BINARY,
    RunningVersions,
    delta_artifact,
    iceberg_runtime,
    running_versions,
)

__all__ = [
    "KAFKA_VERSION",
    "ArtifactSet",
    "KAFKA_BROKER",
    "KAFKA_CONNECT",
    "DEBEZIUM_POSTGRES",
    "DEBEZIUM_VERSION",
    "SCHEMA_REGISTRY",
    "APICURIO_VERSION",
    "artifact_sets",
    "delta_set",
    "iceberg_set",
    "OPENSEARCH",
    "OPENSEARCH_VERSION",
    "jars_root",
    "optional_artifact_sets",
    "spark_kafka_set",
]

#: Apache Kafka used for the test and demo broker (KRaft).
KAFKA_VERSION = "4.1.1"
#: Debezium's release for the change data capture tests (its PostgreSQL connector and transforms).
DEBEZIUM_VERSION = "3.6.1.Final"
#: Apicurio Registry for the schema registry of tests and ``dev-registry``. The 2.6 line runs on Java 17
#: (3.x needs Java 21+) and serves Confluent's API under ``/apis/ccompat/v7``.
APICURIO_VERSION = "2.6.13.Final"
#: OpenSearch's integration-test distribution (core and the HTTP transport only) for the search sink's tests
#: and ``dev-opensearch``: the 2.19 line is the newest that runs on Java 17 (3.x needs Java 21).
OPENSEARCH_VERSION = "2.19.4"


@dataclasses.dataclass(frozen=True)
class ArtifactSet:
    """A named list of Maven coordinates resolved together into one folder.

    Attributes:
        name: the folder name under the jars root.
        coordinates: ``group:artifact:version`` strings; their runtime dependencies come along.
        exclude_pyspark_jars: drop jars whose artifact pyspark already ships (any version), so the
            set adds classes to Spark's classpath without shadowing Spark's own.
        purpose: one line shown by ``connect-spark jars``.
        spark_extensions: ``spark.sql.extensions`` classes a session needs when it carries the set.
        unpack: the coordinates name distribution archives (``group:artifact:version:tar.gz:classifier``)
            fetched without their dependencies and unpacked into the folder, instead of jars with
            their runtime dependencies.
        spark_version: the pyspark version the set was chosen for; its folder is then
            ``spark-<version>/<name>``.
        fallbacks: other coordinate lists standing in for ``coordinates``, tried in order when Maven
            Central does not serve them (yet): Delta publishes a patch release's jars after its Python package.
    """

    name: str
    coordinates: tuple[str, ...]
    exclude_pyspark_jars: bool
    purpose: str
    spark_extensions: tuple[str, ...] = ()
    unpack: bool = False
    spark_version: str | None = None
    fallbacks: tuple[tuple[str, ...], ...] = ()

    def folder(self, root: Path | None = None) -> Path:
        base = root or jars_root()
        return base / f"spark-{self.spark_version}" / self.name if self.spark_version else base / self.name

    @property
    def label(self) -> str:
        """The set's name as ``connect-spark jars`` lists it (``spark-4.1.1/delta``)."""
        return f"spark-{self.spark_version}/{self.name}" if self.spark_version else self.name


def spark_kafka_set(versions: RunningVersions | None = None) -> ArtifactSet:
    """Spark's Kafka source and Avro functions at exactly the running pyspark's version."""
    versions = versions or running_versions()
    return ArtifactSet(
        name="spark-kafka",
        coordinates=(
            f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{versions.spark}",
            # from_avro/to_avro: the vectorized AvroConverter step (connect_spark/columnar/avro.py)
            f"org.apache.spark:spark-avro_{SCALA_BINARY}:{versions.spark}",
        ),
        exclude_pyspark_jars=True,
        purpose="Spark's Kafka source and Avro functions",
        spark_version=versions.spark,
    )


def delta_set(versions: RunningVersions | None = None) -> ArtifactSet:
    """Delta Lake's jars for the installed delta-spark (else the default Delta), built for the running Spark minor.

    Raises:
        connect_spark.jvm.spark_versions.UnsupportedSparkVersion: no Delta build fits (see ``RunningVersions.check``).
    """
    versions = versions or running_versions()
    versions.check()
    delta = versions.delta_jars

    def coordinates(release: str) -> tuple[str, ...]:
        return (f"io.delta:{delta_artifact(release, versions.spark_minor)}:{release}",
                f"io.delta:delta-storage:{release}")

    major, minor, *rest = delta.split(".")
    patch = int(rest[0]) if rest and rest[0].isdigit() else 0
    earlier_patches = tuple(coordinates(f"{major}.{minor}.{p}") for p in range(patch - 1, -1, -1))
    return ArtifactSet(
        name="delta",
        coordinates=coordinates(delta),
        exclude_pyspark_jars=True,
        purpose="Delta Lake for Spark",
        spark_version=versions.spark,
        fallbacks=earlier_patches,
    )


KAFKA_BROKER = ArtifactSet(
    name="kafka-broker",
    coordinates=(
        f"org.apache.kafka:kafka_{SCALA_BINARY}:{KAFKA_VERSION}",
        # Kafka's distribution ships this slf4j binding; without it the broker's own log is silent.
        "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
    ),
    exclude_pyspark_jars=False,
    purpose="Apache Kafka broker (KRaft) for tests and the demo",
)

KAFKA_CONNECT = ArtifactSet(
    name="kafka-connect",
    coordinates=(
        f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-file:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-json:{KAFKA_VERSION}",
        # The binding Kafka's distribution ships; without it the worker logs nothing.
        "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
    ),
    exclude_pyspark_jars=False,
    purpose="Apache Kafka Connect standalone worker (benchmark reference)",
)

DEBEZIUM_POSTGRES = ArtifactSet(
    name="debezium/postgres",
    coordinates=(f"io.debezium:debezium-connector-postgres:{DEBEZIUM_VERSION}",),
    exclude_pyspark_jars=False,
    purpose="Debezium's PostgreSQL connector and transforms, a Kafka Connect plugin (change data capture tests)",
)


def iceberg_set(versions: RunningVersions | None = None) -> ArtifactSet | None:
    """Apache Iceberg's Spark runtime for the running Spark minor; None where Iceberg has none."""
    versions = versions or running_versions()
    coordinate = iceberg_runtime(versions.spark_minor)
    if coordinate is None:
        return None
    return ArtifactSet(
        name="iceberg",
        coordinates=(coordinate,),
        exclude_pyspark_jars=True,
        purpose="Apache Iceberg for Spark (optional: sessions running an Iceberg connector)",
        # MERGE INTO / DELETE on Iceberg tables, and Iceberg's procedures.
        spark_extensions=("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",),
        spark_version=versions.spark,
    )


SCHEMA_REGISTRY = ArtifactSet(
    name="schema-registry",
    coordinates=(f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all",),
    exclude_pyspark_jars=False,
    purpose="Apicurio Registry, Confluent's schema registry API (tests, dev-registry)",
    unpack=True,
)

OPENSEARCH = ArtifactSet(
    name="opensearch",
    coordinates=(f"org.opensearch.distribution.integ-test-zip:opensearch:{OPENSEARCH_VERSION}:zip",),
    exclude_pyspark_jars=False,
    purpose="OpenSearch's integration-test server (search sink tests, dev-opensearch)",
    unpack=True,
)


def artifact_sets(versions: RunningVersions | None = None) -> tuple[ArtifactSet, ...]:
    """Every set ``connect-spark jars`` resolves: the running Spark's, then the ones Spark does not change."""
    versions = versions or running_versions()
    return (spark_kafka_set(versions), delta_set(versions), KAFKA_BROKER, KAFKA_CONNECT, DEBEZIUM_POSTGRES,
            SCHEMA_REGISTRY,
            OPENSEARCH, *optional_artifact_sets(versions).values())


def optional_artifact_sets(versions: RunningVersions | None = None) -> dict[str, ArtifactSet]:
    """Sets a session gets only when a running connector asks for them, by name; those the running Spark has."""
    iceberg = iceberg_set(versions)
    return {iceberg.name: iceberg} if iceberg else {}


def jars_root() -> Path:
    """The folder holding one sub-folder per artifact set."""
    configured = os.environ.get("CONNECT_SPARK_JARS")
    if configured:
        return Path(configured).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "setup.cfg").is_file() and (checkout / "connect_spark").is_dir():
        return checkout / ".jars"
    return Path.home() / ".cache" / "connect-spark" / "jars"
