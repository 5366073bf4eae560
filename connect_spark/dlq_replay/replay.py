"""Replaying dead letters through the connector's normal path: converters, transforms, ``put``.

Called by ``connect-spark dlq replay`` and ``POST /connectors/{name}/dlq/replay``
(:func:`replay_dead_letters`). The letters become batches of rows shaped as Spark's Kafka source delivers
them, with each record's original topic, partition, offset, timestamp, key and headers, plus
``__connect.replay.count``; the connector's own processor delivers each batch as it delivers a micro-batch,
in driver execution whatever the connector's ``task.execution.mode`` (the replay must reach the task
instances and see where they seek). A record that fails again goes where the connector's ``errors.*`` say: with the
dead letter queue, back to it carrying its replay count.

Every letter is accounted for. A run:

1. takes the connector's replay lease (:class:`~connect_spark.dlq_replay.replay_log.ReplayLog`): a second run
   while one is on is refused with :class:`~connect_spark.dlq_replay.replay_log.ReplayInProgressError`;
2. reads the stored :class:`~connect_spark.dlq_replay.progress.ReplayProgress` and the dead letter topic's end;
3. scans the letters from the stored position to that end once for letters superseded by a newer letter of
   the same original record (dead letter writes are at least once; a record that failed again comes back);
4. reads them again in chunks of at most ``chunk_size`` letters (:func:`plan_chunk` sorts each letter):

   * passed over: dealt with by an earlier chunk or run, or superseded;
   * kept for a later run: filtered out, replayed ``max_replays`` times already, or written without
     context headers (its original coordinates are unknown);
   * dropped for good: the last two when the user says so (``skip``: :data:`SKIP_OVER_LIMIT`,
     :data:`SKIP_NO_CONTEXT`);
   * delivered: the rest.

5. per chunk, marks the letters to deliver as in flight, delivers them, then stores them (with the dropped
   and superseded ones) as dealt with. The stored position moves only up to the first letter not dealt
   with; letters dealt with past a kept one are stored as ranges (see :mod:`.progress`). So a kept letter
   is read again by every later run until one delivers or drops it, and a letter dealt with is never
   delivered again.

A run that stops between delivering a chunk and storing it leaves the chunk in flight: the next run hands
those letters over again (an at-least-once sink may then hold them twice, as after any crash of the
connector itself), telling an exactly-once sink that it may hold them already.

Exactly-once sinks: a sink that keeps its own offsets and takes replays (the Delta and S3 sinks) implements
:class:`~connect_spark.api.replay.ReplayAwareTask`. It is told each batch before it opens (it then does
not seek), says after ``open`` up to where it holds the dead letter topic, and the letters of an in-flight
batch below that are left out; it stores the batch's end atomically with the replayed records. A sink
that seeks to offsets of its own when its partitions open without implementing it would drop the
replayed records as already written: the replay then stops with an error before delivering anything.

Only one chunk's letters are in the driver's memory at a time, plus a numeric index of the backlog for the
superseded scan and the stored ranges. The connector's own committed offsets are never touched. Letters of
one record in two dead letter partitions are told apart only while both are read: the dead letter queue
this runtime creates has one partition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.api.replay import DeadLetterBatch, ReplayAwareTask
from connect_spark.dlq_replay.letters import (
    REPLAY_COUNT_HEADER,
    DeadLetter,
    LetterFilter,
    end_offsets,
    read_chunks,
    superseded_letters,
)
from connect_spark.dlq_replay.progress import ReplayProgress
from connect_spark.dlq_replay.replay_log import ReplayLog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["ReplayResult", "ChunkPlan", "replay_dead_letters", "plan_chunk", "deliver_letters", "position_name",
           "SKIP_OVER_LIMIT", "SKIP_NO_CONTEXT", "SKIP_CHOICES", "CHUNK_SIZE"]

log = logging.getLogger(__name__)

SKIP_OVER_LIMIT = "over-limit"
"""``skip`` choice: drop for good the letters replayed ``max_replays`` times already."""
SKIP_NO_CONTEXT = "no-context"
"""``skip`` choice: drop for good the letters written without context headers (they cannot be replayed)."""
SKIP_CHOICES = (SKIP_OVER_LIMIT, SKIP_NO_CONTEXT)

CHUNK_SIZE = 10_000
"""Letters read, delivered and committed at a time, by default."""


def position_name(connector: str) -> str:
    """The offset-store name under which replays before the stored progress kept their position (read once,
    when a connector has no stored progress yet)."""
    return f"{connector}.dlq-replay"


@dataclass
class ReplayResult:
    """What a run did (or, for a dry run, would do) with each letter it read."""

    replayed: int = 0  # handed to the connector
    groups: dict[tuple[str, str], int] = field(default_factory=dict)  # (error class, stage) -> letters chosen
    filtered_out: int = 0  # kept for a later run: the filter did not choose them
    over_limit: int = 0  # kept for a later run: replayed max_replays times already
    unrestorable: int = 0  # kept for a later run: written without context headers
    dropped_over_limit: int = 0  # dropped for good (skip over-limit)
    dropped_unrestorable: int = 0  # dropped for good (skip no-context)
    superseded: int = 0  # a newer letter carries the same original record
    held: int = 0  # chosen, but the sink holds them already (an earlier run stopped before storing its progress)

    def report(self, dry_run: bool) -> str:
        count = sum(self.groups.values()) if dry_run else self.replayed
        lines = [f"{'would replay' if dry_run else 'replayed'} {count} dead letter(s)"]
        for (error, stage), count in sorted(self.groups.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {count:6d}  {error}  (stage {stage})")
        lines.append(f"kept for a later replay: {self.filtered_out} filtered out, {self.over_limit} over the replay "
                     f"limit, {self.unrestorable} without context headers")
        lines.append(f"{'would drop' if dry_run else 'dropped'} for good (--skip): {self.dropped_over_limit} over "
                     f"the replay limit, {self.dropped_unrestorable} without context headers")
        lines.append(f"passed over: {self.superseded} superseded by a newer letter of the same record"
                     + ("" if dry_run else f", {self.held} already in the sink"))
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The counts as the REST answer shows them."""
        return {
            "replayed": self.replayed,
            "groups": [{"error_class": error, "stage": stage, "count": count}
                       for (error, stage), count in sorted(self.groups.items())],
            "kept": {"filtered_out": self.filtered_out, "over_limit": self.over_limit,
                     "unrestorable": self.unrestorable},
            "dropped": {"over_limit": self.dropped_over_limit, "unrestorable": self.dropped_unrestorable},
            "passed_over": {"superseded": self.superseded, "already_in_sink": self.held},
        }


