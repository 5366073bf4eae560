"""The runtime, the streaming layer and the Kafka client layer stay in small modules (at most 400 lines each).

A module past the limit is doing more than one job: split it by what each part holds, as the package's
other modules are split, rather than squeezing lines.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "connect_spark"
LIMITED = ("runtime", "streaming", "kafka")
MAX_LINES = 400


def test_no_module_of_the_runtime_streaming_or_kafka_packages_is_over_the_limit():
    over = {}
    for package in LIMITED:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                over[str(path.relative_to(PACKAGE))] = lines
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"
