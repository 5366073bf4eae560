"""The benchmark harness: connect_spark against plain Spark and against Apache Kafka Connect.

One command (``jobs/bench_all.py``) pre-fills a topic once, then runs every arm in turn on the same
records (a discarded warm-up run per arm, then interleaved measured repetitions), optionally measures
end-to-end latency at fixed produce rates, and writes ``results.json``, ``results.md`` and
``results.png``. A benchmark prints figures; it is not part of the test suite's pass/fail (a smoke test
runs every arm on a tiny input so the harness cannot rot).

Modules: :mod:`records` (the record shape), :mod:`producing` (pre-fill and fixed-rate production),
:mod:`process_metrics` (CPU and RSS of a process tree), :mod:`watchers` (committed offsets over time),
:mod:`health` (output checks), :mod:`latency` (produce → committed), :mod:`arms` (the arms),
:mod:`runner` (the schedule), :mod:`report` (tables and plot). :mod:`plain_spark_job` is arm a's Spark
job, :mod:`ceiling_job` arm s's (both built on :mod:`spark_job`), and :mod:`per_record_sink` arm c's connector.
"""
