"""The demo's configurations are the same with and without the repository's conf/ folder (a pip install)."""

from __future__ import annotations

from connect_spark import demo
from connect_spark.config.validation import validate_configs


def test_an_installed_demo_without_conf_uses_what_conf_holds(tmp_path, monkeypatch):
    from_checkout = demo.demo_configs(tmp_path / "data", "127.0.0.1:9")
    monkeypatch.setattr(demo, "CONF", tmp_path / "no-conf-here")
    installed = demo.demo_configs(tmp_path / "data", "127.0.0.1:9")
    checkout_worker = {k: v for k, v in from_checkout[0].items() if k != "offset.storage.replication.factor"}
    installed_worker = {k: v for k, v in installed[0].items() if k != "offset.storage.replication.factor"}
    assert installed_worker == checkout_worker
    assert installed[1] == from_checkout[1]
    validate_configs(installed[0], [installed[1]])