@dataclass
class ChunkPlan:
    """What a run does with one chunk's letters (:func:`plan_chunk`)."""

    deliver: list[DeadLetter] = field(default_factory=list)
    drop: list[DeadLetter] = field(default_factory=list)  # dropped on the user's order, or superseded


def check_options(max_replays: int, skip: Iterable[str], chunk_size: int) -> None:
    """Raise :class:`~connect_spark.api.errors.ConfigException` naming the option for a value it does not allow."""
    if isinstance(max_replays, bool) or not isinstance(max_replays, int) or max_replays < 0:
        raise ConfigException("an integer >= 0 is expected", "max_replays", max_replays)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ConfigException("an integer >= 1 is expected", "chunk_size", chunk_size)
    unknown = sorted(set(skip) - set(SKIP_CHOICES))
    if unknown:
        raise ConfigException(f"allowed: {', '.join(SKIP_CHOICES)}", "skip", ",".join(unknown))


def replay_dead_letters(spark: "SparkSession | None", worker: "WorkerConfig", connector: "ConnectorConfig",
                        letter_filter: LetterFilter = LetterFilter(), dry_run: bool = False,
                        max_replays: int = 3, skip: Iterable[str] = (), chunk_size: int = CHUNK_SIZE,
                        replay_log: ReplayLog | None = None) -> ReplayResult:
    """Replay (or, with ``dry_run``, list) the connector's dead letters; see the module docstring.

    ``skip``: which kept letters to drop for good (:data:`SKIP_CHOICES`). ``replay_log``: where the lease and
    progress are kept, already entered by the caller (who may have claimed the lease before starting Spark);
    by default the worker's config topic, opened and closed here.

    Raises:
        ReplayInProgressError: another replay of the connector is running.
        ConfigException: an option has a value it does not allow, or the connector has no dead letter queue.
    """
    skip = frozenset(skip)
    check_options(max_replays, skip, chunk_size)
    topic = connector.dlq_topic
    if not topic:
        raise ConfigException("the connector has no dead letter queue to replay from",
                              "errors.deadletterqueue.topic.name", "")
    with nullcontext(replay_log) if replay_log else ReplayLog.for_worker(worker, connector.name) as lease_and_progress:
        if not dry_run:
            lease_and_progress.claim()
        progress = lease_and_progress.progress()
        if progress is None or progress.dlq_topic != topic:
            progress = ReplayProgress(topic, _earlier_position(worker, connector))
        consumer_kwargs = _consumer_kwargs(worker, connector)
        ends = end_offsets(consumer_kwargs, topic)
        superseded = superseded_letters(read_chunks(consumer_kwargs, topic, progress.position, ends, chunk_size))
        result = ReplayResult()
        groups: Counter[tuple[str, str]] = Counter()
        for chunk in read_chunks(consumer_kwargs, topic, progress.position, ends, chunk_size):
            plan = plan_chunk(chunk, progress, superseded, letter_filter, max_replays, skip, result)
            groups.update((x.error_class, x.stage) for x in plan.deliver)
            if dry_run or not (plan.deliver or plan.drop):
                continue
            again = [x for x in plan.deliver if progress.maybe_in_sink(x.dlq_partition, x.dlq_offset)]
            fresh = [x for x in plan.deliver if not progress.maybe_in_sink(x.dlq_partition, x.dlq_offset)]
            if plan.deliver:
                assert spark is not None, "a replay needs a SparkSession"
                progress.handing_over(_dlq_offsets(plan.deliver))
                lease_and_progress.write_progress(progress)
            for letters, maybe_held in ((again, True), (fresh, False)):
                if letters:
                    handed = deliver_letters(spark, worker, connector, letters, _batch_ends(letters), maybe_held)
                    result.replayed += handed
                    result.held += len(letters) - handed
            progress.dealt_with(_dlq_offsets(plan.deliver + plan.drop))
            lease_and_progress.write_progress(progress)
        result.groups = dict(groups)
        return result


