"""The version table: which jars each supported Spark gets, and what is refused where (no JVM)."""

from __future__ import annotations

import configparser
import re
from importlib import metadata
from pathlib import Path

import pytest

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import validate_configs
from connect_spark.jvm import artifacts, spark_versions
from connect_spark.jvm.spark_versions import RunningVersions, UnsupportedSparkVersion

ROOT = Path(__file__).resolve().parents[2]


def coordinates(artifact_set) -> list[str]:
    return list(artifact_set.coordinates)


def test_kafka_source_and_avro_follow_pyspark_exactly():
    kafka = artifacts.spark_kafka_set(RunningVersions("4.2.0", "4.4.0"))
    assert coordinates(kafka) == ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
                                  "org.apache.spark:spark-avro_2.13:4.2.0"]
    assert kafka.folder(Path("/j")) == Path("/j/spark-4.2.0/spark-kafka")
    assert kafka.label == "spark-4.2.0/spark-kafka"


@pytest.mark.parametrize("spark, delta, artifact", [
    ("4.0.0", "4.0.1", "io.delta:delta-spark_2.13:4.0.1"),
    ("4.0.1", "4.4.0", "io.delta:delta-spark_4.0_2.13:4.4.0"),
    ("4.1.1", "4.4.0", "io.delta:delta-spark_4.1_2.13:4.4.0"),
    ("4.1.1", "4.1.0", "io.delta:delta-spark_4.1_2.13:4.1.0"),
    ("4.2.0", "4.4.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
])
def test_delta_jar_is_the_installed_delta_built_for_the_running_spark_minor(spark, delta, artifact):
    delta_set = artifacts.delta_set(RunningVersions(spark, delta))
    assert coordinates(delta_set) == [artifact, f"io.delta:delta-storage:{delta}"]
    assert delta_set.folder(Path("/j")) == Path(f"/j/spark-{spark}/delta")


@pytest.mark.parametrize("spark, artifact", [
    ("4.0.0", "io.delta:delta-spark_2.13:4.0.1"),
    ("4.1.1", "io.delta:delta-spark_4.1_2.13:4.4.0"),
    ("4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
])
def test_without_delta_spark_installed_the_spark_minor_gets_its_default_delta(spark, artifact):
    assert coordinates(artifacts.delta_set(RunningVersions(spark, None)))[0] == artifact


def test_an_unpublished_delta_patch_falls_back_to_earlier_patches_of_its_line():
    delta_set = artifacts.delta_set(RunningVersions("4.1.1", "4.4.2"))
    assert [c[0] for c in delta_set.fallbacks] == ["io.delta:delta-spark_4.1_2.13:4.4.1",
                                                   "io.delta:delta-spark_4.1_2.13:4.4.0"]
    assert artifacts.delta_set(RunningVersions("4.1.1", "4.4.0")).fallbacks == ()


@pytest.mark.parametrize("spark, delta, expected", [
    ("4.2.0", "4.3.1", r"delta-spark 4\.3\.1 has no build for Spark 4\.2 .*delta-spark>=4\.4\.0"),
    ("4.1.1", "4.0.1", r"delta-spark 4\.0\.1 has no build for Spark 4\.1 .*delta-spark>=4\.1\.0"),
    ("3.5.3", "3.2.0", r"pyspark 3\.5\.3 is not supported .*Spark 4\.0, 4\.1, 4\.2 .*pyspark>=4\.0,<4\.3"),
    ("4.3.0", "4.4.0", r"pyspark 4\.3\.0 is not supported"),
])
def test_unsupported_pairs_are_refused_naming_what_would_work(spark, delta, expected):
    with pytest.raises(UnsupportedSparkVersion, match=expected):
        artifacts.delta_set(RunningVersions(spark, delta))


def test_iceberg_runtime_exists_per_spark_minor_and_is_none_where_iceberg_has_none():
    assert coordinates(artifacts.iceberg_set(RunningVersions("4.0.0", "4.0.1"))) == [
        "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0"]
    assert coordinates(artifacts.iceberg_set(RunningVersions("4.1.1", "4.4.0"))) == [
        "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"]
    on_42 = RunningVersions("4.2.0", "4.4.0")
    assert artifacts.iceberg_set(on_42) is None
    assert artifacts.optional_artifact_sets(on_42) == {}
    assert [s.name for s in artifacts.artifact_sets(on_42)] == [
        "spark-kafka", "delta", "kafka-broker", "kafka-connect", "debezium/postgres", "schema-registry", "opensearch"]


@pytest.fixture
def running_spark(monkeypatch):
    """Make the process believe another pyspark is installed (the override a cluster driver would use)."""
    def use(version: str) -> None:
        monkeypatch.setenv(spark_versions.SPARK_VERSION_ENV, version)
        spark_versions.running_versions.cache_clear()
    yield use
    spark_versions.running_versions.cache_clear()


ICEBERG_CONNECTOR = ROOT / "conf" / "iceberg-sink.properties"
WORKER = ROOT / "conf" / "worker.properties"


def test_an_iceberg_connector_is_refused_at_validation_on_a_spark_without_iceberg(running_spark):
    running_spark("4.2.0")
    with pytest.raises(ConfigValidationError) as refused:
        validate_configs(WORKER, [ICEBERG_CONNECTOR])
    assert [i.key for i in refused.value.issues] == ["connector.class"]
    message = str(refused.value)
    assert "does not exist for Spark 4.2 (pyspark 4.2.0 is running)" in message
    assert "Spark 4.0 (Iceberg 1.11.0), Spark 4.1 (Iceberg 1.12.0)" in message


def test_a_spark_without_iceberg_gives_a_session_no_iceberg_and_says_why_when_asked(running_spark):
    from connect_spark.spark_session import artifact_sets_for, session_conf

    running_spark("4.2.0")
    assert artifact_sets_for(["IcebergSink", "DeltaSink"]) == []
    with pytest.raises(Exception, match=r"connect_spark.jars.optional.*does not exist for Spark 4\.2"):
        session_conf({"connect_spark.jars": "none"}, optional_sets=["iceberg"])


def test_an_iceberg_connector_passes_validation_where_iceberg_exists(running_spark):
    running_spark("4.1.1")
    validate_configs(WORKER, [ICEBERG_CONNECTOR])


def test_tested_versions_match_the_ci_constraints_and_the_declared_ranges():
    for minor, version in spark_versions.TESTED_SPARK_VERSIONS.items():
        pinned = (ROOT / ".ci" / "constraints" / f"spark-{minor}.txt").read_text()
        assert re.search(rf"^pyspark=={re.escape(version)}$", pinned, re.M), (minor, version)
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    requires = setup["options"]["install_requires"]
    low, high = spark_versions.SUPPORTED_SPARK_MINORS[0], spark_versions.SUPPORTED_SPARK_MINORS[-1]
    assert f"pyspark>={low}.0,<{high[:2]}{int(high[2:]) + 1}" in requires


def test_every_extra_an_error_names_exists_and_brings_the_module():
    from connect_spark.plugins import OPTIONAL_DEPENDENCY_EXTRAS

    installed = metadata.metadata("connect-spark")
    extras = set(installed.get_all("Provides-Extra") or [])
    requirements = installed.get_all("Requires-Dist") or []
    providers = metadata.packages_distributions()
    for module, extra in OPTIONAL_DEPENDENCY_EXTRAS.items():
        assert extra in extras, f"{module} names the extra [{extra}], which setup.cfg does not define"
        brought = {re.split(r"[\s\[<>=!;~]", r, maxsplit=1)[0].lower().replace("_", "-")
                   for r in requirements if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", r)}
        top = module.split(".")[0]
        distributions = {d.lower().replace("_", "-") for d in providers.get(top, [])}
        assert distributions & brought or any(_requires(d, distributions) for d in brought), \
            f"[{extra}] brings {sorted(brought)}, none of which provides {module} ({sorted(distributions)})"


def _requires(distribution: str, wanted: set[str]) -> bool:
    """Whether ``distribution`` (installed) depends on one of ``wanted`` (confluent-kafka[avro] -> fastavro)."""
    try:
        needs = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return False
    return any(re.split(r"[\s\[<>=!;~]", r, maxsplit=1)[0].lower().replace("_", "-") in wanted for r in needs)
