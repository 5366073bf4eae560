"""The exceptions of the plugin contract.

Every error connect_spark raises derives from :class:`ConnectException`, the names Kafka Connect users
know. What the runtime does with each is part of the contract:

* :class:`RetriableException` from ``SinkTask.put``: the same records are delivered again after
  ``context.timeout(ms)`` (or the runtime's default back-off), and no offset advances meanwhile.
  From a converter or a transformation it is retried for up to ``errors.retry.timeout``.
* :class:`UnavailableException` (a ``RetriableException``) from a converter or a transformation: a
  service it needs (a schema registry) cannot be reached. Retried like any ``RetriableException``; when
  the retries run out the task fails, since the record itself is fine: it is never skipped nor sent to
  the dead letter queue.
* :class:`DataException` from a converter or a transformation: the record failed; ``errors.tolerance``
  decides whether the task fails or the record is skipped (and sent to the dead letter queue).
* :class:`ConfigException`: a configuration is invalid; raised before anything starts.
* any other exception from a task hook: the task is FAILED, after a final commit of the work that was
  already accepted. Under a restart policy (``errors.restart.max.attempts``) it is restarted after a
  back-off, unless it is a :class:`ConfigException` or a :class:`NonRestartableException`.
"""

from __future__ import annotations

__all__ = [
    "ConnectException",
    "RetriableException",
    "UnavailableException",
    "DataException",
    "ConfigException",
    "IllegalWorkerStateException",
    "NonRestartableException",
]


class ConnectException(Exception):
    """Root of every connect_spark exception."""


class RetriableException(ConnectException):
    """A failure that may succeed if the same operation is tried again (a timeout, a busy sink)."""


class UnavailableException(RetriableException):
    """A service the data depends on (a schema registry) cannot be reached or refused the request.

    Retried under ``errors.retry.timeout``; when that runs out the task fails instead of the record: the
    record is never skipped nor written to the dead letter queue because of it.
    """


class DataException(ConnectException):
    """A record's data could not be converted, transformed or written (bad bytes, wrong type)."""


class ConfigException(ConnectException):
    """An invalid configuration.

    Args:
        message: what is wrong. When ``name`` is given the message is built as
            ``Invalid value <value> for configuration <name>: <message>``, as Kafka's does.
        name: the configuration key, if the error concerns one key.
        value: the offending value.
    """

    def __init__(self, message: str, name: str | None = None, value: object = None) -> None:
        self.key = name
        self.value = value
        self.reason = message
        if name is not None:
            message = f"Invalid value {value!r} for configuration {name}: {message}"
        super().__init__(message)


class IllegalWorkerStateException(ConnectException):
    """A task asked the runtime for something its current state does not allow.

    For example pausing a partition that is not assigned to it, or asking for the assignment
    before the first ``open``.
    """


class NonRestartableException(ConnectException):
    """A failure a restart cannot cure (revoked permissions, a table dropped on purpose).

    A task raises it (or an exception caused by it) to stay FAILED even under a restart policy: the
    runtime never restarts a connector automatically after it, only a person can.
    """
