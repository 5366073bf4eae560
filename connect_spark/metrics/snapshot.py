"""One connector's metrics as a JSON-able dict, and the progress line the CLI logs after each batch.

Pure functions over the runtime's counters, the committed offsets and Spark's last progress; the
runner calls them (``ConnectorRunner.metrics()`` and its progress callback).
"""

from __future__ import annotations

from typing import Any, Mapping

from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.metrics.lag import latest_offsets, partition_lag, source_lag_metrics

__all__ = ["connector_snapshot", "progress_line"]


def _offsets_list(offsets: Mapping[TopicPartition, int], key: str) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition, key: off} for tp, off in sorted(offsets.items())]


def connector_snapshot(
    name: str,
    state: str,
    execution_mode: str,
    batches: int,
    records_read: int,
    tasks: Mapping[int | str, Mapping[str, Any]],
    committed: Mapping[TopicPartition, int],
    progress: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The connector's metrics: ``tasks`` (task id → Kafka's sink-task and task-error metric names),
    ``lag`` (per partition ``latest − committed``, its max, Spark's offsetsBehindLatest) and ``committed``."""
    lag = partition_lag(latest_offsets(progress), committed)
    lag_info: dict[str, Any] = {
        "partitions": [{"topic": tp.topic, "partition": tp.partition, "lag": n} for tp, n in sorted(lag.items())],
        "records-lag-max": max(lag.values()) if lag else None,
        **source_lag_metrics(progress),
    }
    return {
        "connector": name,
        "state": state,
        "execution_mode": execution_mode,
        "batches": batches,
        "records_read": records_read,
        "tasks": {str(task_id): dict(values) for task_id, values in tasks.items()},
        "lag": lag_info,
        "committed": _offsets_list(committed, "offset"),
        "last_batch": _batch_summary(progress),
    }


def _batch_summary(progress: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not progress:
        return None
    return {
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "records": progress.get("numInputRows"),
        "input_rate": progress.get("inputRowsPerSecond"),
        "processed_rate": progress.get("processedRowsPerSecond"),
        "duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
    }


def progress_line(name: str, progress: Mapping[str, Any], committed: Mapping[TopicPartition, int]) -> str:
    """``orders: batch 12: 500 records (812.3 rec/s), lag orders[0]=0 orders[1]=40 (max 40), committed orders[0]@300 ...``"""
    lag = partition_lag(latest_offsets(progress), committed)
    rate = progress.get("processedRowsPerSecond") or 0.0
    lag_text = " ".join(f"{tp.topic}[{tp.partition}]={n}" for tp, n in sorted(lag.items())) or "-"
    max_text = f" (max {max(lag.values())})" if lag else ""
    committed_text = offsets_text(committed, " ") or "-"
    return (f"{name}: batch {progress.get('batchId')}: {progress.get('numInputRows', 0)} records "
            f"({float(rate):.1f} rec/s), lag {lag_text}{max_text}, committed {committed_text}")
