"""Which task owns which topic-partition.

Kafka Connect's sink tasks share one consumer group, and the consumer's default range assignment gives
each task a contiguous run of every topic's partitions, the first tasks taking one more when the
count does not divide evenly. connect_spark assigns the same way, by task id, so an assignment is
stable while the partitions do not change.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Iterable, Mapping

from connect_spark.api.records import TopicPartition

log = logging.getLogger(__name__)

__all__ = ["range_assignment", "extend_assignment", "TaskAssignment"]


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


class TaskAssignment:
    """Which task id owns which partition, for one run of a connector.

    Kept by the driver for every processor (driver-resident tasks and executor generations alike):
    :meth:`assign` at start, :meth:`extend` when partitions appear mid-run.
    """

    def __init__(self, connector_name: str, task_count: int) -> None:
        self.connector_name = connector_name
        self.task_count = task_count
        self.task_of: dict[TopicPartition, int] = {}

    def assign(self, partitions: Iterable[TopicPartition]) -> dict[int, set[TopicPartition]]:
        """The range assignment of ``partitions`` (the connector's start); returns every task's partitions."""
        assignment = range_assignment(set(partitions), self.task_count)
        self.task_of = {tp: task_id for task_id, owned in assignment.items() for tp in owned}
        return assignment

    def extend(self, first_offsets: Mapping[TopicPartition, int]) -> dict[int, set[TopicPartition]]:
        """Give partitions that appeared while running (with their first offsets) an owner; returns the additions."""
        new = {tp for tp in first_offsets if tp not in self.task_of}
        if not new:
            return {}
        additions = extend_assignment(self.by_task(), new)
        for task_id, added in additions.items():
            log.info("%s: new partitions %s for task %d", self.connector_name, sorted(map(str, added)), task_id)
            for tp in added:
                self.task_of[tp] = task_id
        return additions

    def by_task(self) -> dict[int, set[TopicPartition]]:
        """Every task id's partitions (empty sets included)."""
        owned: dict[int, set[TopicPartition]] = {task_id: set() for task_id in range(self.task_count)}
        for tp, task_id in self.task_of.items():
            owned[task_id].add(tp)
        return owned

    def shared(self) -> bool:
        """Whether some task owns more than one partition."""
        owners = list(self.task_of.values())
        return len(owners) != len(set(owners))
