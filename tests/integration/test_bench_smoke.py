"""The benchmark harness on a tiny input, through the same code as the real run, so it cannot rot.

One arm of each kind runs once (no warm-up) on 2,000 records (b2, the Delta sink, on a topic where every 100th
record needs the per-record path and half of those go to the dead letter queue); the others differ from one of
these only in settings (b, b1, b0 from b2; a0 from a; d2 from c). An arm whose connector does not exist yet must be
reported ``unavailable: ...`` rather than fail. Figures are not asserted (the machine is shared);
output health is: every available arm wrote each record exactly once.
"""

from __future__ import annotations

import json

from jobs.bench.arms import ODD_EVERY, BenchSettings, default_arms
from jobs.bench.records import dead_letter_ids
from jobs.bench.report import write_results
from jobs.bench.runner import BenchPlan, run_benchmark

RECORDS = 2_000
#: One arm of each kind (r, rj: Spark 4.2 or newer).
SMOKE_ARMS = {"s", "a", "c", "d1", "r", "rj", "b2"}


def test_one_arm_of_each_kind_runs_or_says_why_not(bootstrap_servers, work_dir):
    settings = BenchSettings(bootstrap_servers, partitions=2, max_offsets_per_trigger=500)
    plan = BenchPlan(records=RECORDS, warmup=0, repetitions=1, latency_rates=())

    every = default_arms()
    assert {arm.key for arm in every} == {"s", "a", "b", "b1", "c", "d1", "d2", "r", "rj", "a0", "b0", "b2"}
    chosen = [arm for arm in every if arm.key in SMOKE_ARMS]
    results = run_benchmark(chosen, settings, plan, work_dir / "runs", echo=lambda line: None)
    paths = write_results(results, settings.as_dict(), plan.as_dict(), work_dir / "results")

    arms = results["arms"]
    assert set(arms) == SMOKE_ARMS
    ran = []
    for key, arm in arms.items():
        if arm["status"].startswith("unavailable: "):
            assert arm["runs"] == []
            continue
        assert arm["status"] == "ok", (key, arm["status"], arm["runs"])
        (run,) = arm["runs"]
        assert run["drained"], (key, run)
        expected = RECORDS - (len(dead_letter_ids(range(RECORDS), ODD_EVERY)) if key == "b2" else 0)
        assert run["health"]["expected"] == expected, (key, run["health"])
        assert run["health"]["rows"] == expected and run["health"]["duplicates"] == 0, (key, run["health"])
        assert run["wall_records_per_s"] > 0 and run["cpu_s_per_million"] > 0 and run["driver_peak_rss_mb"] > 0
        if key == "b2":  # every other odd record in its dead letter queue, once
            letters = len(dead_letter_ids(range(RECORDS), ODD_EVERY))
            assert run["health"]["missing"] == 0 and f"dead letters {letters} of {letters}" in run["health"]["notes"]
        ran.append(key)
    # The arms that need nothing still under construction always run.
    assert {"s", "a", "c", "d1"} <= set(ran)

    doc = json.loads(paths["json"].read_text())
    import pyspark

    assert doc["environment"]["versions"]["pyspark"] == pyspark.__version__
    assert {t["target"] for t in doc["targets"]} >= {"b ÷ a records/s ≥ 1.2", "d2 ÷ d1 records/s ≥ 0.6"}
    markdown = paths["md"].read_text()
    for key, arm in arms.items():
        assert f"| {key} | {arm['label']} | {arm['status']} |" in markdown
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_the_realtime_jdbc_arm_writes_every_record_once_into_its_table_or_says_why_not(bootstrap_servers, work_dir):
    """Arm rj alone, a drain and a short fixed-rate run: its PostgreSQL table holds every id once (Spark 4.2 or
    newer; below that the arm must say so). The full smoke test above reaches it only on Spark 4.2."""
    import pyspark

    from jobs.bench.arms import RealtimeJdbcArm

    settings = BenchSettings(bootstrap_servers, partitions=2)
    plan = BenchPlan(records=RECORDS, warmup=0, repetitions=1, latency_rates=(500,), latency_seconds=2,
                     latency_arms=("rj",), arms=("rj",))
    arm = RealtimeJdbcArm()

    results = run_benchmark([arm], settings, plan, work_dir / "runs", echo=lambda line: None)

    entry = results["arms"]["rj"]
    if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2):
        assert entry["status"] == f"unavailable: real-time mode needs Spark 4.2 or newer (pyspark {pyspark.__version__})"
        return
    assert entry["status"] == "ok", entry["runs"]
    (run,) = entry["runs"]
    assert run["health"]["files"] == 1 and run["health"]["rows"] == RECORDS and run["health"]["duplicates"] == 0
    latency = results["latency"]["rj"]["500"]
    assert "error" not in latency, latency
    assert latency["health"]["ok"] and latency["committed"] == latency["records"] > 0, latency
    assert arm.server is None  # stopped by run_benchmark
