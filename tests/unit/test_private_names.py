"""No module reaches into another module's private names.

A name starting with one underscore belongs to the module that defines it. Another module of the package,
a test or a job that needs it is asking for a public helper: this test reads every source file's syntax
tree and fails on ``from connect_spark.x import _name``, on a private module in an import path
(``connect_spark.x._y``), and on ``module._name`` where ``module`` was imported from connect_spark.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("connect_spark", "tests", "jobs")
PACKAGE = ROOT / "connect_spark"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def private_reaches(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each private name ``source`` takes from a connect_spark module."""
    found: list[tuple[int, str]] = []
    module_names: set[str] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("connect_spark"):
            if any(_private(part) for part in node.module.split(".")):
                found.append((node.lineno, f"module {node.module}"))
            for alias in node.names:
                if _private(alias.name):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
                elif _is_module(f"{node.module}.{alias.name}"):
                    module_names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("connect_spark"):
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append((node.lineno, f"module {alias.name}"))
                    if alias.asname:
                        module_names.add(alias.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in module_names):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_the_check_sees_each_kind_of_reach():
    source = ("from connect_spark.plugins import _TABLE\nfrom connect_spark.api.data._hidden import x\n"
              "from connect_spark import plugins\nimport connect_spark.plugins as p\nplugins._TABLE\np._TABLE\n"
              "from connect_spark.plugins import resolve\nresolve._cache\n")
    assert [what for _, what in private_reaches(source)] == [
        "connect_spark.plugins._TABLE", "module connect_spark.api.data._hidden", "plugins._TABLE", "p._TABLE"]


def test_no_module_imports_another_module_s_private_names():
    offences = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, what in private_reaches(path.read_text(encoding="utf-8")):
                offences.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert offences == [], "private names used across modules (make a public helper):\n" + "\n".join(offences)
