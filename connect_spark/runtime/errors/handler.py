"""Retries, tolerance and reporting for one task: Kafka Connect's ``RetryWithToleranceOperator``.

The conversion pipeline runs every converter and transformation call through
:meth:`ErrorHandler.execute`; the errant record reporter hands records the task could not write to
:meth:`ErrorHandler.report_put_error`; the task loop calls :meth:`ErrorHandler.await_reports` before it
commits offsets and :meth:`ErrorHandler.close` when the task ends. Time and sleep are injected so the
back-off schedule is tested without waiting. The back-off schedule itself is in ``retry.py``; the
reports not yet durable are tracked by :class:`~connect_spark.runtime.errors.pending.PendingReports`
(``pending.py``).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import Future
from typing import Callable, Iterable, TypeVar

from connect_spark.api.errors import ConnectException, RetriableException, UnavailableException
from connect_spark.api.records import SinkRecord
from connect_spark.runtime.errors.config import ErrorHandlingConfig
from connect_spark.runtime.errors.context import ErrorContext, RawRecord
from connect_spark.runtime.errors.metrics import ErrorMetrics
from connect_spark.runtime.errors.pending import ErrantRecordFuture, PendingReports
from connect_spark.runtime.errors.reporters import Reporter, task_label
from connect_spark.runtime.errors.retry import RETRIES_DELAY_MIN_MS, backoff_delay_ms, can_retry
from connect_spark.runtime.errors.stage import TOLERATES_ANY_EXCEPTION, Stage, ToleranceType

__all__ = [
    "ErrorHandler",
    "ErrantRecordFuture",
    "ToleranceExceededException",
    "RETRIES_DELAY_MIN_MS",
    "SINK_TASK_CLASS",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The executing class reported for ``TASK_PUT`` failures, literally Kafka Connect's.
SINK_TASK_CLASS = "org.apache.kafka.connect.sink.SinkTask"


class ToleranceExceededException(ConnectException):
    """A failed record exceeded ``errors.tolerance``: the task must fail.

    The message starts with Kafka Connect's ``Tolerance exceeded in error handler`` and names the
    record (``topic[partition]@offset``), the stage and the executing class; ``__cause__`` is the
    operation's exception.

    Attributes:
        stage: the failed stage.
        executing_class: the class that ran the operation.
        record: the consumed record, or ``None``.
    """

    def __init__(self, message: str, stage: Stage, executing_class: str, record: RawRecord | None) -> None:
        super().__init__(message)
        self.stage = stage
        self.executing_class = executing_class
        self.record = record


class ErrorHandler:
    """Runs a task's fallible operations under the connector's ``errors.*`` policy.

    One handler per task, built where the task runs, used from the task's thread; :meth:`await_reports`,
    :meth:`stop` and :meth:`close` may be called from another thread.

    What :meth:`execute` does with an exception from the operation:

    * ``RetriableException``: the operation runs again after a back-off of ``300 ms << (attempt - 1)``;
      once that exceeds ``errors.retry.delay.max.ms`` the back-off is random in ``[0, max)``; never
      past ``errors.retry.timeout`` after the first attempt started. ``0`` means no retry, ``-1`` retries
      until it succeeds or :meth:`stop` is called.
    * An ``UnavailableException`` (a service such as a schema registry cannot be reached) whose retries
      are exhausted: the task fails with a ``ConnectException``; the record is not reported, not skipped.
    * Any other ``Exception`` in a converter or transformation stage, or a ``RetriableException`` whose
      retries are exhausted: the record failed. It is reported to every reporter (log line, dead letter
      queue) first; then under ``errors.tolerance=all`` it is skipped (``execute`` returns ``None``),
      under ``none`` a :class:`ToleranceExceededException` is raised.
    * Any other ``Exception`` in another stage (``TASK_PUT``): reported, then raised as
      ``ConnectException("Unhandled exception in error handler ...")``.
    * A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``)
      propagates untouched and is not reported.

    Deliberate differences from Kafka Connect 4.0:

    * A ``RetriableException`` that exhausts its retries under ``errors.tolerance=none`` fails the task.
      Kafka Connect drops such a record silently (it skips it without a tolerance check, and commits
      its offset), which loses data in the mode that promises to lose none.
    * ``errors.retry.timeout=-1`` retries forever, as documented by Kafka; Kafka's code compares the
      elapsed time with ``-1`` and so never retries.
    * :meth:`await_reports` waits for *every* dead letter queue write, also those of converter and
      transformation failures; the runtime calls it before committing offsets, so a failed record's
      offset is never committed before its DLQ write is durable. Kafka Connect awaits only the writes
      of the errant record reporter.
    * :meth:`stop` ends a back-off at once; the operation is then abandoned with a ``ConnectException``
      (not reported, not skipped), since the task is stopping and must not commit past the record.
      Kafka Connect marks the record failed and drops it when interrupted.

    Args:
        config: the connector's error-handling settings.
        connector_name: the connector's name (messages, reporters).
        task_id: the task number.
        reporters: where failures go (see :func:`~connect_spark.runtime.errors.create_reporters`); the
            handler attaches its :attr:`metrics` to each and closes them in :meth:`close`.
        clock: monotonic seconds, for retry deadlines.
        sleep: waits the given seconds between attempts. Default: a wait that :meth:`stop` interrupts.
        rng: the random source of the jittered back-off.
        metrics: the counters to update; a new :class:`ErrorMetrics` by default.
        serialize: turns a ``SinkRecord`` the task built itself back into a :class:`RawRecord` (with the
            task's converters, see :func:`~connect_spark.runtime.errors.converter_serializer`), for
            :meth:`report_put_error` calls without a consumed record.
    """

    def __init__(
        self,
        config: ErrorHandlingConfig,
        connector_name: str,
        task_id: int,
        reporters: Iterable[Reporter],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
        rng: random.Random | None = None,
        *,
        metrics: ErrorMetrics | None = None,
        serialize: Callable[[SinkRecord], RawRecord] | None = None,
    ) -> None:
        self.config = config
        self.connector_name = connector_name
        self.task_id = task_id
        self.reporters: list[Reporter] = list(reporters)
        self.metrics = metrics if metrics is not None else ErrorMetrics()
        self._clock = clock
        self._stopped = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopped.wait
        self._rng = rng if rng is not None else random.Random()
        self._serialize = serialize
        self._total_failures = 0
        self._last_failed = False
        # Serializes failure handling: tasks may call the errant record reporter from their own threads.
        self._failure_lock = threading.RLock()
        self._reports = PendingReports(self.label)
        self._closed = False
        for reporter in self.reporters:
            reporter.attach_metrics(self.metrics)

    # --- properties ------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """``<connector>-<task>``."""
        return task_label(self.connector_name, self.task_id)

    @property
    def failed(self) -> bool:
        """True when the last :meth:`execute` ended with a failed (and tolerated) record."""
        return self._last_failed

    @property
    def total_failures(self) -> int:
        """Records failed so far in this task's life (never reset; ``none`` tolerates zero of them)."""
        return self._total_failures

    def within_tolerance_limits(self) -> bool:
        """Whether the failures so far are tolerated: ``all`` tolerates any number, ``none`` zero."""
        if self.config.tolerance is ToleranceType.ALL:
            return True
        return self._total_failures == 0

    # --- the conversion path ----------------------------------------------------------------------

    def execute(self, stage: Stage, executing_class: str, operation: Callable[[], T], record: RawRecord) -> T | None:
        """Run ``operation`` for ``record`` in ``stage``, retrying and tolerating as configured.

        Called by the conversion pipeline for each key, value and header conversion and each
        transformation of each record, in the task's thread. When it returns ``None`` after a failure
        (:attr:`failed` is then true) the record is to be dropped and the later stages skipped; its offset
        still counts as consumed.

        Args:
            stage: the stage the operation belongs to.
            executing_class: the class running it, as users know it: Kafka's class name where there is
                one (``org.apache.kafka.connect.json.JsonConverter``,
                ``org.apache.kafka.connect.transforms.Cast$Value``), else the Python dotted path.
            operation: the call to make, without arguments.
            record: the consumed record the operation works on.

        Returns:
            The operation's result, or ``None`` when the record failed and is skipped.

        Raises:
            ToleranceExceededException: the record failed under ``errors.tolerance=none`` (after being
                reported).
            ConnectException: a non-tolerable exception (stage ``TASK_PUT``), or :meth:`stop` was called
                while retrying.
        """
        self._last_failed = False
        start = self._clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                return operation()
            except RetriableException as e:
                self.metrics.record_failure()
                if not self._can_retry(start):
                    if isinstance(e, UnavailableException):
                        raise ConnectException(
                            f"Task {self.label}: stage {stage.value} with class '{executing_class}' still could "
                            f"not reach a service it needs after {attempt} attempts on {record.coordinates()} "
                            f"(errors.retry.timeout={self.config.retry_timeout_ms} ms): {e}"
                        ) from e
                    return self._record_failed(stage, executing_class, record, e, attempt, exhausted=True)
                log.debug("%s: retriable error in stage %s with class '%s' on %s (attempt %d): %s", self.label,
                          stage.value, executing_class, record.coordinates(), attempt, e)
                if not self._stopped.is_set():
                    self._backoff(attempt, start)
                if self._stopped.is_set():
                    raise ConnectException(
                        f"Task {self.label} stopped while retrying stage {stage.value} with class "
                        f"'{executing_class}' on {record.coordinates()}"
                    ) from e
                self.metrics.record_retry()
            except Exception as e:
                self.metrics.record_failure()
                return self._record_failed(stage, executing_class, record, e, attempt, exhausted=False)

    def _can_retry(self, start: float) -> bool:
        return can_retry(self.config, start, self._clock)

    def backoff_delay_ms(self, attempt: int, start: float) -> float:
        """The back-off after failed ``attempt`` (1-based) of an operation that started at ``start``.

        See :func:`connect_spark.runtime.errors.retry.backoff_delay_ms`.
        """
        return backoff_delay_ms(self.config, attempt, start, self._clock, self._rng)

    def _backoff(self, attempt: int, start: float) -> None:
        delay = self.backoff_delay_ms(attempt, start)
        log.debug("%s: sleeping %.0f ms before attempt %d", self.label, delay, attempt + 1)
        self._sleep(delay / 1000.0)

    def _record_failed(
        self,
        stage: Stage,
        executing_class: str,
        record: RawRecord,
        error: Exception,
        attempts: int,
        exhausted: bool,
    ) -> None:
        self._last_failed = True
        context = ErrorContext(stage, executing_class, error, record, attempts)
        tolerable = exhausted or stage in TOLERATES_ANY_EXCEPTION
        with self._failure_lock:
            self._mark_failed()
            within = tolerable and self.within_tolerance_limits()
            if within:
                self.metrics.record_skipped()
            self.metrics.record_error()
            self._report(context)  # first, so the poison record reaches the DLQ even when the task fails
        where = (f"stage '{stage.value}' with class '{executing_class}' failed on record {record.coordinates()}"
                 + (f" after {attempts} attempts" if attempts > 1 else ""))
        if not tolerable:
            raise ConnectException(f"Unhandled exception in error handler: {where}") from error
        if not within:
            raise ToleranceExceededException(
                f"Tolerance exceeded in error handler: {where}", stage, executing_class, record
            ) from error
        log.debug("%s: skipping %s (%s)", self.label, record.coordinates(), where)
        return None

    def _mark_failed(self) -> None:
        self.metrics.record_error_timestamp()
        self._total_failures += 1

    # --- the put path (errant record reporter) ----------------------------------------------------

    def report_put_error(self, record: SinkRecord, raw: RawRecord | None, error: BaseException) -> "Future[None]":
        """Report a record the task could not write (stage ``TASK_PUT``).

        Called by :class:`~connect_spark.runtime.errors.WorkerErrantRecordReporter` from inside
        ``SinkTask.put``, usually in the task's thread; thread-safe, since a task may report from threads
        of its own.

        Args:
            record: the record the task reports.
            raw: the consumed record it came from, or ``None`` when the task built the record itself;
                then the record is serialized back with the handler's ``serialize`` callable (key, value
                and headers with the task's converters, at the record's own topic, partition and offset).
            error: why the task could not write it.

        Returns:
            A future completed when every reporter is done with the record (the DLQ write acknowledged).

        Raises:
            ToleranceExceededException: under ``errors.tolerance=none``, after reporting.
            ConnectException: the record could not be serialized for the reporters.
        """
        if raw is None and self._serialize is not None:
            try:
                raw = self._serialize(record)
            except Exception as e:
                raise ConnectException(
                    f"Task {self.label} could not serialize the reported record {record.coordinates()} "
                    f"for the error reporters: {e}"
                ) from e
        context = ErrorContext(Stage.TASK_PUT, SINK_TASK_CLASS, error, raw)
        with self._failure_lock:
            self._mark_failed()
            self.metrics.record_failure()
            future = self._report(context)
            within = self.within_tolerance_limits()
        if not within:
            self.metrics.record_error()
            where = raw.coordinates() if raw is not None else record.coordinates()
            message = (f"Tolerance exceeded in error handler: the task reported record {where} as failed "
                       f"(stage '{Stage.TASK_PUT.value}' with class '{SINK_TASK_CLASS}')")
            exception = ToleranceExceededException(message, Stage.TASK_PUT, SINK_TASK_CLASS, raw)
            if isinstance(error, Exception):
                raise exception from error
            raise exception
        return future

    # --- reporting ----------------------------------------------------------------------------------

    def _report(self, context: ErrorContext) -> ErrantRecordFuture:
        return self._reports.report(self.reporters, context)

    def await_reports(self, timeout: float | None = None) -> None:
        """Block until every report made so far is durable (every dead letter queue write acknowledged).

        Called by the task loop before it commits offsets (step 1 of the commit), and before the final
        commit when the task stops, so no offset is committed before the DLQ writes of the records it
        covers. Covers reports from :meth:`execute` (converters, transformations) and from
        :meth:`report_put_error`; the waiting is :meth:`PendingReports.await_all
        <connect_spark.runtime.errors.pending.PendingReports.await_all>`.

        Args:
            timeout: seconds to wait at most; ``None`` waits as long as it takes.

        Raises:
            ConnectException: a report failed (the message names the first failure, which is the
                ``__cause__``), or the timeout expired. Failed reports stay failed: every later call
                raises again, so nothing is committed past a record whose report was lost.
        """
        self._reports.await_all(timeout)

    @property
    def pending_reports(self) -> int:
        """Reports not yet known to be durable (failed ones included)."""
        return self._reports.count()

    # --- lifecycle ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Interrupt any back-off now and make further retries stop. Called when the task is asked to stop."""
        self._stopped.set()

    def close(self) -> None:
        """Stop retrying and close every reporter (a DLQ producer flushes what it holds first). Idempotent.

        Called once by the task loop when the task ends, after its final commit.

        Raises:
            ConnectException: one or more reporters failed to close (the first failure is the cause).
        """
        if self._closed:
            return
        self._closed = True
        self.stop()
        errors: list[Exception] = []
        for reporter in self.reporters:
            try:
                reporter.close()
            except Exception as e:
                log.warning("%s: closing error reporter %r failed: %s", self.label, reporter, e)
                errors.append(e)
        if errors:
            raise ConnectException(f"Task {self.label}: failed to close all error reporters") from errors[0]

    def __repr__(self) -> str:
        return (f"ErrorHandler(task={self.label}, tolerance={self.config.tolerance.value}, "
                f"retry_timeout_ms={self.config.retry_timeout_ms}, reporters={self.reporters!r})")
