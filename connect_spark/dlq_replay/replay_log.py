"""Where a connector's dead letter replay keeps its lease and its progress: the worker's config topic.

Called by :mod:`connect_spark.dlq_replay.replay` around each run. Two keys per connector in
``config.storage.topic`` (compacted, one partition, so every reader sees the same order; the config store
skips keys it does not know):

* ``dlq-replay-lease-<connector>``: the lease that lets one replay run at a time. A claim
  ``{"owner", "at_ms", "expires_ms"}`` takes the lease when it is free, expired at ``at_ms``, or already the
  claimer's (a renewal); a release ``{"owner", "released": true}`` frees it when it comes from the holder.
  Every reader folds the records in topic order with these rules (:func:`fold_lease`), so two replays that
  claim at once agree on who won: the first claim written. The holder renews the lease from a background
  thread every third of its time; a replay that crashed stops renewing, and its lease expires after
  ``ttl_ms`` (:data:`LEASE_TTL_MS` by default).
* ``dlq-replay-progress-<connector>``: the :class:`~connect_spark.dlq_replay.progress.ReplayProgress` as JSON,
  one value per commit (the latest wins).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from connect_spark.api.errors import ConnectException
from connect_spark.dlq_replay.progress import ReplayProgress

if TYPE_CHECKING:
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.status.log import RecordLog

__all__ = ["ReplayLog", "ReplayInProgressError", "LeaseState", "fold_lease", "lease_key", "progress_key",
           "LEASE_TTL_MS"]

log = logging.getLogger(__name__)

LEASE_TTL_MS = 60_000
"""How long a replay's lease lasts without a renewal: the longest a crashed replay keeps others out."""


class ReplayInProgressError(ConnectException):
    """Another replay of the connector holds the lease (REST answers 409, the CLI exits with 3)."""


def lease_key(connector: str) -> str:
    return f"dlq-replay-lease-{connector}"


def progress_key(connector: str) -> str:
    return f"dlq-replay-progress-{connector}"


@dataclass(frozen=True)
class LeaseState:
    """Who holds a replay lease, and until when (epoch milliseconds, the holder's clock)."""

    owner: str
    expires_ms: int


def fold_lease(state: LeaseState | None, value: bytes | None) -> LeaseState | None:
    """The lease after one more record of its key (see the module docstring); unreadable records change nothing."""
    try:
        record = json.loads(value) if value is not None else None
        owner = str(record["owner"]) if record is not None else None
    except (ValueError, TypeError, KeyError):
        return state
    if record is None:
        return None
    if record.get("released"):
        return None if state is not None and state.owner == owner else state
    try:
        at_ms, expires_ms = int(record["at_ms"]), int(record["expires_ms"])
    except (ValueError, TypeError, KeyError):
        return state
    if state is None or state.owner == owner or state.expires_ms <= at_ms:
        return LeaseState(owner, expires_ms)
    return state


