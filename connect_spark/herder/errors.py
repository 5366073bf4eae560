"""Errors the herder raises for requests it refuses; each carries the HTTP status Kafka Connect answers with.

The REST layer turns them into ``{"error_code": <status>, "message": "..."}`` bodies.
"""

from __future__ import annotations

from connect_spark.api.errors import ConnectException

__all__ = ["HerderError", "NotFoundError", "AlreadyExistsError", "BadRequestError", "ConflictError"]


class HerderError(ConnectException):
    """A request the herder refused. ``status_code`` is the HTTP status of the REST answer."""

    status_code = 500


class NotFoundError(HerderError):
    """An unknown connector or task (404)."""

    status_code = 404


class AlreadyExistsError(HerderError):
    """A connector with that name exists already (409)."""

    status_code = 409


class BadRequestError(HerderError):
    """An invalid configuration or request body, or a request the connector's state does not allow (400)."""

    status_code = 400


class ConflictError(HerderError):
    """The request cannot be served right now, e.g. the worker is stopping (409)."""

    status_code = 409
