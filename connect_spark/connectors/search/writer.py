"""Sends one put's bulk actions and sorts every answer: acknowledged, rejected, or to be retried.

Called by :class:`~connect_spark.connectors.search.task.SearchSinkTask` once per ``put_arrow``. The writer
sends all actions through the client's bulk helper, then, while some got an answer worth retrying, waits and
sends only those again:

* acknowledged: a 2xx answer; a 409 version conflict on an index, create or delete action (the cluster holds
  this version of the document or a newer one, which is what idempotent writes want); a 404 on a delete
  (already gone);
* retried: 429 (throttling), any 5xx, a 409 on an update (a concurrent change), no answer at all (connection
  refused, timeout), up to ``max.retries``
  times and within ``flush.timeout.ms``, waiting a random time up to ``retry.backoff.ms`` × 2^attempt
  (full jitter, capped at 60 s) before each round;
* rejected: any other answer (a mapping conflict, a parse error): the document itself is wrong, and the
  cluster's reason is kept for the errant record reporter.

When retries run out, :class:`RetriesExhausted` says how many documents were still pending. Time and sleep
are injected so the back-off is tested without waiting.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from connect_spark.api.errors import ConnectException
from connect_spark.connectors.search.client import SearchClient
from connect_spark.connectors.search.config import SearchSinkConfig

__all__ = ["BulkWriter", "BulkOutcome", "RetriesExhausted", "classify", "backoff_bound"]

log = logging.getLogger(__name__)

ACKED, RETRY, REJECTED = "acked", "retry", "rejected"
MAX_BACKOFF_MS = 60_000


class RetriesExhausted(ConnectException):
    """Documents still unacknowledged after ``max.retries`` rounds or ``flush.timeout.ms``; the last reason."""


@dataclass
class BulkOutcome:
    """What became of each action of a put.

    Attributes:
        rejected: ``(action position, the cluster's reason)`` for documents the cluster refused.
        rounds: how many bulk rounds were sent (1 when nothing needed a retry).
    """

    rejected: list[tuple[int, str]] = field(default_factory=list)
    rounds: int = 0


def classify(result: dict[str, Any]) -> tuple[str, str]:
    """``(ACKED | RETRY | REJECTED, reason)`` for one bulk item result (``{op_type: {status, error, ...}}``)."""
    op_type, info = next(iter(result.items()))
    status = info.get("status")
    error = info.get("error")
    if isinstance(status, int) and 200 <= status < 300:
        return ACKED, ""
    reason = _reason(error)
    if not isinstance(status, int):  # "N/A": no answer from the cluster
        return RETRY, reason or "no answer from the cluster"
    if status == 409 and "version_conflict" in reason:
        if op_type == "update":  # a concurrent change between the update's read and write: do it again
            return RETRY, f"HTTP 409: {reason}"
        return ACKED, reason  # the cluster holds this version or a newer one
    if status == 404 and op_type == "delete":
        return ACKED, reason
    if status == 429 or status >= 500:
        return RETRY, f"HTTP {status}: {reason}"
    return REJECTED, reason or f"HTTP {status}"


def _reason(error: Any) -> str:
    if isinstance(error, dict):
        text = f"{error.get('type', 'error')}: {error.get('reason', '')}"
        cause = error.get("caused_by")
        if isinstance(cause, dict):
            text += f" (caused by {cause.get('type', '')}: {cause.get('reason', '')})"
        return text
    return "" if error is None else str(error)


def backoff_bound(config: SearchSinkConfig, attempt: int) -> float:
    """The longest wait, in seconds, before retry ``attempt`` (1-based)."""
    return min(MAX_BACKOFF_MS, config.retry_backoff_ms * (2 ** (attempt - 1))) / 1000.0


class BulkWriter:
    """Sends actions through a :class:`SearchClient` (see the module docstring)."""

    def __init__(self, config: SearchSinkConfig, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> None:
        self.config = config
        self.sleep = sleep
        self.clock = clock
        self.rng = rng or random.Random()

    def write(self, client: SearchClient, actions: Sequence[dict[str, Any]]) -> BulkOutcome:
        """Send ``actions`` until each is acknowledged or rejected.

        Raises:
            RetriesExhausted: when some are neither after ``max.retries`` retries or ``flush.timeout.ms``.
            ConnectException: when the cluster refuses the request itself (bad credentials, say).
        """
        config = self.config
        outcome = BulkOutcome()
        pending = list(range(len(actions)))
        deadline = self.clock() + config.flush_timeout_ms / 1000.0
        attempt = 0
        while pending:
            outcome.rounds += 1
            retry: list[int] = []
            last_reason = ""
            done = 0
            try:
                for position, (_, result) in zip(pending, client.bulk((actions[i] for i in pending), config)):
                    done += 1
                    verdict, reason = classify(result)
                    if verdict == RETRY:
                        retry.append(position)
                        last_reason = reason
                    elif verdict == REJECTED:
                        outcome.rejected.append((position, reason))
            except client.transport_errors as e:  # the rest of this round got no answer
                retry.extend(pending[done:])
                last_reason = f"no answer from the cluster: {type(e).__name__}: {e}"
            except Exception as e:
                status = getattr(e, "status_code", None) or getattr(e, "status", None)
                if isinstance(status, int) and (status == 429 or status >= 500):
                    retry.extend(pending[done:])
                    last_reason = f"HTTP {status}: {e}"
                else:
                    raise ConnectException(f"{config.connector_name}: the cluster refused a bulk request: "
                                           f"{type(e).__name__}: {e}") from e
            pending = retry
            if not pending:
                break
            attempt += 1
            wait = self.rng.uniform(0, backoff_bound(config, attempt))
            if attempt > config.max_retries or self.clock() + wait > deadline:
                raise RetriesExhausted(f"{config.connector_name}: {len(pending)} of {len(actions)} documents "
                                       f"unacknowledged after {attempt - 1} retries: {last_reason}")
            log.warning("%s: %d documents to retry (attempt %d of %d) in %.2f s: %s", config.connector_name,
                        len(pending), attempt, config.max_retries, wait, last_reason)
            self.sleep(wait)
        return outcome
