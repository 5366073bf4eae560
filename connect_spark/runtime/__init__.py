"""Kafka Connect's sink worker on Spark, by what each part holds:

* :mod:`.worker` — a connector's lifecycle (the runner), the standalone worker and its entry points,
  partitions and their start positions, restarts and stall detection;
* :mod:`.processors` — one batch processor per task shape and execution mode (executor tasks, driver
  tasks, DataFrame batches, Spark Connect), chosen at start;
* :mod:`.tasks` — one task: ``WorkerSinkTask``'s bookkeeping, which task owns which partition, the shared task loop, the task context,
  building a task's plugins, the executor-side task generation;
* :mod:`.conversion` — raw Kafka batches into ``SinkRecord`` lists or record frames, header reads, the
  driver-side batch sample;
* :mod:`.errors` — ``errors.*``: retries, tolerance, the log and dead letter queue reporters;
* :mod:`.python_worker` — hooks into Spark's Python workers on executors.
"""
