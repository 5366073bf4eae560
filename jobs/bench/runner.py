"""The schedule: pre-fill once, then every arm in turn, warm-up first, measured repetitions interleaved.

:func:`run_benchmark` is what ``jobs/bench_all.py`` and the smoke test call. Arms never run at once:
each run launches one arm's process, waits until its committed offsets reach the topic's end, stops it,
and only then checks its output (rows = produced, no duplicates), so checking costs nothing measured.

Figures per run:

* ``wall_s``: from launching the process to the moment the last offset was seen committed (start-up
  included: a Spark session or a Connect worker);
* ``drain_s`` and ``records_per_s``: from the first commit seen to the last, over the records committed
  in between (start-up excluded; the headline figure), given only when at least half the records were
  committed after the first commit (use inputs of many batches); ``wall_records_per_s`` = records /
  ``wall_s``;
* ``mb_per_s``: key + value bytes per second, at the ``records_per_s`` rate;
* ``cpu_s_per_million``: CPU-seconds of the whole process tree until drained, per million records;
* ``driver_peak_rss_mb``: peak RSS of the root process and its JVMs; ``tree_peak_rss_mb``: the tree's.
"""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from jobs.bench.arms import Arm, BenchSettings, Launched, RunSpec
from jobs.bench.latency import summarize
from jobs.bench.process_metrics import ProcessTreeSampler
from jobs.bench.producing import prefill, produce_at_rate, read_timestamps

__all__ = ["BenchPlan", "run_benchmark", "measure_drain", "measure_latency", "summarize_runs"]

log = logging.getLogger(__name__)


@dataclass
class BenchPlan:
    """How much to run. ``latency_rates`` empty: no latency runs."""

    records: int = 2_000_000
    warmup: int = 1
    repetitions: int = 3
    latency_rates: tuple[int, ...] = (1_000, 10_000)
    latency_seconds: float = 30.0
    latency_arms: tuple[str, ...] = ("a", "b", "d1", "d2")
    drain_timeout_s: float = 1800.0
    topic: str = ""
    arms: tuple[str, ...] = ()  # empty: all

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _committed_total(offsets: dict[int, int]) -> int:
    return sum(offsets.values())


def measure_drain(arm: Arm, settings: BenchSettings, spec: RunSpec, end: dict[int, int], payload_bytes: int,
                  timeout: float) -> dict[str, Any]:
    """One throughput run: launch the arm on the pre-filled topic, wait until it committed ``end``."""
    records = _committed_total(end)
    (spec.work / "out").mkdir(parents=True, exist_ok=True)
    started = time.time()
    launched: Launched = arm.launch(settings, spec)
    sampler = ProcessTreeSampler(launched.process.pid).start()
    watcher = launched.watcher.start()
    result: dict[str, Any] = {"run_id": spec.run_id}
    try:
        drained = watcher.wait_for(end, timeout, alive=launched.alive)
        cpu_at_drain = sampler.snapshot_cpu()
        if spec.available_now and drained and arm.exits_when_drained:
            try:
                launched.process.wait(120)
            except Exception:
                pass
    finally:
        stopping = time.time()
        result["exit_code"] = launched.stop()
        result["stop_s"] = round(time.time() - stopping, 1)
        usage = sampler.stop()
        watcher.stop()
    timeline = watcher.timeline
    result.update(drained=drained, commits_seen=len(timeline),
                  driver_peak_rss_mb=round(usage.driver_peak_rss_bytes / 2**20, 1),
                  tree_peak_rss_mb=round(usage.tree_peak_rss_bytes / 2**20, 1))
    if drained and timeline:
        t_first, first = timeline[0]
        t_done = next(t for t, offsets in timeline if all(offsets.get(p, -1) >= o for p, o in end.items()))
        wall = t_done - started
        result.update(wall_s=round(wall, 2), wall_records_per_s=round(records / wall, 1),
                      cpu_s=round(cpu_at_drain, 2), cpu_s_per_million=round(cpu_at_drain / records * 1e6, 2))
        after_first = records - _committed_total(first)
        result.update(wall_mb_per_s=round(payload_bytes / wall / 1e6, 2))
        if t_done > t_first and after_first >= records / 2:
            drain = t_done - t_first
            rate = after_first / drain
            result.update(drain_s=round(drain, 2), records_per_s=round(rate, 1),
                          mb_per_s=round(rate * payload_bytes / records / 1e6, 2))
        else:  # the first commit already covered half or more: no start-up-free figure
            result.update(drain_s=None, records_per_s=None, mb_per_s=None,
                          note="first commit covered half the records or more: only the wall figure")
    else:
        result["error"] = f"not drained (committed {watcher.latest}, wanted {end}); log: {launched.log_tail(15)}"
    result["health"] = launched.check(range(0, records)).as_dict()
    return result


