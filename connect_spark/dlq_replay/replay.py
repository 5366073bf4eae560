"""Replaying dead letters through the connector's normal path: converters, transforms, ``put``.

Called by ``connect-spark dlq replay`` (:func:`replay_dead_letters`). The chosen letters (see
:class:`~connect_spark.dlq_replay.letters.LetterFilter`) become one batch of rows shaped as Spark's Kafka
source delivers them, with each record's original topic, partition, offset, timestamp, key and headers,
plus ``__connect.replay.count``; the connector's own processor (driver execution) delivers that batch as
it delivers a micro-batch. A record that fails again goes where the connector's ``errors.*`` say: with the
dead letter queue, back to it carrying its replay count, and it is not replayed past ``max_replays``.

Letters are chosen (:func:`choose_letters`) among those with context headers: when several letters
carry the same original record (dead letter writes are at least once; a record that failed again
comes back), only the newest counts; then the filter and the replay limit apply.

The replay's position in the dead letter topic is committed to the worker's offset store under
``<connector>.dlq-replay`` after the batch was delivered, so a second run starts after it; while a run
delivers, a mark under ``<connector>.dlq-replay.started`` says it is on (:func:`begin_run`,
:func:`finish_run`). The connector's own committed offsets are never touched.

Exactly-once sinks: a sink that stores its offsets with its data (the Delta sink) implements
:class:`~connect_spark.api.replay.ReplayAwareTask`. It is told the batch before it opens (it then
does not seek), says after ``open`` up to where it holds the dead letter topic, and the letters below
that are left out; it stores the batch's end position atomically with the replayed records. So a run
that stopped between the sink's commit and the offset store write writes nothing twice when run
again (:func:`begin_run` and :func:`deliver_letters` are that first half); the sink looks for what
it holds only when the mark of such a run is found. A sink that seeks to offsets of its own when its
partitions open without implementing it would drop the replayed records as already written: the
replay then stops with an error before delivering anything, and its position does not move.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.api.replay import DeadLetterBatch, ReplayAwareTask
from connect_spark.dlq_replay.letters import REPLAY_COUNT_HEADER, DeadLetter, LetterFilter, read_dead_letters

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["ReplayResult", "replay_dead_letters", "letters_after_position", "choose_letters", "begin_run",
           "deliver_letters", "finish_run", "position_name", "started_name"]

log = logging.getLogger(__name__)


def position_name(connector: str) -> str:
    """The offset-store name the replay of ``connector`` keeps its position under."""
    return f"{connector}.dlq-replay"


def started_name(connector: str) -> str:
    """The offset-store name of the mark a replay run of ``connector`` keeps while it is on (see
    :func:`begin_run`)."""
    return f"{connector}.dlq-replay.started"


@dataclass
class ReplayResult:
    """What a run did (or, for a dry run, would do)."""

    replayed: int = 0  # handed to the connector
    groups: dict[tuple[str, str], int] = field(default_factory=dict)  # (error class, stage) -> letters chosen
    filtered_out: int = 0
    over_limit: int = 0  # replayed max_replays times already
    unrestorable: int = 0  # written without context headers: the original coordinates are unknown
    superseded: int = 0  # a newer letter carries the same original record
    held: int = 0  # chosen, but the sink holds them already (an earlier run stopped before storing its position)

    def report(self, dry_run: bool) -> str:
        count = sum(self.groups.values()) if dry_run else self.replayed
        lines = [f"{'would replay' if dry_run else 'replayed'} {count} dead letter(s)"]
        for (error, stage), count in sorted(self.groups.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {count:6d}  {error}  (stage {stage})")
        lines.append(f"skipped: {self.filtered_out} filtered out, {self.over_limit} over the replay limit, "
                     f"{self.unrestorable} without context headers, {self.superseded} superseded by a newer "
                     f"letter of the same record" + ("" if dry_run else f", {self.held} already in the sink"))
        return "\n".join(lines)


def replay_dead_letters(spark: "SparkSession | None", worker: "WorkerConfig", connector: "ConnectorConfig",
                        letter_filter: LetterFilter = LetterFilter(), dry_run: bool = False,
                        max_replays: int = 3) -> ReplayResult:
    """Replay (or, with ``dry_run``, list) the connector's dead letters; see the module docstring."""
    from connect_spark.runtime.worker.standalone import build_offset_store

    topic = connector.dlq_topic
    if not topic:
        raise ConfigException("the connector has no dead letter queue to replay from",
                              "errors.deadletterqueue.topic.name", "")
    store = build_offset_store(worker)
    store.start()
    try:
        letters, ends = letters_after_position(worker, connector, store)
        result, chosen = choose_letters(letters, letter_filter, max_replays)
        if dry_run:
            return result
        if chosen:
            assert spark is not None, "a replay needs a SparkSession"
            unfinished = begin_run(store, connector, ends)
            result.replayed = deliver_letters(spark, worker, connector, chosen, ends, unfinished)
            result.held = len(chosen) - result.replayed
        finish_run(store, connector, ends)
        return result
    finally:
        store.stop()


