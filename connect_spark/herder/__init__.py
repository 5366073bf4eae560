"""The herder of a distributed-mode worker: owns connectors through :class:`ConnectorHandle` and serves the REST API.

* :mod:`.herder`: :class:`Herder` (requests write intent to the stores; one supervisor thread reconciles);
* :mod:`.handle`: the :class:`ConnectorHandle` protocol and :class:`RunnerHandle`, its adapter over ConnectorRunner;
* :mod:`.errors`: refused requests, with their HTTP status;
* :mod:`.distributed`: ``connect-spark distributed worker.properties``.
"""

from connect_spark.herder.errors import AlreadyExistsError, BadRequestError, ConflictError, HerderError, NotFoundError
from connect_spark.herder.handle import ConnectorHandle, RunnerHandle, TaskFailure
from connect_spark.herder.herder import ConnectorStatus, Herder

__all__ = ["Herder", "ConnectorStatus", "ConnectorHandle", "RunnerHandle", "TaskFailure", "HerderError",
           "NotFoundError", "AlreadyExistsError", "BadRequestError", "ConflictError"]
