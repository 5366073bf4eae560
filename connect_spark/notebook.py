"""The notebook entry point: run connectors in the notebook's own SparkSession, without blocking the cell.

    from connect_spark.notebook import start_connector

    query = start_connector(spark, {
        "name": "orders-to-delta", "connector.class": "DeltaSink", "topics": "orders",
        "delta.table.path": "/tmp/orders",
    }, worker={"bootstrap.servers": "broker:9092", "checkpoint.location": "/tmp/checkpoints"})
    query.lastProgress          # Spark's progress of the connector's streaming query
    query.stop()                # finish the batch in flight, pre_commit, close, commit, stop

The returned :class:`ConnectorQuery` behaves like Spark's ``StreamingQuery`` (``isActive``,
``awaitTermination``, ``stop``, ``exception``, ``lastProgress``, ``recentProgress``, ``status``) while the
runtime's supervisor runs in a background thread. With ``available_now=True`` it drains what is in the
topics, commits and ends on its own (``awaitTermination()`` returns when it has).

A Spark Connect session (serverless and shared-access notebooks, ``SparkSession.builder.remote``) works the
same way: the ``foreachBatch`` function is then a self-contained object that builds the connector's tasks
in the server's Python process (:mod:`connect_spark.runtime.processors.remote_batches`, ``docs/spark-connect.md``).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.config.properties import load_properties
from connect_spark.config.validation import validate_configs
from connect_spark.runtime.worker.standalone import EXIT_OK, StandaloneWorker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["start_connector", "ConnectorQuery", "settings_from_widgets"]

log = logging.getLogger(__name__)


def _props(source: Mapping[str, Any] | str | None) -> dict[str, str]:
    if source is None:
        return {}
    if isinstance(source, str):
        return dict(load_properties(source))
    return {str(k): str(v) for k, v in source.items()}


def settings_from_widgets(dbutils: Any, defaults: Mapping[str, Any], argv: list[str] | None = None) -> dict[str, str]:
    """A notebook's settings: ``defaults`` overridden by Databricks widgets, or by ``key=value`` arguments.

    Called at the top of a notebook (see ``jobs/notebooks/``). On Databricks, pass the notebook's
    ``dbutils``: a text widget is declared for every key (its default shown in the UI, and job
    parameters of the same name filling it) and its value read back. Run as a plain script (no
    ``dbutils``: pass ``None``), ``key=value`` command-line arguments (``argv``, default ``sys.argv[1:]``)
    override the defaults instead.

    Raises:
        ConfigException: an argument is not ``key=value``, or names a key ``defaults`` does not have.
    """
    settings = {str(k): str(v) for k, v in defaults.items()}
    if dbutils is not None:
        for key, default in settings.items():
            dbutils.widgets.text(key, default)
        return {key: str(dbutils.widgets.get(key)) for key in settings}
    import sys

    from connect_spark.api.errors import ConfigException

    for arg in sys.argv[1:] if argv is None else argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise ConfigException("a notebook argument must be key=value", "argument", arg)
        if key not in settings:
            raise ConfigException(f"not a setting of this notebook (known: {', '.join(sorted(settings))})",
                                  key, value)
        settings[key] = value
    return settings


def start_connector(
    spark: "SparkSession",
    connector: Mapping[str, Any] | str,
    worker: Mapping[str, Any] | str | None = None,
    available_now: bool = False,
    start_timeout: float = 300.0,
) -> "ConnectorQuery":
    """Validate, start one connector in ``spark`` and return at once with its query handle.

    Args:
        spark: the notebook's session, classic or Spark Connect (its Kafka source and Delta jars must be
            available, as on Databricks; locally, build it with
            ``connect_spark.spark_session.get_or_create_session``).
        connector: the connector's configuration, a dict or a ``.properties`` path.
        worker: the worker configuration (dict or path); ``spark.*`` keys are ignored since the session
            exists already.
        available_now: drain what is in the topics, commit and end.
        start_timeout: seconds to wait for the connector's first query to start.

    Raises:
        ConfigValidationError: the configuration is invalid (every problem listed); nothing started.
        ConnectException: the connector failed while starting.
    """
    worker_config, connectors = validate_configs(_props(worker), [_props(connector)])
    handle = ConnectorQuery(StandaloneWorker(worker_config, connectors, spark=spark, available_now=available_now))
    handle._start(start_timeout)
    return handle


class ConnectorQuery:
    """A running connector seen as a streaming query; created by :func:`start_connector`."""

    def __init__(self, worker: StandaloneWorker) -> None:
        self._worker = worker
        self._thread = threading.Thread(target=self._run, name=f"connect-spark-{self.name}", daemon=True)
        self.exit_code: int | None = None

    @property
    def name(self) -> str:
        return self._worker.connectors[0].name

    def _run(self) -> None:
        try:
            self.exit_code = self._worker.run()
        except BaseException:  # noqa: BLE001 - reported through exception()
            log.exception("Connector %s stopped with an error", self.name)
            self.exit_code = 1

    def _start(self, timeout: float) -> None:
        self._thread.start()
        self._worker.started.wait(timeout)
        error = self.exception()
        if error is not None:
            self._thread.join()
            raise error

    @property
    def query(self) -> "StreamingQuery | None":
        """The Spark streaming query of the connector's current checkpoint generation."""
        runners = self._worker.runners
        return runners[0].query if runners else None

    @property
    def isActive(self) -> bool:  # noqa: N802 - Spark's name
        return self._thread.is_alive()

    def awaitTermination(self, timeout: float | None = None) -> bool:  # noqa: N802 - Spark's name
        """Wait until the connector ended (drained, failed or stopped); False when ``timeout`` ran out."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self, timeout: float | None = None) -> None:
        """Graceful stop: the batch in flight finishes, then ``pre_commit``, ``close``, commit, ``stop``."""
        self._worker.request_stop()
        self._thread.join(timeout)

    def exception(self) -> BaseException | None:
        """The connector's failure, or ``None``."""
        failures = self._worker.failures
        return failures[0][1] if failures else None

    @property
    def succeeded(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def lastProgress(self) -> dict | None:  # noqa: N802 - Spark's name
        query = self.query
        return query.lastProgress if query is not None else None

    @property
    def recentProgress(self) -> list[dict]:  # noqa: N802 - Spark's name
        query = self.query
        return query.recentProgress if query is not None else []

    def metrics(self) -> dict | None:
        """The connector's Kafka Connect metrics and lag (as ``GET /connectors/{name}/metrics`` shows them)."""
        runners = self._worker.runners
        return runners[0].metrics() if runners else None

    @property
    def status(self) -> dict:
        query = self.query
        state = self._worker.runners[0].state if self._worker.runners else "UNASSIGNED"
        return {"connector": self.name, "state": state, **(query.status if query is not None else {})}
