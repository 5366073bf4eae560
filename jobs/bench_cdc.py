"""Benchmark: Debezium change events into Delta, the hand-written Spark job ÷ connect_spark's Delta sink.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_cdc.py [--records 1000000] [--large]

Starts a local broker, produces ``--records`` change events of Debezium 3.6.1's PostgreSQL connector for the
table ``public.orders`` (JsonConverter with schemas: key ``{id}``, value Debezium's envelope, ~3.8 KB; 80 %
updates and 10 % deletes over a hot set of ``--rows``/10 keys, each delete followed by its tombstone, 10 %
inserts; see ``jobs/bench/cdc_events.py``) into a 4-partition topic keyed by id, after checking that the
events are byte for byte what Kafka's JsonConverter writes for the structs Debezium builds. Then, on one
SparkSession (``local[2]``, UTC), each arm drains the topic into a Delta table pre-filled with ``--rows`` rows
(the initial snapshot), written the same way for each (``jobs/bench/cdc_arms.py``):

  hand  readStream kafka → from_json (the envelope) → foreachBatch: last change per key, MERGE INTO, availableNow;
  sink  connect_spark's DeltaSink: ExtractNewRecordState, insert.mode=upsert, pk.mode=record_key,
        delete.enabled=true, JsonConverter with schemas, --available-now.

Both arms first drain a small warm-up topic; then ``--rounds`` rounds (the order alternating) are measured.
Prints records/s of each (every record of the topic, tombstones included, over the whole run from the query's
start), the ratio sink ÷ hand, CPU-seconds per million change events (this process, Spark's JVM and its Python
workers; not the broker), which conversion path the sink's batches took (its log), and whether every table
ends equal to the one the events describe (row count, distinct ids, a checksum over the columns); a table that
does not is reported loudly and the exit code is 1.

Then one MERGE batch's cost (``--merge-changes`` changes, last change per key) into ``--merge-rows`` rows, and
with ``--large`` into ten times as many, in each layout (``jobs/bench/merge_cost.py``): unordered or Z-ordered
by id, deletion vectors off or on, the join condition alone or with the batch's id range. Not a test: figures
depend on the machine (run it under the benchmark lock on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout


def _records(table, stream, partitions: int):
    """``(partition, key, value)`` of every change of ``stream``, a tombstone after each delete."""
    from jobs.bench.cdc_events import key_partition, render

    templates = table.templates()
    for change in stream:
        key, value = render(table, templates, change)
        partition = key_partition(key, partitions)
        yield partition, key, value
        if change.op == "d":
            yield partition, key, None


def _produce(bootstrap: str, table, stream, partitions: int):
    from connect_spark.testing.kafka import create_topic
    from jobs.bench.producing import produce_records

    create_topic(bootstrap, table.topic, partitions)
    return produce_records(bootstrap, table.topic, _records(table, stream, partitions))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="change events (tombstones not counted)")
    parser.add_argument("--rows", type=int, default=0, help="rows of the initial table (default: --records)")
    parser.add_argument("--hot-keys", type=int, default=0, help="keys the updates and deletes go to (default: rows/10)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-offsets", type=int, default=250_000, help="maxOffsetsPerTrigger of both arms")
    parser.add_argument("--files", type=int, default=0, help="files of the initial table (default: one per 125,000 rows)")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds of both arms (order alternating)")
    parser.add_argument("--warm-up-events", type=int, default=100_000)
    parser.add_argument("--merge-rows", type=int, default=-1,
                        help="table rows of the MERGE cost part (default: --rows; 0: skip the part)")
    parser.add_argument("--merge-changes", type=int, default=50_000, help="change events of the measured MERGE batch")
    parser.add_argument("--large", action="store_true", help="the MERGE cost part at ten times --merge-rows as well")
    parser.add_argument("--work", type=Path, default=None, help="folder for the broker and tables (default: a temporary one)")
    args = parser.parse_args()
    rows = args.rows or args.records
    hot = args.hot_keys or max(1, rows // 10)
    files = args.files or max(1, rows // 125_000)
    merge_rows = rows if args.merge_rows < 0 else args.merge_rows
    logging.basicConfig(level=logging.WARNING)
    for handler in logging.getLogger().handlers:  # connect_spark's INFO lines go to PathLog only
        handler.setLevel(logging.WARNING)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from jobs.bench import cdc_arms, merge_cost
    from jobs.bench.cdc_events import ChangeStream, ChangeTable, check_rendering
    from jobs.bench.report import environment

    ensure_resolved()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-cdc-"))
    orders, warm_table = ChangeTable("orders"), ChangeTable("orders_warm_up")
    check_rendering(orders, list(ChangeStream(rows, 2_000, hot)))
    print(f"events checked: the first 2,000 render byte for byte as Kafka's JsonConverter writes Debezium's structs")
    failures: list[str] = []
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker:
        bootstrap = broker.bootstrap_servers
        stream = ChangeStream(rows, args.records, hot)
        filled = _produce(bootstrap, orders, stream, args.partitions)
        tombstones = stream.counts["d"]
        print(f"produced {args.records:,} change events ({stream.counts['u']:,} updates, {stream.counts['d']:,} "
              f"deletes, {stream.counts['c']:,} inserts) + {tombstones:,} tombstones = {filled.records:,} records, "
              f"{filled.payload_bytes / 1e9:.2f} GB, to {args.partitions} partitions in {filled.seconds:.1f} s; "
              f"table {rows:,} rows in {files} files, hot set {hot:,} keys")
        warm_events = min(args.records, args.warm_up_events)
        warm_rows = min(rows, max(warm_events, 1_000))
        warm_stream = ChangeStream(warm_rows, warm_events, max(1, warm_rows // 10))
        _produce(bootstrap, warm_table, warm_stream, args.partitions)

        spark = get_or_create_session(app_name="bench-cdc", ui=False, conf={
            "spark.master": "local[2]", "spark.driver.memory": "4g" if args.large else "2g",
            "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"})
        unavailable = cdc_arms.sink_unavailable_reason()
        arms = ["hand"] + ([] if unavailable else ["sink"])
        if unavailable:
            print(f"sink arm unavailable: {unavailable}")
        expected = cdc_arms.fingerprint(cdc_arms.expected_table(spark, stream))
        print(f"expected table: {expected.describe()}")

        def drain(arm: str, run: str, table: ChangeTable, table_rows: int, path_log=None) -> tuple[float, float]:
            folder = work / run
            cdc_arms.prefill_table(spark, folder / "table", table_rows, max(1, table_rows // 125_000))
            if arm == "hand":
                action = lambda: cdc_arms.run_hand(spark, bootstrap, table.topic, folder / "table",  # noqa: E731
                                                   folder / "checkpoint", args.max_offsets)
            else:
                action = lambda: cdc_arms.run_sink(spark, bootstrap, table.topic, folder / "table",  # noqa: E731
                                                   folder, f"bench-cdc-{run}", args.max_offsets)
            with (path_log or cdc_arms.PathLog()):
                seconds, cpu, code = cdc_arms.timed(action)
            if code not in (None, 0):
                failures.append(f"{run}: the sink exited with {code}")
            return seconds, cpu

        started = time.monotonic()
        for arm in arms:
            drain(arm, f"warm-up-{arm}", warm_table, warm_rows)
        print(f"warm-up: both arms drained {warm_events:,} events in {time.monotonic() - started:.1f} s")

        totals = {arm: [0.0, 0.0] for arm in arms}
        path_log = cdc_arms.PathLog()
        for round_ in range(args.rounds):
            for arm in (arms if round_ % 2 == 0 else arms[::-1]):
                run = f"{arm}-r{round_}"
                seconds, cpu = drain(arm, run, orders, rows, path_log if arm == "sink" else None)
                totals[arm][0] += seconds
                totals[arm][1] += cpu
                found = cdc_arms.fingerprint(spark.read.format("delta").load(str(work / run / "table")))
                same = found.same_rows(expected)
                if not same:
                    failures.append(f"{run}: table {found.describe()} != expected {expected.describe()}; "
                                    f"columns {found.columns}")
                print(f"round {round_ + 1} {arm}: {filled.records:,} records in {seconds:.1f} s = "
                      f"{filled.records / seconds:,.0f} records/s ({args.records / seconds:,.0f} change events/s); "
                      f"CPU {cpu:.1f} s = {cpu / args.records * 1e6:.1f} CPU-s per million events; table "
                      f"{'= expected' if same else 'DIFFERS from expected: ' + found.describe()}; "
                      f"load average {os.getloadavg()[0]:.1f}")

        rates = {arm: filled.records * args.rounds / totals[arm][0] for arm in arms}
        cpu = {arm: totals[arm][1] / (args.records * args.rounds) * 1e6 for arm in arms}
        print(f"== {filled.records:,} records ({args.records:,} change events + {tombstones:,} tombstones) per run, "
              f"{args.rounds} round(s), maxOffsetsPerTrigger {args.max_offsets:,} ==")
        for arm in arms:
            print(f"{arm}: {rates[arm]:,.0f} records/s, {cpu[arm]:.1f} CPU-s per million change events")
        if "sink" in rates:
            print(f"ratio sink ÷ hand records/s: {rates['sink'] / rates['hand']:.2f}; "
                  f"CPU per event sink ÷ hand: {cpu['sink'] / cpu['hand']:.2f}")
            lines = sorted(set(path_log.lines))
            print("sink conversion path: " + ("; ".join(lines[:5]) if lines else
                                              "vectorized plan (no batch or record took the per-record path)"))
        print("tables: " + ("every table equals the expected one (" + expected.describe() + ")" if not failures
                            else "!!! THE ARMS DISAGREE OR FAILED !!!"))
        for failure in failures:
            print(f"!!! {failure}")

        if merge_rows:
            print(f"== one MERGE batch: {args.merge_changes:,} change events, last change per key ==")
            merge_cost.warm_up(spark, work / "merge")
            for size in ([merge_rows, merge_rows * 10] if args.large else [merge_rows]):
                merge_files = max(1, size // 125_000)
                print(f"-- into {size:,} rows ({merge_files} files), hot set {min(hot, size):,} keys --")
                print(merge_cost.HEADER)
                merge_cost.run_merge_cost(spark, work / "merge", size, merge_files, args.merge_changes,
                                          min(hot, size))
        spark.stop()
    env = environment()
    print(json.dumps({"machine": env["machine"], "versions": env["versions"]}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
