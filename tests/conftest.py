"""Shared fixtures: one real Kafka broker and one real SparkSession per test session.

Tests under ``tests/unit`` need no JVM; tests under ``tests/integration`` get the ``integration`` marker
and use the fixtures below. Nothing here is mocked: the broker is Apache Kafka in KRaft mode started
from the project's resolved jars, the session is a real local Spark with Delta, Iceberg and the Kafka source.
"""

from __future__ import annotations

import logging
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

logging.getLogger("kafka").setLevel(logging.WARNING)
logging.getLogger("py4j").setLevel(logging.WARNING)


def _pyspark_release() -> tuple[int, int]:
    from importlib import metadata

    try:
        major, minor = metadata.version("pyspark").split(".")[:2]
        return int(major), int(minor)
    except Exception:
        return (0, 0)


# Real-time mode needs Spark 4.2: its tests run on the 4.2 lane (marked `spark>=4.2` in .ci/lane-tests.txt);
# older Sparks run the refusal.
collect_ignore = (["integration/test_realtime_mode.py"] if _pyspark_release() < (4, 2)
                  else ["integration/test_realtime_refusal.py"])


#: Java options for every JVM a test starts: ``JDK_JAVA_OPTIONS`` reaches each ``java`` launch (CLI runs,
#: spark-submit, the standalone cluster's daemons and executors, Kafka Connect). Those JVMs live seconds to
#: minutes, so on 2 cores C2's compiling is mostly start-up CPU for code that never gets hot: the C1 compiler
#: alone takes ~40 % off a spark-submit test's time. The JVMs that serve the whole session (the shared
#: SparkSession, the broker) start without it (``session_long_jvm``): in-process tests ran slower under C1.
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
_JVM_OPTIONS_VARIABLE = "JDK_JAVA_OPTIONS"


def pytest_configure(config):
    """Called by pytest once, before collection: a ``JDK_JAVA_OPTIONS`` of the caller's own is left as it is."""
    os.environ.setdefault(_JVM_OPTIONS_VARIABLE, SHORT_LIVED_JVM_OPTIONS)


@contextmanager
def session_long_jvm():
    """Around the start of a JVM that serves the whole session: without the short-lived JVMs' options (unless
    they are the caller's own)."""
    ours = os.environ.get(_JVM_OPTIONS_VARIABLE) == SHORT_LIVED_JVM_OPTIONS
    if ours:
        del os.environ[_JVM_OPTIONS_VARIABLE]
    try:
        yield
    finally:
        if ours:
            os.environ[_JVM_OPTIONS_VARIABLE] = SHORT_LIVED_JVM_OPTIONS


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/integration" in str(item.fspath) or "tests" + os.sep + "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def jars():
    """The JVM artifact sets, resolved once (a no-op when already resolved)."""
    from connect_spark.jvm import ensure_resolved

    return ensure_resolved()


@pytest.fixture(scope="session")
def kafka_broker(jars, tmp_path_factory):
    """A real single-node Kafka broker on 127.0.0.1, started once and stopped at the end."""
    from connect_spark.localkafka import LocalKafkaBroker

    broker = LocalKafkaBroker(tmp_path_factory.mktemp("kafka"), heap="512m")
    with session_long_jvm():
        broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def bootstrap_servers(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="session")
def schema_registry(jars, tmp_path_factory):
    """A real schema registry (Apicurio, Confluent's API) on 127.0.0.1, started once and stopped at the end."""
    from connect_spark.localregistry import LocalSchemaRegistry

    registry = LocalSchemaRegistry(tmp_path_factory.mktemp("registry"))
    registry.start()
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def schema_registry_url(schema_registry) -> str:
    """``schema.registry.url`` of the session's registry (ends in /apis/ccompat/v7)."""
    return schema_registry.url


@pytest.fixture(scope="session")
def spark(jars, tmp_path_factory):
    """One local SparkSession (Kafka source and Delta on the classpath) for the whole test session.

    Its driver JVM takes no part in the class data sharing archive: it would claim the archive's writing for
    the whole run and write it only after pytest exits; the drivers of the CLI tests write and use it."""
    from connect_spark.jvm import optional_artifact_sets
    from connect_spark.spark_session import CLASS_ARCHIVE_KEY, get_or_create_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    with session_long_jvm():
        session = get_or_create_session(
            master="local[2]",
            app_name="connect-spark-tests",
            ui=False,
            optional_sets=tuple(optional_artifact_sets()),  # Iceberg where it exists: its sink's tests share it
            conf={
                "spark.sql.warehouse.dir": str(warehouse),
                "spark.sql.shuffle.partitions": "2",
                "spark.driver.memory": "2g",
                CLASS_ARCHIVE_KEY: "off",
            },
        )
    yield session
    session.stop()


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to the test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"{base}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def work_dir(tmp_path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A real Spark standalone master and two workers (2 cores, 3 GiB each) from the installed pyspark, shared
    by the cluster tests and stopped after the session. Drivers and executors they launch import
    connect_spark from this checkout and run this interpreter; the workers take SIGPWR as a decommission
    request (``spark.decommission.enabled``)."""
    import sys

    from connect_spark.testing.spark_cluster import StandaloneCluster

    repo = str(Path(__file__).resolve().parents[1])
    env = {"PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p),
           "PYSPARK_PYTHON": sys.executable, "SPARK_WORKER_OPTS": "-Dspark.decommission.enabled=true"}
    with StandaloneCluster(tmp_path_factory.mktemp("standalone-cluster"), cores=2, memory="3g", workers=2,
                           env=env) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server on 127.0.0.1 (Debian's binaries, run as the postgres user), for the session.

    ``wal_level=logical``, so the same server is the JDBC sink's target and Debezium's source (change data
    capture tests); each Debezium connector takes a replication slot and a WAL sender."""
    import tempfile

    from connect_spark.testing.postgres import LocalPostgres

    server = LocalPostgres(tempfile.mkdtemp(prefix="connect_spark_pg_"),
                           settings={"wal_level": "logical", "max_replication_slots": "10", "max_wal_senders": "10"})
    server.start()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def local_s3(tmp_path_factory):
    """moto's standalone S3 server on 127.0.0.1, for the session (the S3 sink's tests; a bucket per test)."""
    from connect_spark.testing.s3 import LocalS3

    with LocalS3(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="session")
def opensearch(jars):
    """A real single-node OpenSearch on 127.0.0.1 (run as the opensearch system user), for the session."""
    import shutil
    import tempfile

    from connect_spark.localsearch import LocalOpenSearch

    folder = tempfile.mkdtemp(prefix="connect_spark_opensearch_")  # pytest's own folders are root-only
    with LocalOpenSearch(folder) as server:
        yield server
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def debezium(jars, bootstrap_servers, tmp_path_factory):
    """Apache Kafka Connect running Debezium's PostgreSQL connector (connect_spark.testing.debezium), for one
    test module: the module adds its connectors through the worker's REST API and removes them; the worker
    is stopped after the module's last test."""
    from connect_spark.testing.debezium import DebeziumWorker

    with DebeziumWorker(tmp_path_factory.mktemp("debezium"), bootstrap_servers) as worker:
        yield worker
