"""The Iceberg sink's configuration (Apache Iceberg's sink keys), offsets document and session needs; no JVM."""

from __future__ import annotations

import pytest

from connect_spark import plugins
from connect_spark.api.records import TopicPartition
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.secrets import masked
from connect_spark.config.validation import validate_configs
from connect_spark.connectors.iceberg import IcebergSinkConnector
from connect_spark.connectors.iceberg.catalog import catalog_settings
from connect_spark.connectors.iceberg.config import ICEBERG_SINK_CONFIG_DEF, IcebergSinkConfig, split_partition_by
from connect_spark.connectors.iceberg.ledger import StoredOffsets
from connect_spark.spark_session import artifact_sets_for, session_conf

@pytest.fixture
def spark_with_iceberg(monkeypatch):
    """These tests are about a Spark that has an Iceberg runtime (4.1); each CI lane runs them on its own pyspark."""
    from connect_spark.jvm import spark_versions

    monkeypatch.setenv(spark_versions.SPARK_VERSION_ENV, "4.1.1")
    spark_versions.running_versions.cache_clear()
    yield
    spark_versions.running_versions.cache_clear()


BASE = {"name": "ice", "iceberg.tables": "db.a", "iceberg.catalog.type": "hadoop",
        "iceberg.catalog.warehouse": "/tmp/wh"}


def test_both_class_names_resolve_and_ask_for_the_iceberg_jars(spark_with_iceberg):
    for name in ("org.apache.iceberg.connect.IcebergSinkConnector", "IcebergSink", "IcebergSinkConnector"):
        assert plugins.resolve("connector", name) is IcebergSinkConnector
    assert IcebergSinkConnector().required_spark_support() == ("iceberg",)
    assert artifact_sets_for(["IcebergSink", "DeltaSink"]) == ["iceberg"]
    assert artifact_sets_for(["DeltaSink"]) == []