def measure_latency(arm: Arm, settings: BenchSettings, spec: RunSpec, rate: int, seconds: float) -> dict[str, Any]:
    """One latency run on a fresh topic: start the arm, wait until it is committing, produce at ``rate``
    for ``seconds`` (each record stamped with its send time), wait until all is committed, stop it."""
    from connect_spark.testing.kafka import create_topic, end_offsets

    partitions = settings.partitions
    create_topic(settings.bootstrap_servers, spec.topic, partitions)
    prefill(settings.bootstrap_servers, spec.topic, partitions, partitions, processes=1)  # one per partition
    (spec.work / "out").mkdir(parents=True, exist_ok=True)
    launched = arm.launch(settings, spec)
    watcher = launched.watcher.start()
    result: dict[str, Any] = {"run_id": spec.run_id, "rate": rate, "seconds": seconds}
    try:
        if not watcher.wait_for({p: 1 for p in range(partitions)}, 600, alive=launched.alive):
            result["error"] = f"the arm never committed its first records; log: {launched.log_tail(15)}"
            return result
        began = time.monotonic()
        produced = produce_at_rate(settings.bootstrap_servers, spec.topic, partitions, rate, seconds, partitions)
        result["achieved_rate"] = round(produced / (time.monotonic() - began), 1)
        end = end_offsets(settings.bootstrap_servers, spec.topic)
        if not watcher.wait_for(end, max(120.0, seconds * 2), alive=launched.alive):
            result["error"] = f"not all committed (committed {watcher.latest}, wanted {end})"
    finally:
        result["exit_code"] = launched.stop()
        watcher.stop()
        if "achieved_rate" in result:
            stamps = read_timestamps(settings.bootstrap_servers, spec.topic, partitions, {p: 1 for p in range(partitions)})
            result.update(summarize(stamps, watcher.timeline).as_dict())
            result["commits_seen"] = len(watcher.timeline)
            result["health"] = launched.check(range(0, partitions + sum(len(v) for v in stamps.values()))).as_dict()
    return result


def summarize_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median (and min/max) of each figure over the measured runs that drained."""
    good = [r for r in runs if not r.get("warmup") and r.get("wall_records_per_s")]
    summary: dict[str, Any] = {"measured_runs": len(good)}
    for key in ("records_per_s", "wall_records_per_s", "mb_per_s", "wall_mb_per_s", "cpu_s_per_million", "driver_peak_rss_mb",
                "tree_peak_rss_mb", "wall_s"):
        values = [r[key] for r in good if r.get(key) is not None]
        if values:
            summary[key] = round(statistics.median(values), 2)
            summary[f"{key}_min"], summary[f"{key}_max"] = min(values), max(values)
    measured = [r for r in runs if not r.get("warmup")]
    summary["health_ok"] = bool(measured) and all(r.get("health", {}).get("ok") for r in measured)
    return summary


def run_benchmark(arms: list[Arm], settings: BenchSettings, plan: BenchPlan, work_dir: Path,
                  echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Pre-fill, run every available arm (warm-up + interleaved repetitions), then the latency runs; then
    :meth:`~jobs.bench.arms.Arm.close` every arm, also when a run raised.

    Returns the results document (see :mod:`jobs.bench.report`)."""
    try:
        return _run_arms(arms, settings, plan, work_dir, echo)
    finally:
        for arm in arms:
            arm.close()


