"""Kafka Connect's sink-task and task-error metrics for connectors running on Spark, plus partition lag.

* :mod:`.names` — the metric names (Kafka's ``sink-task-metrics`` / ``task-error-metrics`` groups) and docs;
* :mod:`.sink_task` — :class:`SinkTaskMetrics`, the counters and windowed rates one task updates;
* :mod:`.lag` — lag per partition from Spark's progress (``latestOffset`` − committed) and the
  ``offsetsBehindLatest`` source metrics;
* :mod:`.listener` — :class:`ProgressListener`, the session's ``StreamingQueryListener`` that hands each
  query's progress to its runner (the per-batch progress line in the CLI log);
* :mod:`.prometheus` — renders connector snapshots in Prometheus' text exposition format.
"""

from connect_spark.metrics.names import ERROR_METRICS, SINK_TASK_METRICS
from connect_spark.metrics.sink_task import SinkTaskMetrics

__all__ = ["SinkTaskMetrics", "SINK_TASK_METRICS", "ERROR_METRICS"]
