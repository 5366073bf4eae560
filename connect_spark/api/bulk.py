"""Bulk sink tasks: the same lifecycle and offset contract as :class:`SinkTask`, with columnar batches.

Record tasks receive one ``SinkRecord`` per Kafka record. Columnar sinks (Delta, Parquet, JDBC batch
writes) would only turn those objects back into columns, so they implement one of two bulk shapes:

* :class:`ArrowSinkTask` — ``put_arrow(table)`` receives the converted records of its partitions as a
  ``pyarrow.Table``. In executor mode it runs in an executor's Python worker.
* :class:`DataFrameSinkTask` — ``put_dataframe(frame, batch_id)`` receives the converted micro-batch as
  a Spark ``DataFrame`` on the driver, for sinks that need Spark itself (a Delta ``MERGE``). One task
  instance is assigned every partition; Spark parallelises the work, so ``tasks.max`` does not apply.

Both receive a *record frame*: one row per record that survived conversion and transformation, with
the columns of :data:`RECORD_FRAME_COLUMNS`. ``key`` and ``value`` carry the converted data typed from
its Connect schema (a Struct becomes a struct column, a Map a map, an Array an array, Decimal a
decimal, Timestamp a timestamp, ...); schemaless JSON objects become a struct inferred from the
batch. Tombstones have a null ``value``.

Lifecycle, as for record tasks::

    initialize(context) → start(props) → open(partitions)
        → put_arrow(table) / put_dataframe(frame, batch_id) …
        → pre_commit(offsets) → close(partitions) → stop()

``pre_commit`` receives, per assigned partition, the next offset after the last record of the frames
handed over so far; what it returns is committed, and nothing else. Records dropped by a transform
or sent to the dead letter queue are absent from the frame but their offsets count as consumed.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Collection, Mapping

from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.api.task import SinkTask

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = ["ArrowSinkTask", "DataFrameSinkTask", "RECORD_FRAME_COLUMNS", "is_bulk_task", "takes_records"]

#: The columns of a record frame, in order, with what each holds.
RECORD_FRAME_COLUMNS: dict[str, str] = {
    "topic": "string: the record's topic after transformations (e.g. a RegexRouter)",
    "partition": "int: the record's partition after transformations",
    "offset": "long: the record's Kafka offset",
    "timestamp": "timestamp (UTC), null when the record has none",
    "timestamp_type": "int: Kafka's timestamp type (-1 none, 0 CreateTime, 1 LogAppendTime)",
    "key": "the converted key, typed from its Connect schema",
    "value": "the converted value, typed from its Connect schema; null for a tombstone",
    "headers": "array<struct<key: string, value: binary>>: the raw header bytes, in order",
    "original_topic": "string: the topic the record was read from",
    "original_partition": "int: the partition the record was read from",
    "original_offset": "long: the offset the record was read from (what commits are keyed by)",
}


class ArrowSinkTask(SinkTask):
    """A sink task that writes Arrow tables of converted records.

    Subclasses implement :meth:`put_arrow` instead of :meth:`put`; every other hook is a
    :class:`SinkTask` hook with the same meaning. A subclass may implement :meth:`put` as well
    (:func:`takes_records`): in executor mode, when the connector's converters and transforms have no
    vectorized form, so that its frame would be built from records converted one by one, it receives
    those records through ``put`` instead (the JDBC sink does this).
    """

    @abc.abstractmethod
    def put_arrow(self, table: "pa.Table") -> None:
        """Called by the runtime with the converted records of this task's partitions, possibly none.

        The table has the columns of :data:`RECORD_FRAME_COLUMNS`, rows in offset order per
        partition. Exceptions behave as for :meth:`SinkTask.put` (``RetriableException`` → the same
        table again after ``context.timeout``; anything else fails the task).
        """

    def put(self, records: Collection[SinkRecord]) -> None:
        """Record delivery is not used for bulk tasks; the runtime calls :meth:`put_arrow`."""
        raise NotImplementedError(f"{type(self).__name__} is an ArrowSinkTask: the runtime calls put_arrow")


class DataFrameSinkTask(SinkTask):
    """A sink task, resident on the driver, that writes each micro-batch as a Spark DataFrame.

    Subclasses implement :meth:`put_dataframe` instead of :meth:`put`; every other hook is a
    :class:`SinkTask` hook with the same meaning.
    """

    @abc.abstractmethod
    def put_dataframe(self, frame: "DataFrame", batch_id: int) -> None:
        """Called by the runtime on the driver once per micro-batch, from Spark's ``foreachBatch``.

        Args:
            frame: the converted records of the batch, columns of :data:`RECORD_FRAME_COLUMNS`.
                It may be re-read several times (the runtime caches it when that is cheaper).
            batch_id: Spark's micro-batch id. It restarts when the runtime starts a new checkpoint
                generation, so it is not a durable sequence number: exactly-once sinks key their
                idempotence on the Kafka offsets they store with the data instead.

        Exceptions behave as for :meth:`SinkTask.put`.
        """

    def put_dataframe_batch(self, frame: "DataFrame", batch_id: int,
                            offsets: Mapping[TopicPartition, tuple[int, int]]) -> None:
        """Called by the runtime on the driver once per micro-batch instead of :meth:`put_dataframe`.

        ``offsets`` holds, per original topic-partition the batch read, its first offset and its next
        offset (read from the query's offset log, so known before the frame is computed): every record
        of the partition below the next offset is in ``frame``, was handed over earlier, or was dropped
        by a transform or sent to ``errors.*``. Sinks that store offsets with their data (Delta's commit
        metadata) use it instead of aggregating the frame. The default calls :meth:`put_dataframe`.
        """
        self.put_dataframe(frame, batch_id)

    def writes_atomically(self) -> bool:
        """Called by the runtime before each batch: True when a ``put_dataframe`` whose frame fails while
        being computed leaves nothing visible (one transactional commit, as a single Delta table).

        The runtime then hands over a batch in one Spark pass, its frame raising if a row turns out to
        need the per-record conversion path, and hands the batch over again (those rows converted per
        record) after such a failure. False (the default): the runtime first finds those rows, then
        hands over the batch once.
        """
        return False

    def rejected_rows(self, frame: "DataFrame") -> "Column | None":
        """Called by the runtime on the driver before each :meth:`put_dataframe`, with the same frame.

        Returns a string column expression over the frame that is null for rows the task can write and,
        for rows it cannot (an upsert record without a usable key, say), says why. The runtime sends
        those rows where ``errors.*`` says — logged, written to the dead letter queue with their consumed
        bytes and ``__connect.errors.*`` headers (stage ``TASK_PUT``), or failing the task under
        ``errors.tolerance=none`` — and leaves them out of the frame ``put_dataframe`` receives; their
        offsets count as consumed. ``None`` (the default): every row is writable, and nothing is checked.
        """
        return None

    def put(self, records: Collection[SinkRecord]) -> None:
        """Record delivery is not used for bulk tasks; the runtime calls :meth:`put_dataframe`."""
        raise NotImplementedError(f"{type(self).__name__} is a DataFrameSinkTask: the runtime calls put_dataframe")


def takes_records(task_class: type) -> bool:
    """True when an :class:`ArrowSinkTask` subclass also implements :meth:`SinkTask.put` (called by the
    runtime when it chooses how to hand converted records over)."""
    return issubclass(task_class, ArrowSinkTask) and task_class.put is not ArrowSinkTask.put


def is_bulk_task(task_class: type) -> bool:
    """True when instances of ``task_class`` take columnar batches instead of records."""
    return issubclass(task_class, (ArrowSinkTask, DataFrameSinkTask))
