"""Lag per partition, from a streaming query's progress and the committed offsets.

Spark's Kafka source reports, per micro-batch, ``latestOffset`` (the newest offsets it saw, per
partition) and ``metrics`` ``min``/``max``/``avgOffsetsBehindLatest`` (how far its read position is
behind). Kafka Connect users watch the consumer group's lag instead: latest − committed. Both are here.
Pure functions over plain dicts (Spark's ``lastProgress`` shape); no Spark needed.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from connect_spark.api.records import TopicPartition

__all__ = ["latest_offsets", "partition_lag", "source_lag_metrics"]

_SOURCE_METRICS = {
    "minOffsetsBehindLatest": "min-offsets-behind-latest",
    "maxOffsetsBehindLatest": "max-offsets-behind-latest",
    "avgOffsetsBehindLatest": "avg-offsets-behind-latest",
}


def _offsets_of(value: Any) -> dict[TopicPartition, int]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, Mapping):
        return {}
    offsets = {}
    for topic, partitions in value.items():
        if isinstance(partitions, Mapping):
            for partition, offset in partitions.items():
                offsets[TopicPartition(str(topic), int(partition))] = int(offset)
    return offsets


def latest_offsets(progress: Mapping[str, Any] | None) -> dict[TopicPartition, int]:
    """The newest offset per partition the progress' Kafka sources saw (``latestOffset``, else ``endOffset``)."""
    result: dict[TopicPartition, int] = {}
    for source in (progress or {}).get("sources") or []:
        result.update(_offsets_of(source.get("latestOffset")) or _offsets_of(source.get("endOffset")))
    return result


def partition_lag(latest: Mapping[TopicPartition, int], committed: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """``latest − committed`` per partition Spark saw (a partition with no commit yet lags by ``latest``)."""
    return {tp: max(0, off - committed.get(tp, 0)) for tp, off in latest.items()}


def source_lag_metrics(progress: Mapping[str, Any] | None) -> dict[str, float]:
    """Spark's ``offsetsBehindLatest`` metrics of the progress, under our metric names (worst over sources)."""
    result: dict[str, float] = {}
    for source in (progress or {}).get("sources") or []:
        for spark_name, name in _SOURCE_METRICS.items():
            value = (source.get("metrics") or {}).get(spark_name)
            if value is None:
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            result[name] = max(result.get(name, number), number)
    return result
