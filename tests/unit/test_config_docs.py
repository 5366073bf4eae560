"""The generated configuration reference: complete, and committed up to date."""

from __future__ import annotations

from pathlib import Path

from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
from connect_spark.config.docs import REGENERATE_COMMAND, render
from connect_spark.config.worker import WORKER_CONFIG_DEF

REFERENCE = Path(__file__).resolve().parents[2] / "conf" / "config-reference.md"


def test_committed_reference_is_up_to_date():
    assert REFERENCE.exists(), f"{REFERENCE} is missing; generate it with: {REGENERATE_COMMAND}"
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == render(), (
        f"{REFERENCE.name} is stale: the config declarations changed. Regenerate it with: {REGENERATE_COMMAND}"
    )


def test_every_declared_key_is_documented():
    text = render()
    for name in WORKER_CONFIG_DEF.names() + CONNECTOR_CONFIG_DEF.names():
        assert f"| `{name}` |" in text, name
    for key in list(WORKER_CONFIG_DEF.keys.values()) + list(CONNECTOR_CONFIG_DEF.keys.values()):
        assert key.doc, f"{key.name} has no doc"


def test_rendering_shows_defaults_and_validators():
    text = render()
    assert "| `key.converter` | class | *required* |" in text
    assert "| `tasks.max` | int | `1` | [1,...] |" in text
    assert "| `errors.tolerance` | string | `none` | [none, all] |" in text
    assert "`org.apache.kafka.connect.transforms.Cast$Value` | `connect_spark.transforms.cast:CastValue`" in text
