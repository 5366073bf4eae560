"""Every example in conf/ loads and validates, so the examples cannot rot."""

from pathlib import Path

from connect_spark.config.validation import validate_configs
from connect_spark.jvm.spark_versions import missing_support_reason

CONF = Path(__file__).resolve().parents[2] / "conf"


def test_example_worker_and_connectors_validate():
    connectors = sorted(p for p in CONF.glob("*.properties") if not p.name.startswith("worker"))
    assert connectors, "conf/ has no connector example"
    expected = {"recording-sink", "json-filter-dlq-sink", "delta-sink", "local-file-sink", "files-sink",
                "avro-delta-sink", "jdbc-sink", "iceberg-sink", "s3-sink", "s3-json-hourly-sink",
                "elasticsearch-sink", "cdc-delta-sink", "cdc-changelog-delta-sink", "cdc-jdbc-sink",
                "cdc-iceberg-sink"}
    if missing_support_reason(("iceberg",)):  # a Spark Iceberg has no runtime for: refused (test_spark_versions)
        connectors = [p for p in connectors if p.name not in ("iceberg-sink.properties", "cdc-iceberg-sink.properties")]
        expected -= {"iceberg-sink", "cdc-iceberg-sink"}
    worker, parsed = validate_configs(CONF / "worker.properties", connectors)
    assert worker.bootstrap_servers == "localhost:9092"
    assert {c.name for c in parsed} == expected


def test_example_tls_worker_validates(tmp_path):
    # The ${file:...} references resolve against a secrets file the example points at; stand one in.
    text = (CONF / "worker-tls.properties").read_text().replace(
        "/etc/kafka/secrets/connect-secrets.properties", str(tmp_path / "secrets.properties"))
    (tmp_path / "secrets.properties").write_text("truststore.password=t-pw\nkeystore.password=k-pw\n")
    (tmp_path / "worker.properties").write_text(text)
    worker, _ = validate_configs(tmp_path / "worker.properties", [CONF / "files-sink.properties"])
    client = worker.kafka_client_config()
    assert client["security.protocol"] == "SSL" and client["ssl.keystore.type"] == "PKCS12"
    assert "t-pw" not in repr(worker)
