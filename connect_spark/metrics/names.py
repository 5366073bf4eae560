"""Metric names, as Kafka Connect names them (``SinkTaskMetricsGroup`` and ``ErrorHandlingMetrics``).

Each entry maps the name to ``(kind, description)``; ``kind`` is Prometheus' ``counter`` or ``gauge``.
"""

from __future__ import annotations

__all__ = ["SINK_TASK_METRICS", "ERROR_METRICS", "LAG_METRICS", "kind_of"]

#: ``kafka.connect:type=sink-task-metrics,connector=*,task=*``
SINK_TASK_METRICS: dict[str, tuple[str, str]] = {
    "sink-record-read-rate": ("gauge", "Average records read from Kafka per second (before transforms)."),
    "sink-record-read-total": ("counter", "Records read from Kafka since the task started (before transforms)."),
    "sink-record-send-rate": ("gauge", "Average records handed to put per second (after transforms)."),
    "sink-record-send-total": ("counter", "Records handed to put since the task started (after transforms)."),
    "sink-record-active-count": ("gauge", "Records read but not yet committed."),
    "partition-count": ("gauge", "Topic partitions assigned to the task."),
    "offset-commit-seq-no": ("gauge", "Sequence number of the current offset commit."),
    "offset-commit-completion-rate": ("gauge", "Offset commits written per second."),
    "offset-commit-completion-total": ("counter", "Offset commits written."),
    "offset-commit-skip-rate": ("gauge", "Offset commits skipped per second (the task returned no offsets, or no change)."),
    "offset-commit-skip-total": ("counter", "Offset commits skipped (the task returned no offsets, or no change)."),
    "put-batch-avg-time-ms": ("gauge", "Average time put took for a batch, in milliseconds."),
    "put-batch-max-time-ms": ("gauge", "Longest time put took for a batch, in milliseconds."),
}

#: ``kafka.connect:type=task-error-metrics,connector=*,task=*`` (counted by the runtime's error handler)
ERROR_METRICS: dict[str, tuple[str, str]] = {
    "total-record-failures": ("counter", "Failed attempts of a record operation."),
    "total-record-errors": ("counter", "Records that ended in error."),
    "total-records-skipped": ("counter", "Records skipped because of an error."),
    "total-retries": ("counter", "Operations retried."),
    "total-errors-logged": ("counter", "Errors written to the log."),
    "deadletterqueue-produce-requests": ("counter", "Writes to the dead letter queue attempted."),
    "deadletterqueue-produce-failures": ("counter", "Writes to the dead letter queue that failed."),
    "last-error-timestamp": ("gauge", "Epoch milliseconds of the last error, 0 before any."),
}

#: connect_spark's own, per connector (and per partition for ``records-lag``).
LAG_METRICS: dict[str, tuple[str, str]] = {
    "records-lag": ("gauge", "Records behind the latest offset Spark saw: latest - committed, per partition."),
    "records-lag-max": ("gauge", "Largest records-lag of the connector's partitions."),
    "min-offsets-behind-latest": ("gauge", "Spark's Kafka source: fewest offsets behind latest after the last batch."),
    "max-offsets-behind-latest": ("gauge", "Spark's Kafka source: most offsets behind latest after the last batch."),
    "avg-offsets-behind-latest": ("gauge", "Spark's Kafka source: average offsets behind latest after the last batch."),
    "record-freshness-ms": ("gauge", "Milliseconds since the timestamp of the newest committed record, per partition."),
    "record-freshness-max-ms": ("gauge", "Largest record-freshness-ms of the connector's partitions."),
}


def kind_of(name: str) -> str:
    """``counter`` or ``gauge`` for a metric name of any group (``gauge`` when unknown)."""
    for group in (SINK_TASK_METRICS, ERROR_METRICS, LAG_METRICS):
        if name in group:
            return group[name][0]
    return "gauge"


def description_of(name: str) -> str:
    for group in (SINK_TASK_METRICS, ERROR_METRICS, LAG_METRICS):
        if name in group:
            return group[name][1]
    return name
