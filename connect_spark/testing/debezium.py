"""Real Debezium for tests: Apache Kafka Connect running Debezium's PostgreSQL connector on loopback.

The change data capture tests (``tests/integration/test_cdc_postgres.py``, through the module fixture
``debezium`` in ``tests/conftest.py``) need the change events a Debezium user's topics hold, made by
Debezium itself, not imitated. :class:`DebeziumWorker` runs Kafka Connect's standalone worker
(``org.apache.kafka.connect.cli.ConnectStandalone``, from the ``kafka-connect`` jars) with
``plugin.path`` holding Debezium's PostgreSQL connector (the ``debezium/postgres`` artifact set), its REST
API on 127.0.0.1, its source offsets in a file. Connectors are added and removed through that REST API, so
one worker serves a whole test module::

    with DebeziumWorker(tmp_dir, bootstrap_servers) as worker:
        worker.add_connector("inventory", postgres_source(postgres, "shop", ["public.orders"], "shop"))
        ... change the tables ...
        worker.wait_until_streamed(postgres.conninfo("shop"), "shop")  # every change so far is in Kafka

:func:`postgres_source` writes the connector configuration a Debezium user writes (``pgoutput``, a
replication slot of its own, key and value as JSON with schemas, everything else Debezium's defaults).
:meth:`DebeziumWorker.wait_until_streamed` waits for a marker: a transactional logical decoding message
emitted in the source database, which Debezium streams after every change committed before it, to the
topic ``<topic.prefix>.message``. The source tables themselves are left alone.

The source database needs ``wal_level=logical`` (the session's :class:`~connect_spark.testing.postgres.
LocalPostgres` has it). Starting, stopping and the worker's log are :mod:`connect_spark.localprocess`'s.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.config.properties import format_properties
from connect_spark.localprocess import LocalProcess, free_port

if TYPE_CHECKING:
    from connect_spark.testing.postgres import LocalPostgres

__all__ = ["DebeziumError", "DebeziumWorker", "postgres_source", "table_topic", "drop_replication_slot",
           "POSTGRES_CONNECTOR", "JSON_CONVERTER"]

log = logging.getLogger(__name__)

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
MIN_JAVA = 17
"""Debezium 3 and Kafka Connect 4 need Java 17."""
MARKER_PREFIX = "connect_spark.streamed."
"""The prefix of the logical decoding messages :meth:`DebeziumWorker.wait_until_streamed` emits."""


class DebeziumError(ConnectException):
    """The Debezium worker could not start, a connector failed, or a wait timed out; the message says why."""


def postgres_source(postgres: "LocalPostgres", database: str, tables: Iterable[str], topic_prefix: str,
                    slot: str | None = None, **overrides: str) -> dict[str, str]:
    """The configuration of a Debezium PostgreSQL connector, as a Debezium user writes it.

    ``plugin.name=pgoutput`` (PostgreSQL's own logical decoding output), a replication slot named for the
    connector, the tables to capture, JSON with schemas for key and value (so a sink sees Debezium's schema
    names, ``io.debezium.time.MicroTimestamp`` and the like). Everything else keeps Debezium's default:
    an initial snapshot, ``decimal.handling.mode=precise``, ``time.precision.mode=adaptive``, deletes
    followed by a tombstone, truncates skipped, the publication ``dbz_publication`` for all tables.

    Args:
        postgres: the server (its port on 127.0.0.1; user ``postgres``, trusted, so no password).
        database: the database holding the tables (a connector captures one database).
        tables: ``schema.table`` names (``table.include.list``).
        topic_prefix: ``topic.prefix``; a table's topic is ``<prefix>.<schema>.<table>`` (:func:`table_topic`).
        slot: the replication slot (letters, digits, ``_``); default ``<topic_prefix>`` with ``_`` for the
            rest. Slots are server-wide: every connector needs its own.
        overrides: more connector keys, with ``_`` for ``.`` (``snapshot_mode="never"``).
    """
    slot = slot or "".join(c if c.isalnum() else "_" for c in topic_prefix.lower())
    config = {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": "127.0.0.1",
        "database.port": str(postgres.port),
        "database.user": "postgres",
        "database.dbname": database,
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "table.include.list": ",".join(tables),
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
    }
    config.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return config


def table_topic(topic_prefix: str, table: str, schema: str = "public") -> str:
    """The topic Debezium writes ``schema.table``'s change events to."""
    return f"{topic_prefix}.{schema}.{table}"


def drop_replication_slot(conninfo: str, slot: str, timeout: float = 30.0) -> bool:
    """Drop ``slot`` once no connection uses it (after its connector was removed); False if there is none.

    A slot left behind keeps the server's write-ahead log from being recycled.
    """
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while True:
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            if row is None:
                return False
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return True
            if time.monotonic() > deadline:
                raise DebeziumError(f"Replication slot {slot} is still in use after {timeout:.0f} s")
            time.sleep(0.2)


class DebeziumWorker(LocalProcess):
    """One Kafka Connect standalone worker with Debezium's PostgreSQL connector on its plugin path.

    Args:
        data_dir: folder for the worker's configuration, source offsets and log (``connect.log``).
        bootstrap_servers: the Kafka broker the change events go to.
        heap: JVM heap (``-Xmx``); small, for 2-core test machines.

    Use as a context manager, or call :meth:`start` and :meth:`stop` (SIGTERM: the worker stops its
    connectors, Debezium closes its replication connection).
    """

    name = "Debezium worker"
    error = DebeziumError
    log_name = "connect.log"
    state_file = "debezium.json"
    state_key = "url"
    stop_timeout = 30.0

    def __init__(self, data_dir: str | os.PathLike[str], bootstrap_servers: str, heap: str = "256m") -> None:
        super().__init__(data_dir)
        self.bootstrap_servers = bootstrap_servers
        self.heap = heap
        self.port = 0

    @property
    def url(self) -> str:
        """The worker's REST API."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.url

    def worker_properties(self) -> dict[str, str]:
        """The worker's configuration: JSON with schemas for keys and values, Debezium on the plugin path."""
        from connect_spark.jvm import DEBEZIUM_POSTGRES

        return {
            "bootstrap.servers": self.bootstrap_servers,
            "key.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": "true",
            "value.converter": JSON_CONVERTER,
            "value.converter.schemas.enable": "true",
            "offset.storage.file.filename": str(self.data_dir / "connect.offsets"),
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
            "plugin.path": str(DEBEZIUM_POSTGRES.folder().parent),
            # Debezium's and Kafka's jars declare their plugins (META-INF/services): no reflective scan.
            "plugin.discovery": "service_load",
        }

    def start(self, timeout: float = 120.0) -> "DebeziumWorker":
        """Start the worker (no connectors yet) and wait until its REST API answers.

        Raises:
            DebeziumError: no Java 17, the jars are not resolved, or the worker died or did not answer in
                time (the message carries the end of its log).
        """
        if self._process is not None:
            raise DebeziumError(f"The Debezium worker in {self.data_dir} is already running (pid {self.pid}).")
        from connect_spark.jvm import DEBEZIUM_POSTGRES, KAFKA_CONNECT
        from connect_spark.jvm.java import JavaNotFoundError, find_java

        try:
            java = find_java(MIN_JAVA, "Kafka Connect with Debezium")
        except JavaNotFoundError as e:
            raise DebeziumError(str(e)) from e
        for artifacts in (KAFKA_CONNECT, DEBEZIUM_POSTGRES):
            if not any(artifacts.folder().glob("*.jar")):
                raise DebeziumError(f"No jars in {artifacts.folder()}: run `connect-spark jars` first.")
        self.port = free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        worker_file, log4j = self.data_dir / "worker.properties", self.data_dir / "log4j2.properties"
        worker_file.write_text(format_properties(self.worker_properties()))
        log4j.write_text("status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
                         "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
                         "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = STDOUT\n"
                         "logger.reflections.name = org.reflections\nlogger.reflections.level = ERROR\n")
        command = [java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
                   f"-Dlog4j2.configurationFile={log4j}", "-cp", str(KAFKA_CONNECT.folder() / "*"),
                   "org.apache.kafka.connect.cli.ConnectStandalone", str(worker_file)]
        self._launch(command, timeout, detach=False)
        return self

    # -- connectors ---------------------------------------------------------------------------------

    def add_connector(self, name: str, config: Mapping[str, str], timeout: float = 120.0) -> None:
        """Create (or reconfigure) connector ``name`` and wait until it and its task run.

        Raises:
            DebeziumError: the worker refused the configuration, or the connector or its task failed
                (with Connect's trace) or did not run within ``timeout`` seconds.
        """
        self._request("PUT", f"/connectors/{name}/config", dict(config))
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(name)
            states = [status["connector"]["state"]] + [task["state"] for task in status.get("tasks", [])]
            if status.get("tasks") and all(state == "RUNNING" for state in states):
                log.info("Debezium connector %s running", name)
                return
            self._raise_if_failed(name, status)
            if time.monotonic() > deadline:
                raise DebeziumError(f"Connector {name} not running after {timeout:.0f} s: {status}\n{self._log_tail()}")
            time.sleep(0.3)

    def status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/<name>/status``: the connector's and its tasks' states (and traces)."""
        return self._request("GET", f"/connectors/{name}/status")

    def remove_connector(self, name: str) -> None:
        """Delete connector ``name`` (its replication slot stays: :func:`drop_replication_slot`)."""
        self._request("DELETE", f"/connectors/{name}")

    def wait_until_streamed(self, conninfo: str, topic_prefix: str, connector: str | None = None,
                            timeout: float = 120.0) -> None:
        """Return once every change committed in the source database so far is in Kafka.

        Emits a transactional logical decoding message (``pg_logical_emit_message``) with a fresh prefix in
        the database ``conninfo`` names, then reads ``<topic_prefix>.message`` until Debezium has written it
        there. Debezium streams in commit order and its producer writes in send order, so the changes
        committed before the marker are written before it. A snapshot in progress finishes first: streaming
        starts after it.

        Args:
            conninfo: libpq connection string of the captured database.
            topic_prefix: the connector's ``topic.prefix``.
            connector: its name, to fail at once (with Connect's trace) when it or its task failed.
            timeout: seconds; a hang guard.

        Raises:
            DebeziumError: the connector failed, or the marker did not arrive within ``timeout`` seconds.
        """
        import psycopg

        token = f"{MARKER_PREFIX}{uuid.uuid4().hex}"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("SELECT pg_logical_emit_message(true, %s, %s)", (token, "streamed"))
        topic = f"{topic_prefix}.message"
        deadline = time.monotonic() + timeout
        while not self._topic_holds(topic, token.encode()):
            if connector is not None:
                self._raise_if_failed(connector, self.status(connector))
            if time.monotonic() > deadline:
                raise DebeziumError(f"Debezium did not stream the marker {token} to {topic} within {timeout:.0f} s"
                                    f"\n{self._log_tail()}")
            time.sleep(0.3)

    # -- internals ----------------------------------------------------------------------------------

    def _topic_holds(self, topic: str, needle: bytes) -> bool:
        from connect_spark.testing.kafka import read_topic

        return any(record.key is not None and needle in record.key
                   for record in read_topic(self.bootstrap_servers, topic))

    def _raise_if_failed(self, name: str, status: Mapping[str, Any]) -> None:
        parts = [status["connector"]] + list(status.get("tasks", []))
        failed = [part for part in parts if part.get("state") == "FAILED"]
        if failed:
            raise DebeziumError(f"Connector {name} failed: {failed[0].get('trace', '')[:4000]}")

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
        except urllib.error.HTTPError as e:
            raise DebeziumError(f"{method} {path} answered {e.code}: {e.read().decode(errors='replace')}") from e
        return json.loads(text) if text else None

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                with urllib.request.urlopen(self.url + "/connector-plugins", timeout=5) as response:
                    plugins = json.loads(response.read())
                if any(p.get("class") == POSTGRES_CONNECTOR for p in plugins):
                    return
                raise DebeziumError(f"The worker's plugins do not include {POSTGRES_CONNECTOR} "
                                    f"(plugin.path {self.worker_properties()['plugin.path']}): {plugins}")
            except (OSError, ValueError):
                time.sleep(0.5)
        raise DebeziumError(f"The Debezium worker did not answer on {self.url} within {timeout:.0f} s. "
                            f"End of {self.log_file}:\n{self._log_tail()}")