def letters_after_position(worker: "WorkerConfig", connector: "ConnectorConfig",
                           store: "OffsetStore") -> tuple[list[DeadLetter], dict[int, int]]:
    """The connector's dead letters from the replay's position in ``store`` (a started offset store) to the
    topic's current end, and that end (dead letter partition → next offset)."""
    topic = connector.dlq_topic or ""
    stored = store.read(position_name(connector.name))
    start = {tp.partition: off for tp, off in stored.items() if tp.topic == topic}
    return read_dead_letters(_consumer_kwargs(worker, connector), topic, start)


def begin_run(store: "OffsetStore", connector: "ConnectorConfig", ends: Mapping[int, int]) -> bool:
    """Mark a run as started in ``store`` before it delivers anything; True when an earlier run's mark is still
    there (it stopped before :func:`finish_run`: its sink may hold letters past the stored position)."""
    unfinished = bool(store.read(started_name(connector.name)))
    store.write(started_name(connector.name), _partitions(connector, ends))
    return unfinished


def finish_run(store: "OffsetStore", connector: "ConnectorConfig", ends: Mapping[int, int]) -> None:
    """Store the run's position (the dead letter topic's ``ends`` it read up to), then clear the run's mark."""
    store.write(position_name(connector.name), _partitions(connector, ends))
    started = store.read(started_name(connector.name))
    if started:
        store.write(started_name(connector.name), {tp: None for tp in started})


def _partitions(connector: "ConnectorConfig", ends: Mapping[int, int]) -> dict[TopicPartition, int | None]:
    return {TopicPartition(connector.dlq_topic or "", p): off for p, off in ends.items()}


def choose_letters(letters: list[DeadLetter], letter_filter: LetterFilter,
                   max_replays: int) -> tuple[ReplayResult, list[DeadLetter]]:
    """The letters to replay, and the counts of those left out (see the module docstring).

    Of several letters carrying the same original record the one replayed most often (then the latest
    in its dead letter partition) counts: a record that failed again in an earlier run comes back with a
    higher replay count, and is the one that run's sink has not written.
    """
    result = ReplayResult()
    newest: dict[tuple[Any, Any, Any], DeadLetter] = {}
    for letter in letters:
        if not letter.restorable:
            result.unrestorable += 1
            continue
        coordinates = (letter.topic, letter.partition, letter.offset)
        known = newest.get(coordinates)
        if known is not None:
            result.superseded += 1
            if (known.replays, known.dlq_offset) > (letter.replays, letter.dlq_offset):
                continue
        newest[coordinates] = letter
    chosen: list[DeadLetter] = []
    for letter in newest.values():
        if not letter_filter.matches(letter):
            result.filtered_out += 1
        elif letter.replays >= max_replays:
            result.over_limit += 1
        else:
            chosen.append(letter)
    result.groups = dict(Counter((letter.error_class, letter.stage) for letter in chosen))
    return result, chosen


def _consumer_kwargs(worker: "WorkerConfig", connector: "ConnectorConfig") -> dict[str, Any]:
    from kafka import KafkaConsumer

    from connect_spark.kafka.clients import kafka_client_kwargs

    settings = {**worker.kafka_client_config(), **worker.consumer_config(), **connector.consumer_overrides}
    kwargs = kafka_client_kwargs(settings, KafkaConsumer)
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
    """Deliver ``letters`` (read up to ``ends``, dead letter partition → next offset) as one batch through the
    connector's processor (driver execution), leaving out those its sink already holds; returns how many
    were handed over. Nothing is committed for the connector, and the replay's position in the worker's
    offset store does not move (:func:`replay_dead_letters` writes it afterwards). ``earlier_run_unfinished``
    (see :func:`begin_run`) tells an exactly-once sink whether it must look for letters it holds.

    1. the connector's tasks are built; a :class:`~connect_spark.api.replay.ReplayAwareTask` learns the
       batch (``begin_replay``);
    2. the processor opens the tasks at the letters' first original offsets; a task that seeks elsewhere
       is refused (it would drop the letters);
    3. the letters below every replay-aware task's ``replay_position`` are left out;
    4. the rest are processed as one batch (converters, transforms, ``put``);
    5. the processor closes, then ``end_replay``.
    """
    from connect_spark import plugins
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
    processor = choose_processor(ProcessorSetup(
        spark=spark, connector=connector, worker=worker, task_class=task_class, task_configs=task_configs,
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