def test_session_conf_adds_iceberg_jars_and_extension_only_when_asked(tmp_path, monkeypatch, spark_with_iceberg):
    monkeypatch.setenv("CONNECT_SPARK_JARS", str(tmp_path))  # nothing resolved there: jars mode none below
    plain = session_conf({"connect_spark.jars": "none"})
    assert "Iceberg" not in plain["spark.sql.extensions"]
    asked = session_conf({"connect_spark.jars": "none"}, optional_sets=["iceberg"])
    assert asked["spark.sql.extensions"] == ("io.delta.sql.DeltaSparkSessionExtension,"
                                             "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    by_key = session_conf({"connect_spark.jars": "none", "connect_spark.jars.optional": "iceberg"})
    assert by_key["spark.sql.extensions"] == asked["spark.sql.extensions"]
    with pytest.raises(Exception, match="connect_spark.jars.optional.*unknown optional artifact set"):
        session_conf({"connect_spark.jars": "none", "connect_spark.jars.optional": "hudi"})


def test_iceberg_keys_parse_with_per_table_settings_over_defaults():
    config = IcebergSinkConfig.parse({
        **BASE, "iceberg.tables": "db.a, db.b", "iceberg.tables.route-field": "kind",
        "iceberg.table.db.a.route-regex": "a|aa", "iceberg.table.db.a.id-columns": "id, region",
        "iceberg.table.db.b.partition-by": "bucket(8, id), days(ts)",
        "iceberg.tables.default-id-columns": "id", "iceberg.tables.default-partition-by": "region",
        "iceberg.hadoop.fs.defaultFS": "file:///", "iceberg.tables.auto-create-props.format-version": "2",
        "iceberg.control.commit.interval-ms": "2500"})
    a, b = config.table_settings("db.a"), config.table_settings("db.b")
    assert (a.route_regex.pattern, a.id_columns, a.partition_by) == ("a|aa", ("id", "region"), ("region",))
    assert (b.route_regex, b.id_columns, b.partition_by) == (None, ("id",), ("bucket(8, id)", "days(ts)"))
    assert config.commit_interval_ms == 2500
    assert config.auto_create_properties == {"format-version": "2"}
    assert catalog_settings(config) == {
        "spark.sql.catalog.iceberg": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.iceberg.cache-enabled": "false",
        "spark.sql.catalog.iceberg.type": "hadoop", "spark.sql.catalog.iceberg.warehouse": "/tmp/wh",
        "spark.sql.catalog.iceberg.hadoop.fs.defaultFS": "file:///"}
    assert split_partition_by("truncate(4, name),region , bucket(16,id)") == ("truncate(4, name)", "region",
                                                                             "bucket(16,id)")


def test_coordinator_keys_are_accepted_without_effect_and_unknown_iceberg_keys_are_refused():
    accepted = {**BASE, "iceberg.control.topic": "control", "iceberg.control.group-id-prefix": "cg-",
                "iceberg.control.commit.timeout-ms": "1000", "iceberg.control.commit.threads": "4",
                "iceberg.connect.group-id": "g", "iceberg.kafka.bootstrap.servers": "b:9092",
                "iceberg.tables.write-props.write.parquet.compression-codec": "zstd"}
    assert ICEBERG_SINK_CONFIG_DEF.validate(accepted) == []
    IcebergSinkConfig.parse(accepted)
    refused = {**BASE, "iceberg.tabels": "x", "iceberg.table.db.a.id-column": "id",
               "iceberg.tables.default-commit-branch": "dev"}
    issues = {i.key: i.message for i in ICEBERG_SINK_CONFIG_DEF.validate(refused)}
    assert set(issues) == set(refused) - set(BASE)
    assert "Unknown Iceberg sink key iceberg.tabels" in issues["iceberg.tabels"]
    assert "route-regex,id-columns,partition-by" in issues["iceberg.table.db.a.id-column"]
    assert "not supported" in issues["iceberg.tables.default-commit-branch"]
    with pytest.raises(ConfigValidationError, match="iceberg.tabels"):
        IcebergSinkConfig.parse(refused)


@pytest.mark.parametrize("props, key, words", [
    ({"iceberg.tables": ""}, "iceberg.tables", "Missing iceberg.tables"),
    ({"iceberg.tables": "", "iceberg.tables.dynamic-enabled": "true"}, "iceberg.tables.route-field", "route field"),
    ({"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "t"}, "iceberg.tables.dynamic-enabled",
     "not both"),
    ({"iceberg.catalog": "my-cat"}, "iceberg.catalog", "letters, digits and _"),
    ({"iceberg.table.db.a.route-regex": "(["}, "iceberg.table.db.a.route-regex", "not a regular expression"),
    ({"iceberg.control.commit.interval-ms": "-1"}, "iceberg.control.commit.interval-ms", "at least 0"),
])
def test_bad_combinations_name_the_key(props, key, words):
    with pytest.raises(ConfigValidationError) as raised:
        IcebergSinkConfig.parse({**BASE, **props})
    assert any(i.key == key and words in i.message for i in raised.value.issues), raised.value.issues


def test_catalog_secrets_are_masked():
    props = {**BASE, "iceberg.catalog.jdbc.password": "pw1", "iceberg.catalog.credential": "id:secret",
             "iceberg.catalog.token": "t0k", "iceberg.catalog.s3.secret-access-key": "sk",
             "iceberg.catalog.uri": "jdbc:sqlite:/tmp/c.db"}
    shown = masked(props, ICEBERG_SINK_CONFIG_DEF)
    assert {k for k, v in shown.items() if v == "[hidden]"} == {
        "iceberg.catalog.jdbc.password", "iceberg.catalog.credential", "iceberg.catalog.token",
        "iceberg.catalog.s3.secret-access-key"}


def test_offsets_document_round_trips_and_accumulates():
    before = StoredOffsets("c", {TopicPartition("t", 0): 5, TopicPartition("t", 1): 9}, 3)
    after = before.advanced({TopicPartition("t", 0): 7, TopicPartition("u", 0): 1})
    assert after.sequence == 4
    assert after.property_key == "connect-spark.offsets.c"
    text = after.to_property()
    assert StoredOffsets.from_property(text, "c") == after
    assert StoredOffsets.from_property("not json", "c") is None
    assert after.offsets == {TopicPartition("t", 0): 7, TopicPartition("t", 1): 9, TopicPartition("u", 0): 1}


def test_validation_before_spark_refuses_unknown_keys_in_a_connector_file(tmp_path):
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=localhost:9092\noffset.storage.file.filename=/tmp/o\n"
                      "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      "value.converter=org.apache.kafka.connect.storage.StringConverter\n")
    connector = tmp_path / "ice.properties"
    connector.write_text("name=ice\nconnector.class=org.apache.iceberg.connect.IcebergSinkConnector\ntopics=t\n"
                         "iceberg.tables=db.a\niceberg.catalog.type=hadoop\niceberg.catalog.warehouse=/tmp/w\n"
                         "iceberg.tables.evolve-schema=true\n")
    with pytest.raises(ConfigValidationError, match="iceberg.tables.evolve-schema"):
        validate_configs(worker, [connector])