def _run_arms(arms: list[Arm], settings: BenchSettings, plan: BenchPlan, work_dir: Path,
              echo: Callable[[str], None]) -> dict[str, Any]:
    from connect_spark.testing.kafka import create_topic, end_offsets

    work_dir.mkdir(parents=True, exist_ok=True)
    session = uuid.uuid4().hex[:6]
    topic = plan.topic or f"bench-{session}"
    selected = [a for a in arms if not plan.arms or a.key in plan.arms]
    results: dict[str, Any] = {"arms": {}, "latency": {}}
    available: list[Arm] = []
    for arm in selected:
        reason = arm.unavailable_reason()
        results["arms"][arm.key] = {"label": arm.label, "status": f"unavailable: {reason}" if reason else "ok",
                                    "runs": []}
        if reason:
            echo(f"arm {arm.key}: unavailable: {reason}")
        else:
            available.append(arm)

    create_topic(settings.bootstrap_servers, topic, settings.partitions)
    filled = prefill(settings.bootstrap_servers, topic, settings.partitions, plan.records)
    end = end_offsets(settings.bootstrap_servers, topic)
    echo(f"pre-filled {topic}: {plan.records} records, {filled.payload_bytes / 1e6:.1f} MB in {filled.seconds:.1f} s")
    # (odd_every, odd_mix) → (topic, prefill, end offsets)
    odd_topics: dict[tuple[int, bool], tuple[str, Any, dict[int, int]]] = {}
    for odd_every, odd_mix in sorted({(a.odd_every, a.odd_mix) for a in available if a.odd_every}):
        odd_topic = f"{topic}-odd{odd_every}{'-mix' if odd_mix else ''}"
        create_topic(settings.bootstrap_servers, odd_topic, settings.partitions)
        odd_filled = prefill(settings.bootstrap_servers, odd_topic, settings.partitions, plan.records,
                             odd_every=odd_every, odd_mix=odd_mix)
        odd_topics[(odd_every, odd_mix)] = (odd_topic, odd_filled, end_offsets(settings.bootstrap_servers, odd_topic))
        echo(f"pre-filled {odd_topic}: every {odd_every}th record is odd"
             + (" (half of them for the dead letter queue, half as another producer writes them)" if odd_mix
                else " (as another producer writes them: converted per record)"))
    results["prefill"] = {"topic": topic, "records": plan.records, "payload_bytes": filled.payload_bytes,
                          "avg_record_bytes": round(filled.payload_bytes / max(plan.records, 1), 1),
                          "seconds": round(filled.seconds, 1), "end_offsets": end}

    rounds = plan.warmup + plan.repetitions
    for round_no in range(rounds):
        warmup = round_no < plan.warmup
        for arm in available:
            run_id = f"bench-{session}-{arm.key}-r{round_no}"
            arm_topic, arm_filled, arm_end = odd_topics.get((arm.odd_every, arm.odd_mix), (topic, filled, end))
            spec = RunSpec(arm_topic, run_id, work_dir / run_id, available_now=True,
                           bootstrap_servers=settings.bootstrap_servers)
            spec.work.mkdir(parents=True)
            run = measure_drain(arm, settings, spec, arm_end, arm_filled.payload_bytes, plan.drain_timeout_s)
            run.update(round=round_no, warmup=warmup)
            results["arms"][arm.key]["runs"].append(run)
            echo(_run_line(arm, run))
    for arm in available:
        entry = results["arms"][arm.key]
        entry["summary"] = summarize_runs(entry["runs"])
        if not entry["summary"]["health_ok"]:
            entry["status"] = "failed: output health" if entry["summary"]["measured_runs"] else "failed: did not drain"

    for rate in plan.latency_rates:
        for arm in available:
            if arm.key not in plan.latency_arms:
                continue
            run_id = f"bench-{session}-{arm.key}-lat{rate}"
            spec = RunSpec(f"{topic}-lat{rate}-{arm.key}", run_id, work_dir / run_id, available_now=False,
                           bootstrap_servers=settings.bootstrap_servers)
            spec.work.mkdir(parents=True)
            run = measure_latency(arm, settings, spec, rate, plan.latency_seconds)
            results["latency"].setdefault(arm.key, {})[str(rate)] = run
            echo(f"arm {arm.key} latency at {rate}/s: p50 {run.get('p50_ms')} ms, p99 {run.get('p99_ms')} ms"
                 f"{'  ERROR ' + run['error'] if run.get('error') else ''}")
    return results


def _run_line(arm: Arm, run: dict[str, Any]) -> str:
    tag = "warm-up" if run["warmup"] else f"round {run['round']}"
    if run.get("error"):
        return f"arm {arm.key} {tag}: ERROR {run['error']}"
    h = run["health"]
    return (f"arm {arm.key} {tag}: {run.get('records_per_s')} rec/s ({run.get('wall_records_per_s')} incl. start-up), "
            f"{run.get('cpu_s_per_million')} CPU-s/M, driver RSS {run['driver_peak_rss_mb']} MB, "
            f"rows {h['rows']}/{h['expected']} dup {h['duplicates']}")