def plan_chunk(chunk: list[DeadLetter], progress: ReplayProgress, superseded: set[tuple[int, int]],
               letter_filter: LetterFilter, max_replays: int, skip: frozenset[str], result: ReplayResult) -> ChunkPlan:
    """Sort one chunk's letters (see the module docstring), counting them in ``result``.

    ``superseded``: the letters a newer letter of the same record supersedes (:func:`superseded_letters`).
    """
    plan = ChunkPlan()
    for letter in chunk:
        if progress.is_done(letter.dlq_partition, letter.dlq_offset):
            continue
        if not letter.restorable:
            if SKIP_NO_CONTEXT in skip:
                result.dropped_unrestorable += 1
                plan.drop.append(letter)
            else:
                result.unrestorable += 1
        elif (letter.dlq_partition, letter.dlq_offset) in superseded:
            result.superseded += 1
            plan.drop.append(letter)
        elif not letter_filter.matches(letter):
            result.filtered_out += 1
        elif letter.replays >= max_replays:
            if SKIP_OVER_LIMIT in skip:
                result.dropped_over_limit += 1
                plan.drop.append(letter)
            else:
                result.over_limit += 1
        else:
            plan.deliver.append(letter)
    return plan


def _dlq_offsets(letters: list[DeadLetter]) -> dict[int, list[int]]:
    offsets: dict[int, list[int]] = {}
    for x in letters:
        offsets.setdefault(x.dlq_partition, []).append(x.dlq_offset)
    return offsets


def _batch_ends(letters: list[DeadLetter]) -> dict[int, int]:
    """Per dead letter partition, the offset after the batch's last letter."""
    ends: dict[int, int] = {}
    for x in letters:
        ends[x.dlq_partition] = max(ends.get(x.dlq_partition, 0), x.dlq_offset + 1)
    return ends


def _earlier_position(worker: "WorkerConfig", connector: "ConnectorConfig") -> dict[int, int]:
    """The position a replay stored in the worker's offset store before replays kept their progress
    (``{}`` when none did)."""
    from connect_spark.storage.owner import build_offset_store

    with build_offset_store(worker) as store:
        stored = store.read(position_name(connector.name))
    return {tp.partition: off for tp, off in stored.items() if tp.topic == connector.dlq_topic and off is not None}


def _consumer_kwargs(worker: "WorkerConfig", connector: "ConnectorConfig") -> dict[str, Any]:
    from kafka import KafkaConsumer

    from connect_spark.kafka.clients import consumer_settings, kafka_client_kwargs

    kwargs = kafka_client_kwargs(consumer_settings(worker, connector), KafkaConsumer)
    kwargs.setdefault("bootstrap_servers", worker.bootstrap_servers)
    return kwargs


def _rows(letters: list[DeadLetter]) -> Any:
    """The letters as the runtime's raw Kafka columns (``RAW_ARROW_SCHEMA``, what
    :func:`connect_spark.streaming.source.raw_columns` delivers), ordered by original coordinates."""
    import pyarrow as pa

    from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA

    letters = sorted(letters, key=lambda x: (x.topic, x.partition, x.offset))
    columns = {
        "topic": [x.topic for x in letters], "partition": [x.partition for x in letters],
        "offset": [x.offset for x in letters], "timestamp_ms": [x.timestamp_ms for x in letters],
        "timestamp_type": [0] * len(letters), "key": [x.key for x in letters], "value": [x.value for x in letters],
        "headers": [[{"key": k, "value": v} for k, v in x.headers]
                    + [{"key": REPLAY_COUNT_HEADER, "value": str(x.replays + 1).encode()}] for x in letters],
    }
    return pa.table(columns, schema=RAW_ARROW_SCHEMA)


