"""What proving a schemaless JSON row exact costs, against parsing it alone: one Spark session, one cached input.

    .venv/bin/python jobs/bench_exactness.py [--records 500000] [--reps 3]

Input: the benchmark's records (``jobs/bench/records.py``, ~215-byte JSON objects) as a cached binary
column. Each variant projects the parsed value and writes to Spark's ``noop`` sink; the figures are
rows/s (best of ``--reps``) and the cost of each proof per million rows over the parse alone:

* ``parse`` — ``from_json`` into the shape, nothing proven (what plain Spark does);
* ``corrupt-record`` — ``from_json`` PERMISSIVE with ``columnNameOfCorruptRecord`` (flags text that does
  not parse or values that do not fit; it does *not* see missing or extra keys, numbers read as strings,
  integers read as doubles, so it is not a proof on its own);
* ``regex`` — a per-shape regular expression over the row's text (``rlike``: the exact key sequence,
  each value's token kind, no escapes, no ``-0``), then ``from_json``;
* ``to_json`` — re-serialize the parsed row and compare with its text (the proof the plan keeps for
  shapes with arrays);
* ``plan`` — the connector's vectorized plan as the Delta sink runs it (``PlanOutput.guarded``): the
  shape's own expression (``columnar/exact_text.py``), and the proved rows' values read from their
  text split at its colons (or quotes) instead of parsed.

Not a test; run it on a quiet machine (under ``flock /tmp/connect_spark_bench.lock`` on a shared one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: The regular expression proving a record of ``jobs/bench/records.py`` exact (one per shape).
_STRING = r'"[^"\\\\\x00-\x1f]*"'
_INT = r"-?(0|[1-9][0-9]{0,17})"
_FRACTION = r"-?(0|[1-9][0-9]{0,17})\.[0-9]+"


def _shape_regex(fields: list[tuple[str, str]]) -> str:
    token = {"BIGINT": _INT, "STRING": _STRING, "DOUBLE": _FRACTION}
    body = ",".join(f'"{name}":{token[kind]}' for name, kind in fields)
    return "^\\{" + body + "\\}$"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_exactness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from connect_spark.columnar.plan import compile_plan
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.harness import worker_properties
    from jobs.bench.records import SPARK_SCHEMA_DDL, record_key, record_value

    spark = get_or_create_session(app_name="bench-exactness", conf={"spark.master": "local[2]",
                                                                     "spark.sql.shuffle.partitions": "2"})
    rows = [("bench", i % 4, i, 1_700_000_000_000 + i, 0, record_key(i), record_value(i), [])
            for i in range(args.records)]
    raw = spark.createDataFrame(rows, "topic string, partition int, offset long, timestamp_ms long, "
                                      "timestamp_type int, key binary, value binary, "
                                      "headers array<struct<key:string,value:binary>>").repartition(4).cache()
    raw.count()
    del rows
    text = F.col("value").cast("string")
    fields = [tuple(part.strip().split(" ", 1)) for part in SPARK_SCHEMA_DDL.split(",")]
    shape = ", ".join(f"`{n}` {t}" for n, t in fields)
    parsed = F.from_json(text, shape, {"mode": "PERMISSIVE", "allowNonNumericNumbers": "false"})
    corrupt_shape = shape + ", `_corrupt` STRING"
    with_corrupt = F.from_json(text, corrupt_shape, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    regex = _shape_regex([(n, t) for n, t in fields])

    with tempfile.TemporaryDirectory() as tmp:
        connector = ConnectorConfig({"name": "exactness", "connector.class": "DeltaSink", "topics": "bench",
                                     "delta.table.path": str(Path(tmp) / "t"),
                                     "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                                     "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                     "value.converter.schemas.enable": "false"})
        worker = WorkerConfig(worker_properties("127.0.0.1:9", Path(tmp)))
        plan = compile_plan(connector, worker)
        plan.apply(raw)  # learn the shape once (a sample job), as the first batch does
        variants = {
            "parse": lambda: raw.select(parsed.alias("v")),
            "corrupt-record": lambda: raw.select(with_corrupt.alias("v")).where(F.col("v._corrupt").isNull()),
            "regex": lambda: raw.where(text.rlike(regex)).select(parsed.alias("v")),
            "to_json": lambda: raw.select(text.alias("t"), parsed.alias("v")).where(
                F.to_json("v", {"ignoreNullFields": "false"}) == F.col("t")),
            "plan": lambda: plan.apply(raw).guarded,
        }
        results = {}
        for name, build in variants.items():
            best = None
            kept = build().count()
            for _ in range(args.reps):
                started = time.perf_counter()
                build().write.format("noop").mode("overwrite").save()
                elapsed = time.perf_counter() - started
                best = elapsed if best is None else min(best, elapsed)
            results[name] = (best, kept)
    base = results["parse"][0]
    print(f"{args.records:,} records of ~{len(record_value(1))} bytes, best of {args.reps}, local[2]")
    print("| variant | rows kept | rows/s | µs/row over parse |")
    print("| --- | ---: | ---: | ---: |")
    for name, (elapsed, kept) in results.items():
        print(f"| {name} | {kept:,} | {args.records / elapsed:,.0f} | {(elapsed - base) / args.records * 1e6:+.2f} |")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
