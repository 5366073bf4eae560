"""The Delta sink's declared keys and cross-key checks (no JVM)."""

import pytest

from connect_spark import plugins
from connect_spark.api.errors import ConnectException
from connect_spark.connectors.delta import DeltaSinkConnector, DeltaSinkTask
from connect_spark.connectors.delta.config import DeltaSinkConfig
from connect_spark.connectors.delta.ledger import StoredOffsets
from connect_spark.api.records import TopicPartition


def test_aliases_resolve():
    assert plugins.resolve("connector", "DeltaSink") is DeltaSinkConnector
    assert DeltaSinkConnector().task_class() is DeltaSinkTask


def test_connector_declares_its_keys_and_rejects_bad_combinations():
    connector = DeltaSinkConnector()
    issues = connector.config().validate({"insert.mode": "merge"})
    assert any("insert.mode" in i.message and "append, upsert" in i.message for i in issues)
    with pytest.raises(ConnectException) as e:
        connector.start({"delta.table.path": "/t", "delta.table.name": "t", "insert.mode": "upsert",
                         "delete.enabled": "true"})
    text = str(e.value)
    assert "Exactly one of delta.table.path and delta.table.name" in text
    assert "pk.mode" in text and "delete.enabled" in text
    connector.start({"delta.table.path": "/t", "name": "x"})
    assert connector.task_configs(4) == [{"delta.table.path": "/t", "name": "x"}]


def test_parsed_config_collects_coordinate_columns():
    config = DeltaSinkConfig.parse({"delta.table.name": "db.t", "delta.column.offset": "off", "name": "c"})
    assert config.coordinate_columns == {"offset": "off"} and config.connector_name == "c"
    with pytest.raises(ConnectException, match="distinct"):
        DeltaSinkConfig.parse({"delta.table.path": "/t", "delta.column.offset": "x", "delta.column.topic": "x"})


def test_stored_offsets_round_trip_through_commit_metadata():
    stored = StoredOffsets("c").advanced({TopicPartition("a", 0): 5}).advanced({TopicPartition("b", 1): 2})
    back = StoredOffsets.from_metadata(stored.to_metadata(), "c")
    assert back == stored and back.sequence == 2 and back.offsets[TopicPartition("a", 0)] == 5
    assert StoredOffsets.from_metadata(stored.to_metadata(), "other") is None
    assert StoredOffsets.from_metadata("free text", "c") is None
    assert stored.advanced({TopicPartition("a", 0): 3}).offsets[TopicPartition("a", 0)] == 5  # never backwards


def test_connector_pages_key_tables_match_the_declarations():
    from pathlib import Path

    from connect_spark.config.docs import render_config_def
    from connect_spark.connectors.delta.config import DELTA_SINK_CONFIG_DEF
    from connect_spark.connectors.file import CONFIG_DEF
    from connect_spark.connectors.files.config import FILES_SINK_CONFIG_DEF
    from connect_spark.connectors.iceberg.config import ICEBERG_SINK_CONFIG_DEF

    pages = Path(__file__).resolve().parents[2] / "docs" / "connectors"
    for page, config_def in (("delta.md", DELTA_SINK_CONFIG_DEF), ("file-stream.md", CONFIG_DEF),
                             ("files.md", FILES_SINK_CONFIG_DEF), ("iceberg.md", ICEBERG_SINK_CONFIG_DEF)):
        assert render_config_def(config_def, heading_level=2) in (pages / page).read_text(), page
