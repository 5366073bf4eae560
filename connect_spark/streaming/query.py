"""A connector's streaming query: Spark's Kafka source → ``foreachBatch``, one checkpoint generation per start.

Spark's checkpoint only records how far a query has *read*; connect_spark's offset store records how
far the tasks said records are *safe*, and is the single source of truth. So every start of the query
— the connector's start, a resume, a rewind — is a new *generation*: a fresh checkpoint folder
``<checkpoint.location>/<name>/gen-<millis>-<n>`` (older generations are deleted) whose
``startingOffsets`` are concrete positions chosen by the runner. A crash, a deleted checkpoint or a
kill -9 therefore re-delivers exactly ``[committed, position)``.

Called by :class:`connect_spark.runtime.worker.connector_runner.ConnectorRunner`: :meth:`QueryGenerations.start`
at start, resume and after a rewind; :meth:`QueryGenerations.stop` between batches.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.streaming.offset_log import batch_ranges
from connect_spark.streaming.source import kafka_source_options, raw_columns, read_kafka_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["QueryGenerations", "query_name"]

log = logging.getLogger(__name__)


def query_name(connector_name: str) -> str:
    """The streaming query's name (what the Spark UI and the progress listener know it by)."""
    return f"connect-spark-{connector_name}"


class QueryGenerations:
    """Starts and stops one connector's query generations.

    Args:
        spark: the session the query runs in.
        connector_name: the connector's ``name``.
        checkpoint_location: the worker's ``checkpoint.location``.
        client_config: Kafka client settings with Kafka's names (passed as ``kafka.*`` options).
        topics, topics_regex: the subscription (exactly one is set).
        max_offsets_per_trigger: bound on records per micro-batch, or None for no bound.
        include_headers: whether record headers are read.
        trigger_ms: the processing-time trigger; ``None`` for AvailableNow (drain and stop).
    """

    def __init__(self, spark: "SparkSession", connector_name: str, checkpoint_location: str,
                 client_config: Mapping[str, Any], topics: list[str] | None, topics_regex: str | None,
                 max_offsets_per_trigger: int | None, include_headers: bool, trigger_ms: int | None) -> None:
        self.spark = spark
        self.connector_name = connector_name
        self.root = Path(checkpoint_location) / connector_name
        self.client_config = dict(client_config)
        self.topics = topics
        self.topics_regex = topics_regex
        self.max_offsets_per_trigger = max_offsets_per_trigger
        self.include_headers = include_headers
        self.trigger_ms = trigger_ms
        self.generation = 0
        self.query: "StreamingQuery | None" = None
        self.checkpoint: Path | None = None  # the running generation's folder and starting positions
        self.started_from: dict[TopicPartition, int] = {}

    def start(self, positions: Mapping[TopicPartition, int],
              on_batch: Callable[["DataFrame", int], None]) -> "StreamingQuery":
        """Start a new generation reading from ``positions``; Spark calls ``on_batch`` per micro-batch."""
        checkpoint = self.next_checkpoint()
        options = kafka_source_options(self.client_config, self.topics, self.topics_regex, positions,
                                       self.max_offsets_per_trigger, include_headers=self.include_headers)
        stream = raw_columns(read_kafka_stream(self.spark, options))
        writer = (
            stream.writeStream.queryName(query_name(self.connector_name))
            .foreachBatch(on_batch)
            .option("checkpointLocation", str(checkpoint))
        )
        if self.trigger_ms is None:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.trigger_ms} milliseconds")
        self.checkpoint, self.started_from = checkpoint, dict(positions)
        self.query = writer.start()
        log.info("%s: query generation %d started (checkpoint %s)", self.connector_name, self.generation, checkpoint)
        return self.query

    def next_checkpoint(self) -> Path:
        """The folder of the next generation's checkpoint; older generations' folders are deleted."""
        self.generation += 1
        checkpoint = self.root / f"gen-{int(time.time() * 1000)}-{self.generation}"
        if self.root.exists():
            for old in self.root.iterdir():
                shutil.rmtree(old, ignore_errors=True)
        return checkpoint

    def batch_ranges(self, batch_id: int) -> dict[TopicPartition, tuple[int, int]] | None:
        """First and next offset per topic-partition of the running generation's batch ``batch_id``, from
        its offset log (called by processors inside ``foreachBatch``); ``None`` when the log cannot say."""
        if self.checkpoint is None:
            return None
        return batch_ranges(self.checkpoint, batch_id, self.started_from)

    def stop(self, forget: bool = False) -> None:
        """Stop the running generation (the caller makes sure no batch is in flight).

        The stopped query stays readable (its last progress, its status) unless ``forget``.
        """
        query = self.query
        if forget:
            self.query = None
        if query is not None:
            try:
                self._between_batches(query)
                query.stop()
            except Exception as e:
                log.warning("%s: stopping the query raised %r", self.connector_name, e)

    def _between_batches(self, query: "StreamingQuery", timeout: float = 120.0) -> None:
        """On Spark Connect, wait until no trigger is active before stopping.

        There the ``foreachBatch`` function runs in the server's Python process, out of the runner's
        lock, and ``stop()`` would interrupt a batch between its ``put`` and its commit (the records
        would be delivered again on the next start). On a classic session the runner's lock already
        keeps stops between batches.
        """
        from connect_spark.spark_session import is_remote_session

        if not is_remote_session(self.spark):
            return
        deadline = time.monotonic() + timeout
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.1)

    def last_progress(self) -> dict[str, Any] | None:
        """Spark's progress of the last batch, or None."""
        if self.query is None:
            return None
        try:
            return self.query.lastProgress
        except Exception:
            return None
