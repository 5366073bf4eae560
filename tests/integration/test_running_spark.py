"""The running Spark gets its own jars: what `connect-spark jars` resolves, what a built session carries,
and what validation refuses, for whichever supported pyspark runs the tests (each CI lane runs this file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import validate_configs
from connect_spark.jvm import ArtifactSet, ensure_resolved, is_resolved, jar_paths, running_versions, spark_kafka_set
from connect_spark.jvm.spark_versions import ICEBERG_FOR_SPARK

ROOT = Path(__file__).resolve().parents[2]


def test_the_session_runs_the_installed_pyspark_with_the_kafka_source_of_that_version(spark):
    import pyspark

    versions = running_versions()
    assert spark.version == pyspark.__version__ == versions.spark
    session_jars = spark.sparkContext.getConf().get("spark.jars").split(",")
    kafka_jars = [str(p) for p in jar_paths(spark_kafka_set())]
    assert set(kafka_jars) <= set(session_jars)
    assert all(f"/spark-{versions.spark}/spark-kafka/" in j for j in kafka_jars)
    assert any(Path(j).name == f"spark-sql-kafka-0-10_2.13-{versions.spark}.jar" for j in kafka_jars)
    rows = spark.range(3).selectExpr("to_avro(id) AS a").count()  # the Avro functions of this Spark load
    assert rows == 3


def test_an_iceberg_connector_is_accepted_exactly_where_iceberg_has_a_runtime():
    versions = running_versions()
    worker, connector = ROOT / "conf" / "worker.properties", ROOT / "conf" / "iceberg-sink.properties"
    if versions.spark_minor in ICEBERG_FOR_SPARK:
        validate_configs(worker, [connector])
        return
    with pytest.raises(ConfigValidationError) as refused:
        validate_configs(worker, [connector])
    assert f"does not exist for Spark {versions.spark_minor} (pyspark {versions.spark} is running)" in str(refused.value)


def test_coordinates_maven_central_does_not_serve_fall_back_to_an_earlier_patch(tmp_path):
    probe = ArtifactSet(name="delta-storage", coordinates=("io.delta:delta-storage:4.4.97",),
                        exclude_pyspark_jars=False, purpose="probe", spark_version="9.9.9",
                        fallbacks=(("io.delta:delta-storage:4.4.98",), ("io.delta:delta-storage:4.4.0",)))
    jars = ensure_resolved([probe], root=tmp_path)["delta-storage"]
    assert [p.name for p in jars if p.name.startswith("delta-storage")] == ["delta-storage-4.4.0.jar"]
    assert {p.parent for p in jars} == {tmp_path / "spark-9.9.9" / "delta-storage"}
    assert is_resolved(probe, tmp_path)  # found again as the set asked for, without Maven
