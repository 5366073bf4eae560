"""Connector metric snapshots in Prometheus' text exposition format (``GET /metrics``).

Names follow the JMX exporter's usual mapping of Kafka Connect's MBeans:
``kafka_connect_sink_task_metrics_sink_record_read_total{connector="c",task="0"}``,
``kafka_connect_task_error_metrics_total_record_errors{...}``, and connect_spark's lag as
``connect_spark_records_lag{connector="c",topic="t",partition="0"}``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from connect_spark.metrics.names import ERROR_METRICS, LAG_METRICS, SINK_TASK_METRICS, description_of, kind_of

__all__ = ["render", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_PREFIX = {"sink-task-metrics": "kafka_connect_sink_task_metrics_",
           "task-error-metrics": "kafka_connect_task_error_metrics_",
           "lag": "connect_spark_"}


def _metric(group: str, name: str) -> str:
    return _PREFIX[group] + name.replace("-", "_")


def _label_value(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items()) + "}"


def _number(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def render(snapshots: Iterable[Mapping[str, Any]]) -> str:
    """The exposition text of connector snapshots (``ConnectorRunner.metrics()`` shapes), one family per metric."""
    families: dict[str, list[str]] = {}
    kinds: dict[str, tuple[str, str]] = {}

    def add(group: str, name: str, labels: Mapping[str, Any], value: Any) -> None:
        if value is None:
            return
        metric = _metric(group, name)
        kinds.setdefault(metric, (kind_of(name), description_of(name)))
        families.setdefault(metric, []).append(f"{metric}{_labels(labels)} {_number(value)}")

    for snapshot in snapshots:
        connector = snapshot["connector"]
        for task_id, task in sorted((snapshot.get("tasks") or {}).items()):
            labels = {"connector": connector, "task": task_id}
            for name in SINK_TASK_METRICS:
                add("sink-task-metrics", name, labels, task.get(name))
            for name in ERROR_METRICS:
                add("task-error-metrics", name, labels, task.get(name))
        lag = snapshot.get("lag") or {}
        for entry in lag.get("partitions", []):
            add("lag", "records-lag", {"connector": connector, "topic": entry["topic"],
                                       "partition": entry["partition"]}, entry["lag"])
            add("lag", "record-freshness-ms", {"connector": connector, "topic": entry["topic"],
                                               "partition": entry["partition"]}, entry.get("freshness-ms"))
        for name in LAG_METRICS:
            if name not in ("records-lag", "record-freshness-ms"):
                add("lag", name, {"connector": connector}, lag.get(name))
    lines: list[str] = []
    for metric in sorted(families):
        kind, help_text = kinds[metric]
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {kind}")
        lines.extend(families[metric])
    return "\n".join(lines) + "\n"
