"""The bounded wait for a connector's batch in flight when its worker stops.

Called by :meth:`~connect_spark.runtime.worker.connector_runner.ConnectorRunner.stop` (through its
``_stop_query``) when the standalone worker stops every connector: Kafka Connect's
``task.shutdown.graceful.timeout.ms`` bounds how long a stop waits for the batch in flight, counted from
the stop request. A batch still running then has the session's Spark jobs cancelled, so it fails and
nothing of it is committed (the next start delivers it again); one that does not end even then (a
``put`` busy in Python) is left behind after as long again, and the connector stops without its final
commit, its offsets where the last commit left them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["take_batch_lock"]

log = logging.getLogger(__name__)


def take_batch_lock(lock: threading.Lock, graceful_deadline: float | None, spark: "SparkSession",
                    connector: str, timeout_ms: int) -> bool:
    """Acquire ``lock`` (the runner's batch lock; the caller releases it) once the batch in flight ended.

    Without a ``graceful_deadline`` (``time.monotonic()``) this waits as long as the batch runs. Returns
    False when the batch outlived the deadline, its cancellation and ``timeout_ms`` more.
    """
    if graceful_deadline is None:
        lock.acquire()
        return True
    if lock.acquire(timeout=max(0.0, graceful_deadline - time.monotonic())):
        return True
    log.warning("%s: the batch in flight did not finish within task.shutdown.graceful.timeout.ms=%d; cancelling "
                "its Spark jobs (its records are delivered again on the next start)", connector, timeout_ms)
    _cancel_spark_jobs(spark, connector)
    if lock.acquire(timeout=max(timeout_ms / 1000.0, 1.0)):
        return True
    log.error("%s: the batch in flight did not end after its Spark jobs were cancelled; stopping without its "
              "final commit (its records are delivered again on the next start)", connector)
    return False


def _cancel_spark_jobs(spark: "SparkSession", connector: str) -> None:
    """Cancel the session's running Spark jobs: only ever when the whole worker is stopping."""
    from connect_spark.spark_session import is_remote_session

    try:
        if is_remote_session(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception as e:
        log.warning("%s: cancelling the batch in flight raised %r", connector, e)
