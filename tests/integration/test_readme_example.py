"""The README's example connector and its test, run as written against the suite's broker and Spark."""

from __future__ import annotations

from tests.unit.test_readme import README, example_module, python_blocks


def test_the_readme_example_test_passes(bootstrap_servers, spark, tmp_path, monkeypatch):
    example_module(tmp_path, monkeypatch)  # my_sinks.lines importable, as the test's connector.class says
    [test] = [block for block in python_blocks(README.read_text()) if "def test_lines_sink(" in block]
    namespace: dict = {}
    exec(compile(test, "README.md:test_lines_sink", "exec"), namespace)
    work = tmp_path / "work"
    work.mkdir()
    namespace["test_lines_sink"](bootstrap_servers, spark, work)