def deliver_letters(spark: "SparkSession", worker: "WorkerConfig", connector: "ConnectorConfig",
                    letters: list[DeadLetter], ends: Mapping[int, int], earlier_run_unfinished: bool = True) -> int:
    """Deliver ``letters`` (one chunk's, or part of it; ``ends``: per dead letter partition, the offset after the
    last of them) as one batch through the connector's processor (driver execution), leaving out those its
    sink already holds; returns how many were handed over. Nothing is committed for the connector, and the
    replay's progress does not move (:func:`replay_dead_letters` stores it afterwards).
    ``earlier_run_unfinished`` tells an exactly-once sink whether it must look for letters it holds (they were
    in flight when an earlier run stopped).

    1. the connector's tasks are built; a :class:`~connect_spark.api.replay.ReplayAwareTask` learns the
       batch (``begin_replay``);
    2. the processor opens the tasks at the letters' first original offsets; a task that seeks elsewhere
       is refused (it would drop the letters);
    3. the letters below every replay-aware task's ``replay_position`` are left out;
    4. the rest are processed as one batch (converters, transforms, ``put``);
    5. the processor closes, then ``end_replay``.
    """
    from connect_spark import plugins
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.runtime.processors.base import ProcessorSetup, choose_processor

    # 1.
    connector_cls = plugins.resolve("connector", connector.connector_class, key="connector.class")
    instance = connector_cls()
    instance.start({k: str(v) for k, v in connector.resolved.items()})
    try:
        task_configs = [dict(c) for c in instance.task_configs(connector.tasks_max)[: connector.tasks_max]]
        task_class = instance.task_class()
    finally:
        instance.stop()
    for task_config in task_configs:
        task_config.setdefault("topics", ",".join(connector.topics) if connector.topics else "")
    stopping = threading.Event()
    # On the driver whatever the connector's task.execution.mode: the replay talks to the task instances
    # (ReplayAwareTask) and must see where ``open`` seeks; executor-mode tasks live out of its reach.
    on_driver = ConnectorConfig({**connector.resolved, "task.execution.mode": "driver"})
    processor = choose_processor(ProcessorSetup(
        spark=spark, connector=on_driver, worker=worker, task_class=task_class, task_configs=task_configs,
        client_config={"bootstrap.servers": worker.bootstrap_servers}, include_headers=True,
        commit=lambda offsets: None, wait=lambda seconds: not stopping.wait(seconds), clock=time.monotonic))
    aware = [task for task in processor.resident_tasks() if isinstance(task, ReplayAwareTask)]
    batch = DeadLetterBatch(connector.dlq_topic or "", dict(ends),
                            {(x.topic, x.partition, x.offset): (x.dlq_partition, x.dlq_offset) for x in letters},
                            earlier_run_unfinished)
    for task in aware:
        task.begin_replay(batch)
    firsts: dict[TopicPartition, int] = {}
    for x in letters:
        tp = TopicPartition(x.topic, x.partition)  # type: ignore[arg-type]
        firsts[tp] = min(firsts.get(tp, x.offset), x.offset)  # type: ignore[type-var]
    try:
        # 2.
        started_at = processor.open(firsts)
        moved = {tp: off for tp, off in started_at.items() if firsts.get(tp) != off}
        if moved:  # the sink seeks to offsets it stores itself and drops records below them as already written
            raise ConnectException(
                f"Connector {connector.name}: its sink keeps its own offsets and moved "
                f"{', '.join(f'{tp.topic}[{tp.partition}]@{off}' for tp, off in sorted(moved.items()))} when opened; "
                "it would drop the replayed records as already written (it does not take replays), so nothing was "
                "replayed and the replay position did not move")
        # 3.
        positions = [task.replay_position() for task in aware]
        pending = [x for x in letters
                   if not positions or any(x.dlq_offset >= held.get(x.dlq_partition, 0) for held in positions)]
        if len(pending) < len(letters):
            log.info("%s: the sink holds %d of the dead letters already (an earlier replay stopped before storing "
                     "its position)", connector.name, len(letters) - len(pending))
        # 4.
        if pending:
            log.info("%s: replaying %d dead letter(s) from %d partition(s)", connector.name, len(pending),
                     len({(x.topic, x.partition) for x in pending}))
            processor.process(spark.createDataFrame(_rows(pending)), 0)
        return len(pending)
    finally:
        # 5.
        try:
            processor.close()
        finally:
            for task in aware:
                task.end_replay()
