"""Every example in conf/ loads and validates, so the examples cannot rot."""

from pathlib import Path

from connect_spark.config.validation import validate_configs

CONF = Path(__file__).resolve().parents[2] / "conf"


def test_example_worker_and_connectors_validate():
    connectors = sorted(p for p in CONF.glob("*.properties") if p.name != "worker.properties")
    assert connectors, "conf/ has no connector example"
    worker, parsed = validate_configs(CONF / "worker.properties", connectors)
    assert worker.bootstrap_servers == "localhost:9092"
    assert {c.name for c in parsed} == {"recording-sink", "json-filter-dlq-sink", "delta-sink", "local-file-sink",
                                       "files-sink", "avro-delta-sink", "jdbc-sink", "iceberg-sink",
                                       "elasticsearch-sink"}
