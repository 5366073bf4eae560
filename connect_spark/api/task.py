"""The sink task contract: what a connector author implements and what the runtime promises.

The runtime calls a task's hooks in Kafka Connect's order::

    initialize(context) → start(props) → open(partitions)
        → put(records) … (pre_commit(offsets) on each commit tick) …
        → close(partitions) → stop()

One task instance is called from one thread at a time. Offsets are the *next* offset to read.
"""

from __future__ import annotations

import abc
from concurrent.futures import Future
from typing import Collection, Mapping

from connect_spark.api.records import SinkRecord, TopicPartition

__all__ = ["SinkTask", "SinkTaskContext", "ErrantRecordReporter"]


class ErrantRecordReporter(abc.ABC):
    """Sends records a task could not write to the configured error reporters (log, dead letter queue).

    Obtained from :meth:`SinkTaskContext.errant_record_reporter`; exists only when the connector
    sets ``errors.deadletterqueue.topic.name`` or ``errors.log.enable=true``.
    """

    @abc.abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> "Future[None]":
        """Report one record that failed in ``put``.

        The runtime guarantees the report is durable (the DLQ write acknowledged) before it commits
        any offset covering the record. Under ``errors.tolerance=none`` this raises
        ``ConnectException("Tolerance exceeded in error handler")`` at once, and the task fails.

        Returns:
            A future completed when every reporter has finished with the record.
        """


class SinkTaskContext(abc.ABC):
    """What the runtime offers a running task. Implemented by the runtime, never by connectors."""

    @abc.abstractmethod
    def configs(self) -> dict[str, str]:
        """The task's current configuration (the same keys ``start`` received)."""

    @abc.abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int] | TopicPartition, offset: int | None = None) -> None:
        """Ask to read the given partitions from the given offsets next ("rewind").

        Takes a mapping, or one topic-partition and an offset. Nothing moves at once: the seeks apply
        right after ``open`` returns, or before the next batch is read. The runtime then treats these
        offsets as committed (without writing them). Call it from ``open``, not ``start``: a partition
        not assigned to the task is an error. Exactly-once sinks use this to resume from the offsets
        they stored with their data.
        """

    @abc.abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """Set the back-off before the records of a ``put`` that raised ``RetriableException`` are
        delivered again. One-shot: it applies to the next retry only."""

    @abc.abstractmethod
    def assignment(self) -> set[TopicPartition]:
        """The topic-partitions currently assigned to this task."""

    @abc.abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop delivering new records of these assigned partitions until :meth:`resume`."""

    @abc.abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Deliver records of these partitions again after :meth:`pause`."""

    @abc.abstractmethod
    def request_commit(self) -> None:
        """Hint that ``pre_commit`` and an offset commit should happen soon, before the next tick."""

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The reporter for records ``put`` could not write, or ``None`` when no reporter is configured."""
        return None


class SinkTask(abc.ABC):
    """A sink task: receives records of its assigned topic-partitions and writes them somewhere.

    Subclasses implement :meth:`version`, :meth:`start`, :meth:`put` and :meth:`stop`; the other
    hooks have Kafka Connect's defaults. ``self.context`` is set by :meth:`initialize`.
    """

    #: The configuration key listing the topics to consume (comma separated).
    TOPICS_CONFIG = "topics"
    #: The configuration key with a regular expression of topics to consume.
    TOPICS_REGEX_CONFIG = "topics.regex"

    #: connect_spark extension (not in Kafka Connect): ``False`` promises that ``put`` never looks at
    #: ``record.headers``. The runtime then leaves Kafka headers unread (Spark's Kafka source costs
    #: about twice as much per record with headers on) unless something else needs the original
    #: headers: a dead letter queue, ``errors.log.include.messages``, a ``HasHeaderKey`` or custom
    #: predicate, a custom transform, or a header converter that can fail. Records then arrive with
    #: no headers. Leave it ``True`` (the default) when in doubt.
    reads_headers: bool = True

    context: SinkTaskContext

    @abc.abstractmethod
    def version(self) -> str:
        """The task's version; logged when the runtime instantiates it."""

    def initialize(self, context: SinkTaskContext) -> None:
        """Called once by the runtime, before :meth:`start`, with the task's context.

        The assignment is still empty here. An exception fails the task.
        """
        self.context = context

    @abc.abstractmethod
    def start(self, props: dict[str, str]) -> None:
        """Called once after :meth:`initialize` with the task's configuration, before any record.

        Open clients and resources here. An exception fails the task.
        """

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called when partitions are assigned to the task, before their first records.

        Not called with an empty collection. Exactly-once sinks read the offsets stored with their data
        here and call ``context.offset(...)``; the runtime applies those seeks right after this returns.
        An exception fails the task.

        In executor mode every micro-batch is a new generation, so ``open`` runs once per batch: seek
        only to offsets that advance (those stored with the data); a fixed backward seek would have
        the same records delivered again on every batch.
        """

    @abc.abstractmethod
    def put(self, records: Collection[SinkRecord]) -> None:
        """Called with each batch of converted and transformed records, possibly empty.

        Connect calls ``put`` on every poll, also with no records, so tasks can flush on time. The task
        may write the records now or buffer them; a buffering task must override :meth:`flush` or
        :meth:`pre_commit` so that only durably written offsets are committed.

        Raises:
            RetriableException: the same records are delivered again after ``context.timeout`` and no
                offset advances meanwhile.
            Exception: anything else fails the task; records of earlier successful puts are still
                committed before it stops.
        """

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Write everything buffered for these partitions. Called only by the default :meth:`pre_commit`.

        Args:
            current_offsets: for each assigned partition, the next offset after the last record
                given to :meth:`put`.
        """

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick (``offset.flush.interval.ms``, a
        ``request_commit()``, partition close and shutdown) to ask which offsets are safe to commit.

        The default flushes and returns ``current_offsets``. Return only offsets whose records are
        durably written; the runtime commits exactly what is returned, clamped to what was consumed.
        Omitted partitions keep their last committed offset; an empty dict commits nothing. An
        exception means nothing is committed and the records since the last commit are delivered again.

        Args:
            current_offsets: a copy of the delivered offsets of the assigned partitions, keyed by the
                *original* topic-partition of the records (before transformations).
        """
        self.flush(current_offsets)
        return dict(current_offsets)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Called when partitions are taken from the task: after their final :meth:`pre_commit` and
        before that commit is written, on rebalance, at stop and after a failure.

        Release writers for these partitions. An exception fails the task.
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Called once when the task ends, after the final ``close``. Exceptions are logged and ignored."""
