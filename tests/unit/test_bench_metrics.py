"""Pure logic of the benchmark harness: latency from a commit timeline, output health, Spark checkpoints."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.bench.health import CSV_ID, delta_health, lines_health
from jobs.bench.latency import record_latencies, summarize
from jobs.bench.records import FIELD_COUNT, record_value
from jobs.bench.runner import summarize_runs
from jobs.bench.watchers import spark_batch_end_offsets


def test_record_shape():
    values = [record_value(i) for i in range(0, 2_000_000, 9973)]
    assert all(len(json.loads(v)) == FIELD_COUNT == 11 for v in values)
    assert 205 <= sum(map(len, values)) / len(values) <= 225
    assert json.loads(record_value(42))["id"] == 42


def test_latency_is_time_until_the_committed_offset_passes_the_record():
    produced = {0: [(0, 1_000), (1, 1_100), (2, 1_200)], 1: [(0, 1_000)]}
    timeline = [(1.5, {0: 1}), (2.0, {0: 2, 1: 1}), (3.0, {0: 2, 1: 1})]
    latencies, never = record_latencies(produced, timeline)
    assert sorted(latencies.tolist()) == [500.0, 900.0, 1000.0]
    assert never == 1  # offset 2 of partition 0 was never committed
    summary = summarize(produced, timeline)
    assert (summary.records, summary.committed, summary.max_ms) == (4, 3, 1000.0)


def test_lines_health_counts_rows_duplicates_and_missing(tmp_path):
    (tmp_path / "a.txt").write_bytes(record_value(0) + b"\n" + record_value(1) + b"\n")
    (tmp_path / "b.txt").write_bytes(record_value(1) + b"\n")
    health = lines_health(tmp_path, range(0, 3))
    assert (health.rows, health.duplicates, health.missing, health.files, health.ok) == (3, 1, 1, 2, False)
    (tmp_path / "c.csv").write_bytes(b"0,1,2\n1,5,6\n")
    csv = lines_health(tmp_path, range(0, 2), CSV_ID)
    assert (csv.rows, csv.duplicates) == (2, 0)


def test_delta_health_reads_live_files_from_the_log(tmp_path):
    log = tmp_path / "_delta_log"
    log.mkdir()
    for name, ids in (("p1.parquet", [0, 1]), ("p2.parquet", [2, 3]), ("old.parquet", [0])):
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), tmp_path / name)
    (log / "00000000000000000000.json").write_text(
        json.dumps({"add": {"path": "p1.parquet"}}) + "\n" + json.dumps({"add": {"path": "old.parquet"}}) + "\n")
    (log / "00000000000000000001.json").write_text(
        json.dumps({"add": {"path": "p2.parquet"}}) + "\n" + json.dumps({"remove": {"path": "old.parquet"}}) + "\n")
    health = delta_health(tmp_path, range(0, 4))
    assert (health.rows, health.duplicates, health.missing, health.files, health.table_commits) == (4, 0, 0, 2, 2)
    assert health.ok


def test_spark_checkpoint_offsets_file(tmp_path):
    path = tmp_path / "3"
    path.write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"t":{"1":20,"0":15}}\n')
    assert spark_batch_end_offsets(path, "t") == {0: 15, 1: 20}
    assert spark_batch_end_offsets(path, "other") == {}


def test_summary_ignores_warmup_and_needs_healthy_runs():
    ok = {"ok": True}
    runs = [{"warmup": True, "records_per_s": 1.0, "wall_records_per_s": 1.0, "health": {"ok": False}},
            {"warmup": False, "records_per_s": 10.0, "wall_records_per_s": 1.0, "health": ok},
            {"warmup": False, "records_per_s": 30.0, "wall_records_per_s": 1.0, "health": ok},
            {"warmup": False, "records_per_s": 20.0, "wall_records_per_s": 1.0, "health": ok}]
    summary = summarize_runs(runs)
    assert summary["records_per_s"] == 20.0 and summary["measured_runs"] == 3 and summary["health_ok"]
    runs[2]["health"] = {"ok": False}
    assert not summarize_runs(runs)["health_ok"]


def test_targets_compare_the_same_figure_on_both_sides():
    from jobs.bench.report import targets

    def arm(steady, wall):
        return {"summary": {"records_per_s": steady, "wall_records_per_s": wall}}

    results = {"arms": {"a": arm(100.0, 50.0), "b": arm(150.0, 40.0), "d1": arm(None, 10.0), "d2": arm(30.0, 20.0),
                        "c": arm(160_000.0, 1.0), "b1": arm(100.0, 30.0),
                        "a0": {"summary": {"wall_s": 50.0}}, "b0": {"summary": {"wall_s": 60.0}},
                        "b2": {"summary": {"wall_s": 72.0}}},
               "latency": {"a": {"10000": {"p50_ms": 1000.0, "p99_ms": 3000.0}},
                           "b": {"10000": {"p50_ms": 900.0, "p99_ms": 3500.0}}}}
    found = {t["target"]: t for t in targets(results)}
    assert found["b ÷ a records/s ≥ 1.2"]["value"] == 1.5 and found["b ÷ a records/s ≥ 1.2"]["met"]
    d2 = found["d2 ÷ d1 records/s ≥ 0.6"]
    assert (d2["figure"], d2["value"], d2["met"]) == ("wall_records_per_s", 2.0, True)
    assert found["c ≥ 150000 records/s"]["met"]
    b1 = found["b1 ÷ b records/s (1 % per record: at most 10 % slower) ≥ 0.9"]
    assert (b1["value"], b1["met"]) == (0.667, False)
    cold = found["b0 ÷ a0 wall time, cold --available-now with defaults ≤ 0.83"]
    assert (cold["value"], cold["met"]) == (1.2, False)
    odd = found["b2 ÷ b0 wall time, cold, 1 % odd records with a DLQ ≤ 1.25"]
    assert (odd["value"], odd["met"]) == (1.2, True)
    assert found["b p50 ≤ a's at 10,000 rec/s"]["met"] and found["b p99 ≤ a's at 10,000 rec/s"]["met"] is False


def test_ceiling_shares_put_the_record_paths_against_arm_s():
    from jobs.bench.report import ceiling_shares

    def arm(steady, cpu):
        return {"summary": {"records_per_s": steady, "wall_records_per_s": 1.0, "cpu_s_per_million": cpu}}

    assert ceiling_shares({"arms": {"c": arm(10.0, 5.0)}}) == []
    shares = {row["arm"]: row for row in ceiling_shares({"arms": {"s": arm(200.0, 10.0), "c": arm(150.0, 25.0)}})}
    assert (shares["c"]["share"], shares["c"]["cpu_multiple"]) == (0.75, 2.5)
    assert shares["d2"]["share"] is None


def test_offsets_health_counts_what_the_committed_offsets_cover():
    from jobs.bench.health import offsets_health

    assert offsets_health({0: 60, 1: 40}, range(100)).ok
    short = offsets_health({0: 60}, range(100))
    assert (short.ok, short.missing) == (False, 40)
