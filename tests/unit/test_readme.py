"""The README and docs/: short, linked, free of work history, and the README's example connector works."""

from __future__ import annotations

import importlib
import re
import sys
import types
from pathlib import Path

from connect_spark.api import SinkRecord, TopicPartition

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HISTORY = re.compile(r"`[0-9a-f]{7}`|\bsession \d+\b(?!\.\d)|\bissue \d+\b|\bevening\b")


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a Markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, re.S)


def example_module(folder: Path, monkeypatch) -> types.ModuleType:
    """The README's ``my_sinks/lines.py``, written under ``folder`` and imported as ``my_sinks.lines``."""
    [code] = [block for block in python_blocks(README.read_text()) if block.startswith("# my_sinks/lines.py")]
    (folder / "my_sinks").mkdir()
    (folder / "my_sinks" / "__init__.py").write_text("")
    (folder / "my_sinks" / "lines.py").write_text(code)
    monkeypatch.syspath_prepend(str(folder))
    for name in ("my_sinks", "my_sinks.lines"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module("my_sinks.lines")


def test_readme_is_under_350_lines():
    assert len(README.read_text().splitlines()) < 350


def test_every_relative_link_resolves():
    for page in [README, *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"


def test_no_work_history_in_user_facing_text():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        found = HISTORY.findall(page.read_text())
        assert not found, f"{page.relative_to(ROOT)}: {found}"


def test_every_built_in_connector_has_a_page_linked_from_the_readme():
    text = README.read_text()
    for name in ("delta", "iceberg", "jdbc", "files", "file-stream"):
        assert (ROOT / "docs" / "connectors" / f"{name}.md").exists(), name
        assert f"(docs/connectors/{name}.md)" in text, name


def test_the_readme_example_task_writes_lines_and_commits_what_it_flushed(tmp_path, monkeypatch):
    lines = example_module(tmp_path, monkeypatch)
    connector = lines.LinesSinkConnector()
    out = tmp_path / "lines.txt"
    connector.start({"name": "lines", "topics": "greetings", "lines.file": str(out)})
    assert connector.task_class() is lines.LinesSinkTask
    [config] = connector.task_configs(4)
    task = lines.LinesSinkTask()
    task.start(config)
    tp = TopicPartition("greetings", 0)
    task.open([tp])
    task.put([SinkRecord("greetings", 0, None, None, None, "hello", 0),
              SinkRecord("greetings", 0, None, None, None, "world", 1)])
    assert task.pre_commit({tp: 2}) == {tp: 2}
    assert out.read_text().splitlines() == ["greetings[0]@0 hello", "greetings[0]@1 world"]
    task.close([tp])
    task.stop()
    assert task.out.closed


def test_the_readme_example_resolves_by_its_python_path(tmp_path, monkeypatch):
    from connect_spark import plugins

    lines = example_module(tmp_path, monkeypatch)
    for name in ("my_sinks.lines:LinesSinkConnector", "my_sinks.lines.LinesSinkConnector"):
        assert plugins.resolve("connector", name, key="connector.class") is lines.LinesSinkConnector
