"""A connector's real-time query: Spark's Kafka source → ``foreach`` in Spark 4.2's real-time mode.

``task.execution.mode=realtime`` runs a connector's record (or Arrow) tasks inside a Python ``ForeachWriter``
(:class:`connect_spark.runtime.realtime.writer.RealtimeWriter`) of a real-time query: long batches of
``trigger`` length, one Spark task per Kafka partition reading for the whole batch and handing each record to
the writer as it arrives (measured in ``docs/performance.md``, "Real-time mode"). Each start of the query is
a new checkpoint generation starting at the offsets the runner chose, as :class:`QueryGenerations` does for
micro-batches; between starts Spark's own checkpoint carries the read position from batch to batch, and the
writer makes up for a task whose ``pre_commit`` lagged at a batch end (it re-reads from the committed offset).

Called by :class:`connect_spark.runtime.worker.connector_runner.ConnectorRunner` through the same interface as
:class:`QueryGenerations` (the processor, :class:`connect_spark.runtime.realtime.processor.RealtimeProcessor`,
hands it the writer where a micro-batch query gets its ``foreachBatch`` function).

**A clean stop ends at a batch end.** ``StreamingQuery.stop()`` kills the running batch's tasks, and with them
the Python workers hosting the partitions' tasks: nothing runs their final commit, so what they put since the
last commit tick would be delivered again on the next start. At a batch end each partition's writer closes
normally and runs the final ``pre_commit`` → ``close`` → commit before Spark counts the batch done. So
:meth:`RealtimeQueryGenerations.stop` waits for the running batch to end (its progress is reported), at most
:data:`STOP_WAIT_BATCHES` batches plus :data:`STOP_WAIT_EXTRA_S`, and stops the query right after. The next
batch has then only just started: only records its tasks put in that moment are delivered again.

Session settings (:func:`realtime_session_conf`, applied where connect_spark builds the session; a session of
your own needs them too):

* ``spark.sql.streaming.realTimeMode.minBatchDuration`` lowered to the batch length when the ``trigger`` is
  shorter than Spark's 5 s minimum (a SQL setting: set on the session as the query starts);
* ``spark.buffer.size`` 1024: the JVM hands rows to the Python writer only when this buffer fills or the batch
  ends (64 KiB by default: records waited most of a batch). It is read once per application, by every Python
  worker, so it is set when the session is built.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.streaming.query import QueryGenerations, query_name
from connect_spark.streaming.source import kafka_source_options, raw_columns, read_kafka_stream

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["RealtimeQueryGenerations", "realtime_session_conf", "MIN_BATCH_DURATION_KEY", "BUFFER_SIZE_KEY",
           "REALTIME_BUFFER_SIZE", "STOP_WAIT_BATCHES", "STOP_WAIT_EXTRA_S"]

log = logging.getLogger(__name__)

MIN_BATCH_DURATION_KEY = "spark.sql.streaming.realTimeMode.minBatchDuration"
BUFFER_SIZE_KEY = "spark.buffer.size"
#: ``spark.buffer.size`` of a session running real-time connectors, unless the worker sets it.
REALTIME_BUFFER_SIZE = "1024"
#: A clean stop waits for the running batch to end for at most this many batch lengths ...
STOP_WAIT_BATCHES = 2
#: ... plus this many seconds (a batch end's commits, Spark's bookkeeping); then it stops the query anyway.
STOP_WAIT_EXTRA_S = 10.0
#: How often a stopping query's progress is looked at.
STOP_POLL_S = 0.01


def realtime_session_conf(worker: "WorkerConfig", connectors: Iterable["ConnectorConfig"]) -> dict[str, str]:
    """The worker's ``spark.*`` settings, with ``spark.buffer.size`` small when a connector runs in real-time
    mode and the worker does not set it (called by the standalone worker as it builds its session)."""
    conf = worker.spark_conf()
    if any(c.execution_mode(worker) == "realtime" for c in connectors):
        conf.setdefault(BUFFER_SIZE_KEY, REALTIME_BUFFER_SIZE)
    return conf


class RealtimeQueryGenerations(QueryGenerations):
    """Starts and stops one connector's real-time query generations (see the module docstring).

    Same arguments as :class:`QueryGenerations`; ``trigger_ms`` is the length of a real-time batch (never
    ``None``: validation refuses ``available-now``) and ``max_offsets_per_trigger`` is ignored (Spark refuses
    it in real-time mode).
    """

    def start(self, positions: Mapping[TopicPartition, int], on_batch: Any) -> "StreamingQuery":
        """Start a new generation reading from ``positions``; ``on_batch`` is the ``ForeachWriter`` Spark pickles
        to the executors (the real-time processor's ``batch_function``)."""
        assert self.trigger_ms is not None, "real-time mode needs an interval trigger"
        checkpoint = self.next_checkpoint()
        self._lower_min_batch_duration(self.trigger_ms)
        options = kafka_source_options(self.client_config, self.topics, self.topics_regex, positions, None,
                                       include_headers=self.include_headers)
        stream = raw_columns(read_kafka_stream(self.spark, options))
        writer = (
            stream.writeStream.queryName(query_name(self.connector_name))
            .foreach(on_batch)
            .outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .trigger(realTime=f"{self.trigger_ms} milliseconds")
        )
        self.checkpoint, self.started_from = checkpoint, dict(positions)
        self.query = writer.start()
        log.info("%s: real-time query generation %d started (batches of %d ms, checkpoint %s)", self.connector_name,
                 self.generation, self.trigger_ms, checkpoint)
        return self.query

    def stop(self, forget: bool = False) -> None:
        """Stop the running generation right after its running batch ends (see the module docstring); called by
        the connector runner on a stop, a pause or a restart, once the runner's own work is halted."""
        query = self.query
        if query is not None:
            self._wait_for_batch_end(query)
        super().stop(forget=forget)

    def _wait_for_batch_end(self, query: "StreamingQuery") -> None:
        """Return once ``query`` reports a batch newer than the one running now, has ended, or the wait ran out."""
        try:
            if not query.isActive:
                return
            running = _batch_id(query.lastProgress)
            batch_s = (self.trigger_ms or 0) / 1000.0
            deadline = time.monotonic() + STOP_WAIT_BATCHES * batch_s + STOP_WAIT_EXTRA_S
            while query.isActive and time.monotonic() < deadline:
                if _batch_id(query.lastProgress) != running:
                    log.info("%s: stopping at the end of a real-time batch (its commits written)", self.connector_name)
                    return
                time.sleep(STOP_POLL_S)
            if query.isActive:
                log.warning("%s: no real-time batch ended within %.0f s; stopping in the middle of one (what its tasks "
                            "put since their last commit is delivered again on the next start)", self.connector_name,
                            STOP_WAIT_BATCHES * batch_s + STOP_WAIT_EXTRA_S)
        except Exception as e:  # a query that cannot be asked is stopped as it is
            log.warning("%s: waiting for the real-time batch to end raised %r", self.connector_name, e)

    def _lower_min_batch_duration(self, batch_ms: int) -> None:
        """Let batches as short as ``batch_ms`` through Spark's minimum (5 s unless set lower)."""
        current = self.spark.conf.get(MIN_BATCH_DURATION_KEY, None)
        try:
            minimum = _milliseconds(current) if current is not None else 5000
        except ValueError:
            minimum = 5000
        if batch_ms < minimum:
            self.spark.conf.set(MIN_BATCH_DURATION_KEY, str(batch_ms))

    def batch_ranges(self, batch_id: int) -> dict[TopicPartition, tuple[int, int]] | None:
        """Not known in real-time mode (the writer never needs them)."""
        return None


def _batch_id(progress: Any) -> int | None:
    """The batch id of a query's last progress report (``None`` before the first)."""
    if not progress:
        return None
    return progress.get("batchId") if isinstance(progress, dict) else getattr(progress, "batchId", None)


def _milliseconds(value: str) -> int:
    """Spark's time setting (``5000``, ``5s``, ``5000ms``) in milliseconds."""
    text = value.strip().lower()
    for unit, factor in (("ms", 1), ("s", 1000), ("m", 60_000)):
        if text.endswith(unit) and text[: -len(unit)].strip().isdigit():
            return int(text[: -len(unit)]) * factor
    return int(text)
