"""The JVM pieces connect_spark needs, pinned, and where their jars live once resolved.

Three sets, each resolved by Maven into its own folder, never sharing a classpath:

* ``spark-kafka``: Spark's Kafka source (``spark-sql-kafka-0-10``) and Avro functions (``spark-avro``)
  with their runtime dependencies, minus every jar pyspark already ships;
* ``delta``: the Delta Lake jars matching the pinned delta-spark / pyspark pair;
* ``kafka-broker``: Apache Kafka itself, to run the single-node KRaft broker of tests and the demo;
* ``kafka-connect``: Apache Kafka Connect's standalone worker with the file connectors and the JSON
  converter, the reference arm of the benchmarks (``jobs/bench``);
* ``schema-registry``: Apicurio Registry, a schema registry serving Confluent's REST API under
  ``/apis/ccompat/v7``, unpacked from its distribution archive (tests and ``connect-spark dev-registry``);
* ``iceberg``: Apache Iceberg's Spark runtime, an *optional* set: a session gets it only when a
  connector whose ``required_spark_support()`` names it runs (the Iceberg sink), see
  ``connect_spark.spark_session``.

The folder is ``$CONNECT_SPARK_JARS`` when set; in a source checkout ``<checkout>/.jars``; otherwise
``~/.cache/connect-spark/jars``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

__all__ = [
    "SPARK_VERSION",
    "DELTA_VERSION",
    "KAFKA_VERSION",
    "ArtifactSet",
    "ARTIFACT_SETS",
    "SPARK_KAFKA",
    "DELTA",
    "KAFKA_BROKER",
    "KAFKA_CONNECT",
    "ICEBERG",
    "ICEBERG_VERSION",
    "OPTIONAL_ARTIFACT_SETS",
    "SCHEMA_REGISTRY",
    "APICURIO_VERSION",
    "OPENSEARCH",
    "OPENSEARCH_VERSION",
    "jars_root",
]

#: pyspark version pinned in setup.cfg; the Kafka source must match it exactly.
SPARK_VERSION = "4.0.0"
#: delta-spark version pinned in setup.cfg (its wheel declares pyspark>=4.0.0).
#:
#: Why Spark 4.0.0: the Maven Central reachable here has ``spark-token-provider-kafka-0-10_2.13`` (a
#: runtime dependency of Spark's Kafka source) only up to 4.0.0, so the Kafka source of Spark 4.0.1+
#: cannot be resolved; 4.0.0 is the newest Spark whose whole Kafka source resolves.
DELTA_VERSION = "4.0.0"
#: Apache Kafka used for the test and demo broker (KRaft).
KAFKA_VERSION = "4.1.1"
SCALA_BINARY = "2.13"
#: Apache Iceberg's Spark runtime for Spark 4.0 (``iceberg-spark-runtime-4.0_2.13``): the newest release on
#: Maven Central; built for Spark 4.0.x, it runs on the pinned 4.0.0 (tests/integration/test_iceberg_sink.py).
ICEBERG_VERSION = "1.11.0"
#: Apicurio Registry for the schema registry of tests and ``dev-registry``. The 2.6 line runs on Java 17
#: (3.x needs Java 21+) and serves Confluent's API under ``/apis/ccompat/v7``.
APICURIO_VERSION = "2.6.13.Final"
#: OpenSearch's integration-test distribution (core and the HTTP transport only) for the search sink's tests
#: and ``dev-opensearch``: the 2.19 line is the newest that runs on Java 17 (3.x needs Java 21).
OPENSEARCH_VERSION = "2.19.4"



def _delta_artifact() -> str:
    """Delta's Maven artifact: from Delta 4.1 on its name carries Spark's minor version."""
    major, minor = (int(x) for x in DELTA_VERSION.split(".")[:2])
    if (major, minor) >= (4, 1):
        spark_minor = ".".join(SPARK_VERSION.split(".")[:2])
        return f"delta-spark_{spark_minor}_{SCALA_BINARY}"
    return f"delta-spark_{SCALA_BINARY}"


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
    """

    name: str
    coordinates: tuple[str, ...]
    exclude_pyspark_jars: bool
    purpose: str
    spark_extensions: tuple[str, ...] = ()
    unpack: bool = False

    def folder(self, root: Path | None = None) -> Path:
        return (root or jars_root()) / self.name


SPARK_KAFKA = ArtifactSet(
    name="spark-kafka",
    coordinates=(
        f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}",
        # from_avro/to_avro: the vectorized AvroConverter step (connect_spark/columnar/avro.py)
        f"org.apache.spark:spark-avro_{SCALA_BINARY}:{SPARK_VERSION}",
    ),
    exclude_pyspark_jars=True,
    purpose="Spark's Kafka source and Avro functions",
)

DELTA = ArtifactSet(
    name="delta",
    coordinates=(
        f"io.delta:{_delta_artifact()}:{DELTA_VERSION}",
        f"io.delta:delta-storage:{DELTA_VERSION}",
    ),
    exclude_pyspark_jars=True,
    purpose="Delta Lake for Spark",
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

ICEBERG = ArtifactSet(
    name="iceberg",
    coordinates=(f"org.apache.iceberg:iceberg-spark-runtime-4.0_{SCALA_BINARY}:{ICEBERG_VERSION}",),
    exclude_pyspark_jars=True,
    purpose="Apache Iceberg for Spark (optional: sessions running an Iceberg connector)",
    # MERGE INTO / DELETE on Iceberg tables, and Iceberg's procedures.
    spark_extensions=("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",),
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

ARTIFACT_SETS: tuple[ArtifactSet, ...] = (SPARK_KAFKA, DELTA, KAFKA_BROKER, KAFKA_CONNECT, SCHEMA_REGISTRY,
                                      ICEBERG, OPENSEARCH)

#: Sets a session gets only when a running connector asks for them, by name.
OPTIONAL_ARTIFACT_SETS: dict[str, ArtifactSet] = {ICEBERG.name: ICEBERG}


def jars_root() -> Path:
    """The folder holding one sub-folder per artifact set."""
    configured = os.environ.get("CONNECT_SPARK_JARS")
    if configured:
        return Path(configured).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "setup.cfg").is_file() and (checkout / "connect_spark").is_dir():
        return checkout / ".jars"
    return Path.home() / ".cache" / "connect-spark" / "jars"
