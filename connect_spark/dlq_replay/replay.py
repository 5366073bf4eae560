"""Replaying dead letters through the connector's normal path: converters, transforms, ``put``.

Called by ``connect-spark dlq replay`` (:func:`replay_dead_letters`). The chosen letters (see
:class:`~connect_spark.dlq_replay.letters.LetterFilter`) become one batch of rows shaped as Spark's Kafka
source delivers them, with each record's original topic, partition, offset, timestamp, key and headers,
plus ``__connect.replay.count``; the connector's own processor (driver execution) delivers that batch as
it delivers a micro-batch. A record that fails again goes where the connector's ``errors.*`` say: with the
dead letter queue, back to it carrying its replay count, and it is not replayed past ``max_replays``.

A sink that keeps its own offsets and seeks to them when its partitions open (the Delta sink's
exactly-once) would drop replayed records as already written: the replay then stops with an error
before delivering anything, and its position does not move.

The replay's position in the dead letter topic is committed to the worker's offset store under
``<connector>.dlq-replay`` after the batch was delivered, so a second run starts after it. The
connector's own committed offsets are never touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.api.records import TopicPartition
from connect_spark.dlq_replay.letters import REPLAY_COUNT_HEADER, DeadLetter, LetterFilter, read_dead_letters

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["ReplayResult", "replay_dead_letters", "position_name"]

log = logging.getLogger(__name__)


def position_name(connector: str) -> str:
    """The offset-store name the replay of ``connector`` keeps its position under."""
    return f"{connector}.dlq-replay"


@dataclass
class ReplayResult:
    """What a run did (or, for a dry run, would do)."""

    replayed: int = 0
    groups: dict[tuple[str, str], int] = field(default_factory=dict)  # (error class, stage) -> letters chosen
    filtered_out: int = 0
    over_limit: int = 0  # replayed max_replays times already
    unrestorable: int = 0  # written without context headers: the original coordinates are unknown

    def report(self, dry_run: bool) -> str:
        lines = [f"{'would replay' if dry_run else 'replayed'} {sum(self.groups.values())} dead letter(s)"]
        for (error, stage), count in sorted(self.groups.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {count:6d}  {error}  (stage {stage})")
        lines.append(f"skipped: {self.filtered_out} filtered out, {self.over_limit} over the replay limit, "
                     f"{self.unrestorable} without context headers")
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
        stored = store.read(position_name(connector.name))
        start = {tp.partition: off for tp, off in stored.items() if tp.topic == topic}
        letters, ends = read_dead_letters(_consumer_kwargs(worker, connector), topic, start)
        result = ReplayResult()
        chosen: list[DeadLetter] = []
        for letter in letters:
            if not letter.restorable:
                result.unrestorable += 1
            elif not letter_filter.matches(letter):
                result.filtered_out += 1
            elif letter.replays >= max_replays:
                result.over_limit += 1
            else:
                chosen.append(letter)
        result.groups = dict(Counter((letter.error_class, letter.stage) for letter in chosen))
        if dry_run:
            return result
        if chosen:
            assert spark is not None, "a replay needs a SparkSession"
            _deliver(spark, worker, connector, chosen)
        result.replayed = len(chosen)
        store.write(position_name(connector.name), {TopicPartition(topic, p): off for p, off in ends.items()})
        return result
    finally:
        store.stop()


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


def _deliver(spark: "SparkSession", worker: "WorkerConfig", connector: "ConnectorConfig",
             letters: list[DeadLetter]) -> None:
    """One batch through the connector's processor (driver execution); nothing is committed for the connector."""
    from connect_spark import plugins
    from connect_spark.runtime.processors.base import ProcessorSetup, choose_processor

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
    table = _rows(letters)
    stopping = threading.Event()
    processor = choose_processor(ProcessorSetup(
        spark=spark, connector=connector, worker=worker, task_class=task_class, task_configs=task_configs,
        client_config={"bootstrap.servers": worker.bootstrap_servers}, include_headers=True,
        commit=lambda offsets: None, wait=lambda seconds: not stopping.wait(seconds), clock=time.monotonic))
    firsts: dict[TopicPartition, int] = {}
    for x in letters:
        tp = TopicPartition(x.topic, x.partition)  # type: ignore[arg-type]
        firsts[tp] = min(firsts.get(tp, x.offset), x.offset)  # type: ignore[type-var]
    started_at = processor.open(firsts)
    try:
        moved = {tp: off for tp, off in started_at.items() if firsts.get(tp) != off}
        if moved:  # the sink seeks to offsets it stores itself and drops records below them as already written
            raise ConnectException(
                f"Connector {connector.name}: its sink keeps its own offsets and moved "
                f"{', '.join(f'{tp.topic}[{tp.partition}]@{off}' for tp, off in sorted(moved.items()))} when opened; "
                "it would drop the replayed records as already written, so nothing was replayed and the replay "
                "position did not move")
        log.info("%s: replaying %d dead letter(s) from %d partition(s)", connector.name, len(letters), len(firsts))
        processor.process(spark.createDataFrame(table), 0)
    finally:
        processor.close()


