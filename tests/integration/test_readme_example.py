"""The README's example connector and its test, run as written against the suite's broker and Spark."""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_example_test_passes(bootstrap_servers, spark, tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [module] = [b for b in blocks if b.startswith("# my_sinks/lines.py")]
    [test] = [b for b in blocks if "def test_lines_sink(" in b]
    (tmp_path / "my_sinks").mkdir()
    (tmp_path / "my_sinks" / "__init__.py").write_text("")
    (tmp_path / "my_sinks" / "lines.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("my_sinks", "my_sinks.lines"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    namespace: dict = {}
    exec(compile(test, "README.md:test_lines_sink", "exec"), namespace)
    work = tmp_path / "work"
    work.mkdir()
    namespace["test_lines_sink"](bootstrap_servers, spark, work)
