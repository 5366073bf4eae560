"""Arm s: the ceiling of a Python record path on this machine: Spark's Kafka source → ``mapInArrow`` (no-op).

    python -m jobs.bench.ceiling_job --bootstrap 127.0.0.1:9092 --topic bench --checkpoint /tmp/cp \
        [--available-now | --trigger-ms 1000] [--max-offsets-per-trigger N] [--conf spark.key=value ...]

Started as a child process by :mod:`jobs.bench.arms`. Every micro-batch of Spark's Kafka source (its own
columns, no headers: what connect_spark reads for a task that does not read headers) crosses into
Spark's Python workers as Arrow batches, where a function counts the rows and yields nothing; Spark's
``noop`` sink ends the plan. That is everything a Python sink task cannot avoid (Kafka read, Arrow
serialization, the Python worker boundary, one Spark job per micro-batch) and nothing else, so the
per-record arms (c, d2) are reported as a share of it. Same session (``get_or_create_session``), Spark
settings, batch bound and trigger as arms a, c and d2. SIGTERM stops the query between batches, exits 0.
"""

from __future__ import annotations

import sys
from typing import Iterator

from jobs.bench.spark_job import job_arguments, run_query, session_and_stream


def count_rows(batches: Iterator) -> Iterator:
    """The no-op ``mapInArrow`` function: touches every Arrow batch, yields nothing."""
    rows = 0
    for batch in batches:
        rows += batch.num_rows
    return iter(())


def main(argv: list[str] | None = None) -> int:
    args = job_arguments("ceiling_job").parse_args(argv)
    spark, stream = session_and_stream(args, "bench-ceiling")
    crossed = stream.mapInArrow(count_rows, "rows long")
    return run_query(spark, crossed.writeStream.format("noop"), args, lambda w: w.start(), "ceiling query")


if __name__ == "__main__":
    sys.exit(main())
