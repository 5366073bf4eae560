"""Results files: ``results.json`` (everything), ``results.md`` (tables), ``results.png`` (plot).

Called by ``jobs/bench_all.py`` (and the smoke test) with the document :func:`jobs.bench.runner.run_benchmark`
returned; adds the machine, the versions and the targets with their ratios (met or not).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from connect_spark.jvm.spark_versions import running_versions

__all__ = ["environment", "targets", "ceiling_shares", "write_results", "markdown"]

#: The arms shown as a share of the ceiling (arm s): the Python record paths.
_CEILING_ARMS = ("c", "d2")

#: (name, how to compute it, threshold) — computed from the medians; None when an arm is missing.
_THROUGHPUT_TARGETS = (
    ("b ÷ a records/s", ("b", "a"), 1.2),
    ("b1 ÷ b records/s (1 % per record: at most 10 % slower)", ("b1", "b"), 0.9),
    ("d2 ÷ d1 records/s", ("d2", "d1"), 0.6),
)


def environment() -> dict[str, Any]:
    """Machine and versions, so figures are never read without their context."""
    import importlib.metadata as md

    from connect_spark.jvm.artifacts import KAFKA_VERSION

    def version(dist: str) -> str | None:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    cpu_model = ""
    try:
        cpu_model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                          if line.startswith("model name")), "")
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent)
    try:
        import psutil

        memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        memory_gb = None
    return {
        "machine": {
            "platform": platform.platform(), "cpu_model": cpu_model, "logical_cpus": os.cpu_count(),
            "memory_gb": memory_gb, "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": {
            "python": platform.python_version(), "pyspark": version("pyspark"),
            "delta (jars)": running_versions().delta_jars, "kafka-python": version("kafka-python"),
            "pyarrow": version("pyarrow"), "connect-spark": version("connect-spark"),
            "kafka (broker and Connect)": KAFKA_VERSION,
            "java": (java.stderr or java.stdout).splitlines()[0] if (java.stderr or java.stdout) else None,
            "git commit": commit.stdout.strip() or None,
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets with the measured value, the threshold and whether it is met."""
    arms = results.get("arms", {})

    def rate(key: str, figure: str = "records_per_s") -> float | None:
        return (arms.get(key, {}).get("summary") or {}).get(figure)

    found = []
    for name, (num, den), threshold in _THROUGHPUT_TARGETS:
        # The same figure on both sides: start-up excluded when both have it, else start-up included.
        figure = "records_per_s" if rate(num) and rate(den) else "wall_records_per_s"
        value = rate(num, figure) / rate(den, figure) if rate(num, figure) and rate(den, figure) else None
        found.append({"target": f"{name} ≥ {threshold}", "value": None if value is None else round(value, 3),
                      "figure": figure, "met": None if value is None else value >= threshold})
    c = rate("c")
    found.append({"target": "c ≥ 150000 records/s", "value": c, "met": None if c is None else c >= 150_000})

    def ratio(num: str, den: str, figure: str) -> float | None:
        n, d = rate(num, figure), rate(den, figure)
        return round(n / d, 3) if n and d else None

    for name, (num, den, figure), limit in (
        ("b1 ÷ b driver peak RSS (unchanged)", ("b1", "b", "driver_peak_rss_mb"), 1.1),
        ("d2 ÷ d1 CPU-s per million records", ("d2", "d1", "cpu_s_per_million"), 1.7),
        ("b0 ÷ a0 wall time, cold --available-now with defaults", ("b0", "a0", "wall_s"), 0.83),
        ("b2 ÷ b0 wall time, cold, 1 % odd records with a DLQ", ("b2", "b0", "wall_s"), 1.25),
    ):
        value = ratio(num, den, figure)
        found.append({"target": f"{name} ≤ {limit}", "value": value, "figure": figure,
                      "met": None if value is None else value <= limit})
    latency = results.get("latency", {})
    for rate_asked in sorted({r for by_rate in latency.values() for r in by_rate}, key=int):
        b, a = latency.get("b", {}).get(rate_asked, {}), latency.get("a", {}).get(rate_asked, {})
        for key in ("p50_ms", "p99_ms"):
            value, limit = b.get(key), a.get(key)
            found.append({"target": f"b {key[:3]} ≤ a's at {int(rate_asked):,} rec/s", "value": value,
                          "figure": f"a: {limit}", "met": None if value is None or limit is None else value <= limit})
        d2 = latency.get("d2", {}).get(rate_asked, {}).get("p99_ms")
        if d2 is not None:
            found.append({"target": f"d2 p99 ≤ 2000 ms at {int(rate_asked):,} rec/s", "value": d2, "met": d2 <= 2000})
        rj = latency.get("rj", {}).get(rate_asked, {}).get("p99_ms")
        if rj is not None:  # the JDBC sink in real-time mode against Kafka Connect's p99 (d1) of the same run
            d1 = latency.get("d1", {}).get(rate_asked, {}).get("p99_ms")
            found.append({"target": f"rj p99 ≤ d1's at {int(rate_asked):,} rec/s", "value": rj, "figure": f"d1: {d1}",
                          "met": None if d1 is None else rj <= d1})
            found.append({"target": f"rj p99 ≤ 1000 ms at {int(rate_asked):,} rec/s", "value": rj, "met": rj <= 1000})
    return found


