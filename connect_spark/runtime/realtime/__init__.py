"""``task.execution.mode=realtime``: record and Arrow tasks inside Spark 4.2's real-time mode.

* :mod:`.processor` — the driver's side (refusals at start, the writer per query generation);
* :mod:`.writer` — the ``ForeachWriter`` Spark runs per Kafka partition and long batch;
* :mod:`.partition_task` — a partition's task instance and its attempts (open, put, commit, close);
* :mod:`.commits` — commits from the executor, fenced per partition by Kafka transactions;
* :mod:`.rows` — rows as raw Arrow batches, and re-reads of a partition from Kafka.

The query itself is :class:`connect_spark.streaming.realtime_query.RealtimeQueryGenerations`.
"""
