"""Which task owns which topic-partition.

Kafka Connect's sink tasks share one consumer group, and the consumer's default range assignment gives
each task a contiguous run of every topic's partitions, the first tasks taking one more when the
count does not divide evenly. connect_spark assigns the same way, by task id, so an assignment is
stable while the partitions do not change.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from connect_spark.api.records import TopicPartition

__all__ = ["range_assignment", "extend_assignment"]


def range_assignment(partitions: Iterable[TopicPartition], task_count: int) -> dict[int, set[TopicPartition]]:
    """Assign partitions to task ids ``0..task_count-1`` per topic, as the range assignor does."""
    if task_count < 1:
        raise ValueError("task_count must be at least 1")
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    assignment: dict[int, set[TopicPartition]] = {task: set() for task in range(task_count)}
    for topic, numbers in by_topic.items():
        numbers.sort()
        per_task, extra = divmod(len(numbers), task_count)
        start = 0
        for task in range(task_count):
            size = per_task + (1 if task < extra else 0)
            assignment[task].update(TopicPartition(topic, p) for p in numbers[start:start + size])
            start += size
    return assignment


def extend_assignment(
    current: dict[int, set[TopicPartition]], new_partitions: Iterable[TopicPartition]
) -> dict[int, set[TopicPartition]]:
    """Give partitions that appeared while running to the task the range assignment names for them.

    Partitions already assigned keep their task (no revocation), so a growing subscription never
    moves work between running tasks; returns only the additions, by task id.
    """
    new = set(new_partitions)
    everything = set().union(*current.values()) | new
    target = range_assignment(everything, len(current))
    additions: dict[int, set[TopicPartition]] = {}
    for task, owned in target.items():
        added = owned & new
        if added:
            additions[task] = added
    return additions