def ceiling_shares(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Arms c and d2 against the ceiling (arm s): their records/s as a share of its, their CPU-s per
    million records as a multiple of its. Empty when s did not run."""
    arms = results.get("arms", {})
    ceiling = arms.get("s", {}).get("summary") or {}
    if not ceiling.get("wall_records_per_s"):
        return []
    figure = "records_per_s" if ceiling.get("records_per_s") else "wall_records_per_s"
    shares = []
    for key in _CEILING_ARMS:
        summary = arms.get(key, {}).get("summary") or {}
        rate, cpu = summary.get(figure), summary.get("cpu_s_per_million")
        shares.append({
            "arm": key, "figure": figure, "records_per_s": rate, "ceiling_records_per_s": ceiling.get(figure),
            "share": round(rate / ceiling[figure], 3) if rate and ceiling.get(figure) else None,
            "cpu_s_per_million": cpu, "ceiling_cpu_s_per_million": ceiling.get("cpu_s_per_million"),
            "cpu_multiple": round(cpu / ceiling["cpu_s_per_million"], 2)
            if cpu and ceiling.get("cpu_s_per_million") else None,
        })
    return shares


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(doc: dict[str, Any]) -> str:
    lines = ["# connect_spark benchmark", ""]
    env = doc["environment"]
    m = env["machine"]
    lines.append(f"Machine: {m['cpu_model']} ({m['logical_cpus']} logical CPUs), {m['memory_gb']} GB, "
                 f"{m['platform']}; load average at start {m['load_average_at_start']}.  ")
    lines.append("Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()) + ".  ")
    prefill = doc["results"].get("prefill", {})
    lines.append(f"Input: {_fmt(prefill.get('records'))} records of ~{prefill.get('avg_record_bytes')} bytes "
                 f"(key + value) on `{prefill.get('topic')}`, {doc['settings']['partitions']} partitions.  ")
    lines.append(f"Plan: {json.dumps(doc['plan'])}  ")
    lines.append(f"Settings: {json.dumps(doc['settings'])}")
    lines += ["", "## Throughput (median of measured runs; warm-up discarded)", "",
              "| arm | what | status | records/s | incl. start-up | MB/s | CPU-s / M records | driver peak RSS MB | tree peak RSS MB | output health |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for key, arm in doc["results"]["arms"].items():
        s = arm.get("summary") or {}
        runs = [r for r in arm["runs"] if not r.get("warmup")]
        if runs:
            last = runs[-1]["health"]
            health = (f"{'ok' if s.get('health_ok') else 'BAD'}: rows {_fmt(last['rows'])}/{_fmt(last['expected'])}, "
                      f"dup {last['duplicates']}, files {last['files']}, commits seen {runs[-1].get('commits_seen')}"
                      + (f", table commits {last['table_commits']}" if last.get("table_commits") is not None else ""))
        else:
            health = "–"
        lines.append(f"| {key} | {arm['label']} | {arm['status']} | {_fmt(s.get('records_per_s'))} | "
                     f"{_fmt(s.get('wall_records_per_s'))} | {_fmt(s.get('mb_per_s'))} | "
                     f"{_fmt(s.get('cpu_s_per_million'))} | {_fmt(s.get('driver_peak_rss_mb'))} | "
                     f"{_fmt(s.get('tree_peak_rss_mb'))} | {health} |")
    if doc["results"].get("latency"):
        lines += ["", "## End-to-end latency (produce timestamp → offset seen committed, 1 s trigger / flush)", "",
                  "| arm | rate asked | rate achieved | records | committed | p50 ms | p99 ms | max ms | health |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for key, by_rate in doc["results"]["latency"].items():
            for rate, run in by_rate.items():
                h = run.get("health") or {}
                lines.append(f"| {key} | {_fmt(int(rate))} | {_fmt(run.get('achieved_rate'))} | {_fmt(run.get('records'))} | "
                             f"{_fmt(run.get('committed'))} | {_fmt(run.get('p50_ms'))} | {_fmt(run.get('p99_ms'))} | "
                             f"{_fmt(run.get('max_ms'))} | {'ok' if h.get('ok') else 'BAD'}"
                             f"{' ERROR ' + run['error'][:120] if run.get('error') else ''} |")
    shares = doc.get("ceiling") or []
    if shares:
        lines += ["", "## Against the ceiling (arm s: Spark's Kafka source → mapInArrow, no-op)", "",
                  "| arm | records/s | ceiling records/s | share of ceiling | CPU-s / M | ceiling CPU-s / M | CPU multiple |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in shares:
            lines.append(f"| {row['arm']} | {_fmt(row['records_per_s'])} | {_fmt(row['ceiling_records_per_s'])} | "
                         f"{_fmt(row['share'])} | {_fmt(row['cpu_s_per_million'])} | "
                         f"{_fmt(row['ceiling_cpu_s_per_million'])} | {_fmt(row['cpu_multiple'])} |")
    lines += ["", "## Targets", "", "| target | measured | from | met |", "| --- | ---: | --- | --- |"]
    for t in doc["targets"]:
        lines.append(f"| {t['target']} | {_fmt(t['value'])} | {t.get('figure', '')} | "
                     f"{'n/a' if t['met'] is None else 'yes' if t['met'] else 'NO'} |")
    lines += ["", "Runs (every run, warm-up included) are in `results.json`."]
    return "\n".join(lines) + "\n"


def plot(doc: dict[str, Any], path: Path) -> None:
    """Throughput per arm (median, min–max) and latency p50/p99 per arm and rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = doc["results"]["arms"]
    keys = list(arms)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    medians, lows, highs = [], [], []
    for key in keys:
        s = arms[key].get("summary") or {}
        value = s.get("records_per_s") or 0  # 0 (n/a) when there is no start-up-free figure
        medians.append(value)
        lows.append(value - s.get("records_per_s_min", value))
        highs.append(s.get("records_per_s_max", value) - value)
    left.bar(keys, medians, yerr=[lows, highs], capsize=4, color="#4878a8")
    for i, key in enumerate(keys):
        if not medians[i]:
            left.text(i, 0, "n/a", ha="center", va="bottom")
    left.set_title("Throughput (records/s after the first commit, median, min–max)")
    left.set_ylabel("records/s")
    latency = doc["results"].get("latency", {})
    labels, p50, p99 = [], [], []
    for key, by_rate in latency.items():
        for rate, run in by_rate.items():
            labels.append(f"{key}@{int(rate) // 1000}k")
            p50.append(run.get("p50_ms") or 0)
            p99.append(run.get("p99_ms") or 0)
    if labels:
        x = range(len(labels))
        right.bar([i - 0.2 for i in x], p50, width=0.4, label="p50")
        right.bar([i + 0.2 for i in x], p99, width=0.4, label="p99")
        right.set_xticks(list(x), labels)
        right.legend()
    else:
        right.text(0.5, 0.5, "no latency runs", ha="center", transform=right.transAxes)
    right.set_title("End-to-end latency (ms)")
    right.set_ylabel("ms")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(results: dict[str, Any], settings: dict[str, Any], plan: dict[str, Any],
                  out_dir: Path, environment_info: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write the three files into ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"environment": environment_info or environment(), "settings": settings, "plan": plan,
           "results": results}
    doc["targets"] = targets(results)
    doc["ceiling"] = ceiling_shares(results)
    paths = {"json": out_dir / "results.json", "md": out_dir / "results.md", "png": out_dir / "results.png"}
    paths["json"].write_text(json.dumps(doc, indent=2, default=str) + "\n")
    paths["md"].write_text(markdown(doc))
    plot(doc, paths["png"])
    return paths
