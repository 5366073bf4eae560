"""Run the whole benchmark: connect_spark vs plain Spark vs Apache Kafka Connect, one command.

    .venv/bin/python jobs/bench_all.py                      # 2M records, 4 partitions, 1 warm-up + 3 rounds,
                                                            # latency at 1k and 10k rec/s for a, b, d1, d2 (r too: --latency-arms)
    .venv/bin/python jobs/bench_all.py --records 50000 --reps 1 --latency-rates ""   # a quick look
    .venv/bin/python jobs/bench_all.py --bootstrap 127.0.0.1:9092 --arms a,d1        # existing broker, some arms

Starts a local KRaft broker (unless --bootstrap), pre-fills one topic, runs each arm in turn (never two at
once), writes results.json, results.md and results.png into --out, and prints the Markdown. Not a test.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_all", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1, help="discarded runs per arm (default 1)")
    parser.add_argument("--reps", type=int, default=3, help="measured rounds, arms interleaved (default 3)")
    parser.add_argument("--arms", type=_names, default=(), help="comma-separated subset of s,a,b,b1,c,d1,d2,r,rj,a0,b0,b2")
    parser.add_argument("--latency-rates", type=_ints, default=(1_000, 10_000), help='records/s, "" for none')
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument("--latency-arms", type=_names, default=("a", "b", "d1", "d2"))
    parser.add_argument("--max-offsets-per-trigger", type=int, default=250_000, help="batch bound of s, a, b, c, d2")
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--out", default=None, help="results folder (default bench-results/<time>)")
    parser.add_argument("--work-dir", default=None, help="scratch folder for tables, files, checkpoints")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from jobs.bench.arms import BenchSettings, default_arms
    from jobs.bench.report import environment, write_results
    from jobs.bench.runner import BenchPlan, run_benchmark

    ensure_resolved()
    env = environment()
    out = Path(args.out or Path("bench-results") / time.strftime("%Y%m%d-%H%M%S"))
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="bench-work-"))
    plan = BenchPlan(records=args.records, warmup=args.warmup, repetitions=args.reps,
                     latency_rates=args.latency_rates, latency_seconds=args.latency_seconds,
                     latency_arms=args.latency_arms, arms=args.arms)
    broker = None
    try:
        if args.bootstrap:
            bootstrap = args.bootstrap
        else:
            broker = LocalKafkaBroker(work / "kafka", heap="1g").start()
            bootstrap = broker.bootstrap_servers
        settings = BenchSettings(bootstrap, args.partitions, max_offsets_per_trigger=args.max_offsets_per_trigger)
        results = run_benchmark(default_arms(), settings, plan, work / "runs")
    finally:
        if broker is not None:
            broker.stop()
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    paths = write_results(results, settings.as_dict(), plan.as_dict(), out, env)
    print(paths["md"].read_text())
    print(f"Results: {paths['json']}, {paths['md']}, {paths['png']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
