"""The head of a micro-batch, read on the driver with a Kafka client, for a plan that must learn its shapes.

Called by :class:`connect_spark.runtime.processors.dataframe_batches.FrameBatches` before it applies a vectorized plan
that has not learned its JSON or Avro shapes yet (the first batch of a run, or a batch after
:meth:`~connect_spark.columnar.plan.ColumnarPlan.forget_samples`). Learning them from the batch itself
costs one or two small Spark jobs over Kafka (seconds on a cold session, which a scheduled
``--available-now`` run pays every time); this reads the same kind of head with the connector's own
consumer settings instead: up to :data:`SAMPLE_ROWS` records spread over the batch's partitions, from
the start of each partition's range and never past its end. The rows come back as a small local
DataFrame (Arrow, a local relation: Spark evaluates what the plan asks of it on the driver, no job).

The first batch's head is read ahead: the processor calls :meth:`BatchSampler.prefetch` with the positions
the query will start from once its tasks are open, and a background thread reads (and hands to Spark) the
head of each partition from there while the query starts; the first batch then finds its sample ready when
its ranges begin at those positions (rows past a range's end are left out).

The sample only chooses the shape a batch is converted with; every row is still proved against it, so
a sample that differs from the batch costs rows on the per-record path, never a wrong value. When
Kafka does not answer in time (or at all) the caller gets ``None`` and the plan samples the batch with
Spark, as before.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow as pa

from connect_spark.api.records import TopicPartition
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BatchSampler", "SAMPLE_ROWS"]

log = logging.getLogger(__name__)

#: How many records a sample holds at most (as many as the plan's own sample of a batch).
SAMPLE_ROWS = 1000



class BatchSampler:
    """Reads batch heads for one connector (see the module docstring); a client per sample, closed after.

    Args:
        spark: the session the sample DataFrame is made in.
        client_kwargs: kafka-python ``KafkaConsumer`` arguments (servers, security) of the connector.
        timeout_s: how long one sample may take before the caller falls back to sampling with Spark.
    """

    def __init__(self, spark: "SparkSession", client_kwargs: Mapping[str, Any], timeout_s: float = 3.0) -> None:
        self.spark = spark
        self.client_kwargs = dict(client_kwargs)
        self.timeout_s = timeout_s
        #: samples read and samples given up on (Kafka did not answer in time), for tests and diagnostics
        self.samples = 0
        self.failures = 0
        #: samples taken from what :meth:`prefetch` read ahead
        self.prefetched = 0
        self._ahead: _ReadAhead | None = None

    def prefetch(self, starts: Mapping[TopicPartition, int], rows: int = SAMPLE_ROWS) -> None:
        """Called by the processor once its tasks are open, before the query starts: reads the head of each
        partition from ``starts`` (where the first batch begins) in a background thread, up to the log's
        end at that time, and hands it to Spark there; :meth:`sample` takes it for a batch starting there."""
        if not starts:
            return
        ahead = _ReadAhead(dict(starts))

        def read() -> None:
            try:
                table = self._read({tp: (start, None) for tp, start in starts.items()}, rows)
                if table is not None and table.num_rows:
                    for tp, offset in zip(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist()),
                                          table.column("offset").to_pylist()):
                        key = TopicPartition(*tp)
                        ahead.last[key] = max(offset, ahead.last.get(key, offset))
                    ahead.frame = self.spark.createDataFrame(table)
            except Exception as e:  # the first batch reads its head itself
                log.info("Could not read the first batch's head ahead (%s)", e)
            finally:
                ahead.done.set()

        threading.Thread(target=read, name="connect-spark-sample-ahead", daemon=True).start()
        self._ahead = ahead

    def sample(self, ranges: Mapping[TopicPartition, tuple[int, int]], rows: int = SAMPLE_ROWS) -> "DataFrame | None":
        """Up to ``rows`` records of the batch covering ``ranges`` (first and next offset per partition), as a
        DataFrame of ``RAW_COLUMNS``; ``None`` when they could not be read (the reason is logged)."""
        wanted = {tp: (start, end) for tp, (start, end) in ranges.items() if end > start}
        if not wanted:
            return None
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            frame = ahead.frame_for(wanted, max(1, math.ceil(rows / len(wanted))), self.timeout_s)
            if frame is not None:
                self.samples += 1
                self.prefetched += 1
                return frame
        try:
            table = self._read(wanted, rows)
        except Exception as e:  # any client failure: the plan samples with Spark instead
            self.failures += 1
            log.info("Could not read the batch's head with a Kafka client (%s); sampling it with Spark", e)
            return None
        if table is None:
            self.failures += 1
            return None
        self.samples += 1
        return self.spark.createDataFrame(table)

    def _read(self, wanted: Mapping[TopicPartition, tuple[int, int | None]], rows: int) -> pa.Table | None:
        """The head of each partition's range (an end of ``None``: the log's end now), ``rows`` in all."""
        from kafka import KafkaConsumer
        from kafka.structs import TopicPartition as KafkaTopicPartition

        per_partition = max(1, math.ceil(rows / len(wanted)))
        consumer = KafkaConsumer(**{"client_id": "connect-spark-sample", **self.client_kwargs,
                                    "group_id": None, "enable_auto_commit": False})
        columns: dict[str, list[Any]] = {name: [] for name in RAW_COLUMNS}
        try:
            ktps = {tp: KafkaTopicPartition(tp.topic, tp.partition) for tp in wanted}
            log_ends = (consumer.end_offsets(list(ktps.values()))
                        if any(end is None for _, end in wanted.values()) else {})
            limits = {}
            for tp, (start, end) in sorted(wanted.items()):
                stop = min(log_ends.get(ktps[tp], start) if end is None else end, start + per_partition)
                if stop > start:
                    limits[ktps[tp]] = (start, stop)
            if not limits:
                return None
            consumer.assign(list(limits))
            for ktp, (start, _) in limits.items():
                consumer.seek(ktp, start)
            pending = set(limits)
            deadline = time.monotonic() + self.timeout_s
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    log.info("The batch's head did not arrive within %.1f s; sampling it with Spark", self.timeout_s)
                    return None
                for ktp, records in consumer.poll(timeout_ms=int(min(left, 1.0) * 1000)).items():
                    stop = limits[ktp][1]
                    for r in records:
                        if r.offset >= stop:
                            break
                        columns["topic"].append(r.topic)
                        columns["partition"].append(r.partition)
                        columns["offset"].append(r.offset)
                        columns["timestamp_ms"].append(r.timestamp)
                        columns["timestamp_type"].append(r.timestamp_type)
                        columns["key"].append(r.key)
                        columns["value"].append(r.value)
                        columns["headers"].append([{"key": k, "value": v} for k, v in (r.headers or [])])
                for ktp in list(pending):  # past the range's end (also over compacted gaps and markers)
                    if consumer.position(ktp) >= limits[ktp][1]:
                        pending.discard(ktp)
                        consumer.pause(ktp)
        finally:
            consumer.close()
        return pa.table(columns, schema=RAW_ARROW_SCHEMA)


class _ReadAhead:
    """What :meth:`BatchSampler.prefetch` read: the positions it read from, its frame and last offsets."""

    def __init__(self, starts: dict[TopicPartition, int]) -> None:
        self.starts = starts
        self.done = threading.Event()
        self.frame: "DataFrame | None" = None
        self.last: dict[TopicPartition, int] = {}

    def frame_for(self, wanted: Mapping[TopicPartition, tuple[int, int]], per_partition: int,
                  timeout_s: float) -> "DataFrame | None":
        """The rows read ahead that lie in the head of ``wanted``'s ranges, or ``None`` when the read did not
        finish in time, found nothing, or the ranges do not start where it read from."""
        if not self.done.wait(timeout_s) or self.frame is None:
            return None
        if any(self.starts.get(tp) != start for tp, (start, _) in wanted.items()):
            return None
        stops = {tp: min(end, start + per_partition) for tp, (start, end) in wanted.items()}
        if all(tp in stops and last < stops[tp] for tp, last in self.last.items()):
            return self.frame
        from pyspark.sql import functions as F

        inside = None
        for tp, stop in stops.items():
            here = (F.col("topic") == tp.topic) & (F.col("partition") == tp.partition) & (F.col("offset") < stop)
            inside = here if inside is None else inside | here
        return self.frame.where(inside)
