"""A connector's offset commits written in the background, strictly in the order they were made.

Writing committed offsets (the ``connect-offsets`` records acknowledged by every in-sync replica, then
the consumer group ``connect-<connector>``) takes a few Kafka round trips. Made inside ``foreachBatch``
they lengthen every micro-batch; Spark starts the next batch only when the callback returns. So the
runner (:class:`connect_spark.runtime.worker.connector_runner.ConnectorRunner`) hands each commit to an
:class:`OffsetCommitter`, whose one writer thread writes them while the next batch runs.

What stays as it was:

* a commit is handed over at the same point as before — after the data it covers is durable (after
  ``pre_commit`` returned, dead letter queue writes acknowledged) — so the offset store never runs ahead
  of the data; it may only lag a little further behind, which a restart re-delivers;
* commits are written one at a time, in the order they were made. Commits handed over while a write is
  in flight are merged (per topic-partition the later offset wins, a reset included) and written next as
  one write: the store ends up holding exactly what writing them one by one would have left;
* a failed write is kept and merged into the next one (retried with the next commit, as Kafka Connect
  retries a failed offset commit), and the failure is raised by the next :meth:`OffsetCommitter.submit`,
  so the caller logs and counts it exactly where a synchronous write's failure surfaced before;
* :meth:`OffsetCommitter.flush` (the runner's stop, after the tasks' final commits) waits until
  everything handed over is written, retrying a failed write once, and raises if it still fails.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Mapping

from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.storage.offsets import OffsetStoreError

__all__ = ["OffsetCommitter"]

log = logging.getLogger(__name__)

Offsets = Mapping[TopicPartition, "int | None"]


class OffsetCommitter:
    """One connector's in-order background offset writer.

    Args:
        name: the connector's name (thread name, log lines).
        write: writes offsets durably (the offset store's ``write`` for this connector); raises on failure.
        on_written: called on the writer thread with what each successful write stored.
    """

    def __init__(self, name: str, write: Callable[[dict[TopicPartition, "int | None"]], None],
                 on_written: Callable[[dict[TopicPartition, "int | None"]], None] = lambda offsets: None) -> None:
        self.name = name
        self._write = write
        self._on_written = on_written
        self._cond = threading.Condition()
        self._pending: dict[TopicPartition, int | None] = {}  # handed over, not yet being written
        self._writing = False
        self._failure: BaseException | None = None  # the last write's failure, not yet raised by submit
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, offsets: Offsets) -> None:
        """Hand over a commit (called by the runner's commit step, on Spark's streaming thread); returns at once.

        Raises:
            OffsetStoreError: the previous write failed. The offsets given now are queued anyway, merged
                with the failed ones, and the merged write is tried next.
        """
        with self._cond:
            if self._closed:
                raise OffsetStoreError(f"The offset committer of {self.name} is closed")
            self._pending.update(offsets)
            failure, self._failure = self._failure, None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"offset-commits-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        if failure is not None:
            raise OffsetStoreError(f"A commit of offsets of {self.name} failed, retried with this one: {failure}") \
                from failure

    def wait_settled(self, timeout_s: float | None = None) -> bool:
        """Wait until no write is in flight and nothing waits to be written but a failed write's offsets
        (which wait for the next commit or :meth:`flush`); False on timeout. For tests and diagnostics."""
        with self._cond:
            return self._cond.wait_for(self._settled, timeout_s)

    @property
    def failed(self) -> bool:
        """True when the last write failed and its offsets wait for the next commit."""
        return self._failure is not None

    def _settled(self) -> bool:
        return not self._writing and (not self._pending or self._failure is not None)

    def flush(self, timeout_s: float | None = None) -> None:
        """Wait until everything handed over is written. A write that failed is tried once more here.

        Raises:
            OffsetStoreError: the offsets still could not be written (or ``timeout_s`` passed).
        """
        with self._cond:
            if not self._cond.wait_for(self._settled, timeout_s):
                raise OffsetStoreError(f"Offsets of {self.name} not written within {timeout_s} s: "
                                       f"{offsets_text(self._pending)}")
            if not self._pending:
                return
            self._failure = None
            offsets, self._pending = self._pending, {}
            self._writing = True  # the writer thread stays out while this thread writes
        try:
            self._write_one(offsets)
        finally:
            with self._cond:
                self._writing = False
                failure, self._failure = self._failure, None
                self._cond.notify_all()
        if failure is not None:
            raise OffsetStoreError(f"Committing offsets of {self.name} failed: {failure}") from failure

    def close(self, timeout_s: float | None = None) -> None:
        """:meth:`flush`, then end the writer thread (called once by the runner's stop)."""
        try:
            self.flush(timeout_s)
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            if self._thread is not None:
                self._thread.join(timeout_s)

    def _run(self) -> None:
        """The writer thread: write what is pending, one write at a time, until closed."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or (self._pending and not self._writing
                                                             and self._failure is None))
                if self._closed:
                    return
                offsets, self._pending = self._pending, {}
                self._writing = True
            try:
                self._write_one(offsets)
            finally:
                with self._cond:
                    self._writing = False
                    self._cond.notify_all()

    def _write_one(self, offsets: dict[TopicPartition, int | None]) -> None:
        """Write ``offsets``; on failure put them back under anything handed over since, and keep the error."""
        try:
            self._write(offsets)
        except Exception as e:
            log.error("%s: commit of offsets %s failed (retried with the next commit): %r",
                      self.name, offsets_text(offsets), e)
            with self._cond:
                self._pending = {**offsets, **self._pending}
                self._failure = e
            return
        log.info("%s: committed offsets %s", self.name, offsets_text(offsets))
        try:
            self._on_written(offsets)
        except Exception as e:  # bookkeeping only (lag metrics): never undoes a write
            log.warning("%s: after writing offsets: %r", self.name, e)