class ReplayLog:
    """The lease and progress records of one connector's replay (see the module docstring).

    Used as a context manager by one run: :meth:`claim` first (not for a dry run), then :meth:`progress` and
    :meth:`write_progress` after each chunk (which fails once the lease is lost), and on leaving, the lease is
    released and the clients closed.

    Args:
        connector: the connector's name.
        record_log: the config topic's log (:func:`for_worker` makes it from the worker's configuration).
        ttl_ms: how long the lease lasts without a renewal.
        clock_ms: the current time in epoch milliseconds.
    """

    def __init__(self, connector: str, record_log: "RecordLog", ttl_ms: int = LEASE_TTL_MS,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.connector = connector
        self.owner = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.ttl_ms = ttl_ms
        self._clock_ms = clock_ms
        self._log = record_log
        self._lease: LeaseState | None = None
        self._progress: bytes | None = None
        self._held = False
        self._lost: str | None = None
        self._lock = threading.Lock()
        self._stop_renewing = threading.Event()
        self._renewer: threading.Thread | None = None
        record_log.bind(self._on_record)

    @classmethod
    def for_worker(cls, worker: "WorkerConfig", connector: str, **kwargs: Any) -> "ReplayLog":
        """The replay log of ``connector`` on the worker's ``config.storage.topic``."""
        from connect_spark.status.log import KafkaLog

        return cls(connector, KafkaLog(worker.bootstrap_servers, worker.config_storage_topic, 1,
                                       worker.config_storage_replication_factor, worker.kafka_client_config(),
                                       config_key="config.storage.topic"), **kwargs)

    def _on_record(self, key: str, value: bytes | None) -> None:
        if key == lease_key(self.connector):
            self._lease = fold_lease(self._lease, value)
        elif key == progress_key(self.connector):
            self._progress = value

    def __enter__(self) -> "ReplayLog":
        self._log.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.release()
        finally:
            self._log.stop()

    # -- the lease ---------------------------------------------------------------------------------

    def holder(self) -> LeaseState | None:
        """The unexpired lease as the topic says now, or ``None``."""
        with self._lock:
            self._log.read_to_end()
            lease = self._lease
        return lease if lease is not None and lease.expires_ms > self._clock_ms() else None

    def claim(self) -> None:
        """Take the lease and keep it renewed until :meth:`release`.

        Raises:
            ReplayInProgressError: another replay holds it (or claimed it first).
        """
        if self._held:
            return
        held = self.holder()
        if held is None or held.owner == self.owner:
            self._write_claim()
            held = self.holder()
        if held is None or held.owner != self.owner:
            until = "" if held is None else f" (its lease runs until {_utc(held.expires_ms)} unless renewed)"
            raise ReplayInProgressError(
                f"Another dead letter replay of connector {self.connector} is running"
                f"{'' if held is None else ' (' + held.owner + ')'}{until}; try again once it has finished")
        self._held = True
        self._renewer = threading.Thread(target=self._renew, name=f"dlq-replay-lease-{self.connector}", daemon=True)
        self._renewer.start()

    def _write_claim(self) -> None:
        now = self._clock_ms()
        value = {"owner": self.owner, "at_ms": now, "expires_ms": now + self.ttl_ms}
        with self._lock:
            self._log.send([(lease_key(self.connector), json.dumps(value).encode())])

    def _renew(self) -> None:
        while not self._stop_renewing.wait(self.ttl_ms / 3000):
            try:
                held = self.holder()
                if held is None or held.owner != self.owner:
                    self._lost = f"held by {held.owner}" if held else "expired"
                    return
                self._write_claim()
            except Exception as e:  # noqa: BLE001 - the next commit reports the loss
                log.warning("Could not renew the dead letter replay lease of %s: %s", self.connector, e)

    def check(self) -> None:
        """Raise :class:`ReplayInProgressError` if the lease was lost (expired while renewals failed, then taken)."""
        held = self.holder()
        if self._lost or held is None or held.owner != self.owner:
            raise ReplayInProgressError(
                f"The dead letter replay of connector {self.connector} lost its lease "
                f"({self._lost or 'expired'}); the last chunk was not committed and will be replayed")

    def release(self) -> None:
        """Stop renewing and free the lease (if held)."""
        self._stop_renewing.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        if self._held:
            self._held = False
            with self._lock:
                self._log.send([(lease_key(self.connector),
                                 json.dumps({"owner": self.owner, "released": True}).encode())])

    # -- the progress ------------------------------------------------------------------------------

    def progress(self) -> ReplayProgress | None:
        """The stored progress, or ``None`` when no replay of the connector has committed one."""
        with self._lock:
            self._log.read_to_end()
            value = self._progress
        return None if value is None else ReplayProgress.from_json(value)

    def write_progress(self, progress: ReplayProgress) -> None:
        """Store ``progress``, after checking the lease is still held."""
        self.check()
        with self._lock:
            self._log.send([(progress_key(self.connector), progress.to_json())])


def _utc(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_ms / 1000))
