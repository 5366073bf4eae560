"""Arm a: plain Spark, the baseline: ``readStream.format("kafka") → from_json(schema) → writeStream.format("delta")``.

    python -m jobs.bench.plain_spark_job --bootstrap 127.0.0.1:9092 --topic bench --table /tmp/t \
        --checkpoint /tmp/cp [--available-now | --trigger-ms 1000] [--max-offsets-per-trigger N] \
        [--conf spark.key=value ...]

Started as a child process by :mod:`jobs.bench.arms`; arguments, session and query loop are
:mod:`jobs.bench.spark_job`'s. SIGTERM stops the query between batches and exits 0.
"""

from __future__ import annotations

import sys

from jobs.bench.spark_job import job_arguments, run_query, session_and_stream


def main(argv: list[str] | None = None) -> int:
    parser = job_arguments("plain_spark_job")
    parser.add_argument("--table", required=True)
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from jobs.bench.records import SPARK_SCHEMA_DDL

    spark, stream = session_and_stream(args, "bench-plain-spark")
    parsed = stream.select(F.from_json(F.col("value").cast("string"), SPARK_SCHEMA_DDL).alias("v")).select("v.*")
    return run_query(spark, parsed.writeStream.format("delta"), args, lambda w: w.start(args.table),
                     "plain Spark query")


if __name__ == "__main__":
    sys.exit(main())
