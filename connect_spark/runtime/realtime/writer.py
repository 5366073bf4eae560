"""The ``ForeachWriter`` of a real-time query: hosts a partition's sink task for one long batch.

Spark pickles one :class:`RealtimeWriter` (the driver's :class:`~connect_spark.runtime.realtime.processor.RealtimeProcessor`
makes it as a query generation starts) to the executors and, for every long batch, calls in one Python worker
per Kafka partition, all on Spark's task thread:

* ``open(partition_id, epoch_id)`` as the partition's task starts: an empty buffer and a ticker thread;
* ``process(row)`` for each record as it arrives (rows of :data:`~connect_spark.streaming.raw_batch.RAW_COLUMNS`):
  the first one finds the partition's cached task and begins its attempt
  (:meth:`~connect_spark.runtime.realtime.partition_task.PartitionTask.begin`); rows are buffered and ``put``
  (converted, transformed, ``errors.*``) on this thread once :attr:`RealtimeSpec.put_max_records` are buffered;
* ``close(error)`` at the batch end: what is buffered is put, then the final ``pre_commit`` → ``close`` → commit.

The ticker thread wakes every :attr:`~RealtimeSpec.put_linger_ms`: it puts rows that waited that long (records
must not wait for the next one to arrive) and, every ``offset.flush.interval.ms``, runs the commit
(:meth:`~connect_spark.runtime.realtime.partition_task.PartitionTask.commit`). One lock covers the buffer and every
call into the task, so ``put`` and ``pre_commit`` never run at the same time. A failure on the ticker (a ``put``
that failed, a fenced commit) is raised into Spark by the next ``process`` or by ``close``, which fails the query
and so the connector, after the final commit of what ``put`` accepted.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.realtime.partition_task import PartitionTask, RealtimeSpec, as_failure, partition_task

__all__ = ["RealtimeWriter"]

log = logging.getLogger(__name__)


class RealtimeWriter:
    """A Python ``ForeachWriter`` (Spark calls ``open``/``process``/``close``) carrying the run's :class:`RealtimeSpec`.

    Small and picklable: everything it builds lives in the executor's Python worker.
    """

    def __init__(self, spec: RealtimeSpec) -> None:
        self.spec = spec

    def open(self, partition_id: int, epoch_id: int) -> bool:
        """Called by Spark as a partition's task of a long batch starts."""
        self._lock = threading.Lock()
        self._rows: list[Any] = []
        self._first_buffered = 0.0
        self._task: PartitionTask | None = None
        self._tp: TopicPartition | None = None
        self._failure: BaseException | None = None
        self._next_commit = 0.0
        self._stopping = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name=f"realtime-ticker-{partition_id}", daemon=True)
        self._ticker.start()
        return True

    def process(self, row: Any) -> None:
        """Called by Spark for each record as it arrives."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            try:
                if self._task is None:
                    self._begin(row)
                if not self._rows:
                    self._first_buffered = time.monotonic()
                self._rows.append(row)
                if len(self._rows) >= self.spec.put_max_records:
                    self._put()
            except BaseException as e:
                self._failure = self._as_failure(e)
                raise self._failure from e

    def close(self, error: BaseException | None) -> None:
        """Called by Spark at the end of the partition's task (``error`` when it failed)."""
        self._stopping.set()
        self._ticker.join()
        with self._lock:
            task, self._task = self._task, None
            if task is None:
                return
            failure = self._failure or error
            if failure is None:
                try:
                    self._put(task)
                    task.finish()
                    return
                except BaseException as e:
                    failure = self._failure = self._as_failure(e)
            task.fail(failure)
        if self._failure is not None:
            raise self._failure

    def _begin(self, row: Any) -> None:
        self._tp = TopicPartition(row[0], int(row[1]))
        task = partition_task(self.spec, self._tp)
        task.begin(int(row[2]))
        self._task = task
        self._next_commit = time.monotonic() + self.spec.commit_interval_ms / 1000.0

    def _put(self, task: PartitionTask | None = None) -> None:
        rows, self._rows = self._rows, []
        if rows:
            (task or self._task).deliver(rows)  # type: ignore[union-attr]

    def _tick(self) -> None:
        """The ticker thread: puts rows that waited ``put_linger_ms``, commits every ``commit_interval_ms``."""
        interval = min(self.spec.put_linger_ms, self.spec.commit_interval_ms) / 1000.0
        while not self._stopping.wait(interval):
            with self._lock:
                if self._task is None or self._failure is not None:
                    continue
                try:
                    now = time.monotonic()
                    if self._rows and now - self._first_buffered >= self.spec.put_linger_ms / 1000.0:
                        self._put()
                    if now >= self._next_commit:
                        self._task.commit()
                        self._next_commit = time.monotonic() + self.spec.commit_interval_ms / 1000.0
                except BaseException as e:
                    self._failure = self._as_failure(e)
                    log.error("%s: %s", self.spec.connector_name, self._failure)

    def _as_failure(self, error: BaseException) -> BaseException:
        if self._tp is None:
            return error
        return as_failure(error, self.spec, self._tp)
