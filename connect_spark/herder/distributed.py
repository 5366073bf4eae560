"""``connect-spark distributed worker.properties``: a long-running driver with the REST API and no connectors.

Connectors are created through the REST API, kept in ``config.storage.topic`` and come back, with their
last target state, when the worker restarts. What :func:`run_distributed` does, in order:

1. validate the worker configuration (exit 2 with every problem listed, before anything starts);
2. start the offset, config and status stores (creating their compacted topics when missing);
3. bind the REST listener (``listeners``, default ``http://127.0.0.1:8083``) and start serving;
4. with ``group.id`` set, join the worker group (:class:`~connect_spark.herder.membership.WorkerGroup`): the
   group's leader assigns every connector to exactly one member;
5. run the herder's supervisor in the main thread until SIGINT/SIGTERM (or :meth:`DistributedWorker.request_stop`);
6. stop every connector (final commit), leave the group, stop the REST server and the stores; exit 0.

The SparkSession is built when the first connector starts, from the worker's ``spark.*`` keys.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import PropsSource, validate_configs
from connect_spark.runtime.worker.jvm_signals import JvmStopSignals

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connect_spark.config.worker import WorkerConfig

__all__ = ["DistributedWorker", "run_distributed", "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_CONFIG"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_CONFIG = 2


def _kafka_cluster_id(worker: "WorkerConfig") -> str | None:
    from kafka import KafkaAdminClient

    from connect_spark.kafka.clients import accepted_kwargs, kafka_client_kwargs

    try:
        admin = KafkaAdminClient(**accepted_kwargs(KafkaAdminClient, {
            **kafka_client_kwargs(worker.kafka_client_config()), "bootstrap_servers": worker.bootstrap_servers,
            "client_id": "connect-spark-info"}))
        try:
            return admin.describe_cluster().get("cluster_id")
        finally:
            admin.close()
    except Exception as e:
        log.warning("Cannot read the Kafka cluster id: %s", e)
        return None


class DistributedWorker:
    """The stores, the herder and the REST server of one distributed-mode worker.

    Args:
        worker: the validated worker configuration.
        spark: an existing session to run connectors in; built on first use otherwise.
    """

    def __init__(self, worker: "WorkerConfig", spark: "SparkSession | None" = None) -> None:
        self.worker = worker
        self._spark = spark
        self._spark_lock = threading.Lock()
        self.herder: Any = None
        self.server: Any = None
        self.group: Any = None
        self._stop_requested = threading.Event()
        #: Set by :func:`run_distributed` when this process owns its signals: SIGTERM/SIGINT to Spark's
        #: driver JVM then stop gracefully too, once the worker built its session (see
        #: :mod:`~connect_spark.runtime.worker.jvm_signals`).
        self.stop_on_jvm_signals = False
        self._jvm_signals: JvmStopSignals | None = None

    def _session(self) -> "SparkSession":
        with self._spark_lock:
            if self._spark is None:
                from connect_spark.spark_session import get_or_create_session

                # built from the herder's thread, the main one: Ctrl-C stays run_distributed's graceful stop
                self._spark = get_or_create_session(None, app_name="connect-spark-distributed",
                                                    conf=self.worker.spark_conf(), keep_interrupt_handler=True)
                if self.stop_on_jvm_signals:
                    self._jvm_signals = JvmStopSignals.install(self._spark, self.request_stop)
            return self._spark

    def request_stop(self) -> None:
        """Ask for a graceful stop (every connector commits and stops). Safe from signal handlers."""
        if self.herder is not None:
            self.herder.request_stop()
        self._stop_requested.set()

    def run(self) -> int:
        """Start everything, supervise until a stop is requested, stop everything; returns the exit code."""
        from connect_spark.herder.handle import RunnerHandle
        from connect_spark.herder.herder import Herder
        from connect_spark.rest.app import create_app
        from connect_spark.rest.server import RestServer
        from connect_spark.storage.owner import build_offset_store
        from connect_spark.status.stores import config_store_for, status_store_for

        worker = self.worker
        offset_store = build_offset_store(worker, lambda: self.group is not None and self.group.fenced())
        config_store = config_store_for(worker)
        status_store = status_store_for(worker)
        started: list[Any] = []
        try:
            for store in (offset_store, config_store, status_store):
                store.start()
                started.append(store)
            listener = worker.listeners[0]
            # Bind first: the worker id names the port actually bound (port 0 picks one).
            server = RestServer(None, listener)
            host = worker.rest_advertised_host_name or ("127.0.0.1" if server.host in ("0.0.0.0", "::") else server.host)
            worker_id = f"{host}:{server.port}"
            offset_store.worker_id = worker_id
            if worker.group_id:
                from connect_spark.herder.membership import WorkerGroup

                self.group = WorkerGroup(worker, worker_id, f"http://{worker_id}", config_store, status_store,
                                         lambda: self.herder.assignment_changed() if self.herder else None)
            # every offset write, the runners' and the REST API's, goes through the owner: fenced in one place
            self.herder = Herder(worker, config_store, status_store, offset_store,
                                 lambda config: RunnerHandle(self._session, worker, config, offset_store), worker_id,
                                 group=self.group)
            server.app = create_app(self.herder, worker.rest_basic_auth, _kafka_cluster_id(worker))
            self.server = server
            if self.group is not None:  # joined before serving: GET / then names the group's leader
                self.group.start()
            server.start()
            if self._stop_requested.is_set():
                self.herder.request_stop()
            log.info("Distributed worker %s running; connectors: %s", worker_id,
                     ", ".join(config_store.connectors()) or "(none yet)")
            self.herder.run()
        finally:
            if self.group is not None:  # after the herder's final commits: the leader moves them at once
                self.group.close()
            if self._jvm_signals is not None:
                self._jvm_signals.close()
            if self.server is not None:
                self.server.stop()
            for store in reversed(started):
                try:
                    store.stop()
                except Exception as e:
                    log.warning("Stopping %s raised %r", type(store).__name__, e)
        return EXIT_OK


def run_distributed(worker_props: PropsSource, spark: "SparkSession | None" = None) -> int:
    """Validate the worker configuration, then run a distributed worker until SIGINT/SIGTERM; return the exit code."""
    try:
        worker, _ = validate_configs(worker_props, [])
    except ConfigValidationError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_CONFIG
    distributed = DistributedWorker(worker, spark)
    if threading.current_thread() is threading.main_thread():
        distributed.stop_on_jvm_signals = spark is None  # a session passed in keeps its JVM's ways
        def handler(signum: int, frame: Any) -> None:
            log.info("Received %s: stopping every connector gracefully", signal.Signals(signum).name)
            distributed.request_stop()

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
    return distributed.run()
