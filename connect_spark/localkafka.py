"""A real single-node Apache Kafka broker (KRaft, combined broker and controller) on loopback.

Started from the Kafka jars resolved by :mod:`connect_spark.jvm`, exactly as Kafka's own scripts do:
``kafka.tools.StorageTool format`` on a fresh data folder, then ``kafka.Kafka server.properties``. It
serves the pytest session fixture, the demo and ``connect-spark dev-kafka start|stop``.

It binds to 127.0.0.1 only, on free ports unless told otherwise, with a bounded heap, and answers
before :meth:`LocalKafkaBroker.start` returns. Given ``sasl_users``, it also serves a SASL_PLAINTEXT
listener (mechanism PLAIN) for those users, next to its plaintext one (tests of the security settings).
Given ``tls`` (:class:`connect_spark.testing.tls.TlsMaterial`), it also serves an SSL listener that
requires a client certificate (mutual TLS) and a SASL_SSL listener (SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN
for ``tls_users``, whose SCRAM credentials are written when the storage is formatted; OAUTHBEARER with
Kafka's default validator, which accepts unsecured tokens).
Starting, stopping and the ``broker.json`` of a detached start are :mod:`connect_spark.localprocess`'s.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from connect_spark.api.errors import ConnectException
from connect_spark.jvm.java import find_java
from connect_spark.localprocess import LocalProcess, free_port

if TYPE_CHECKING:
    from connect_spark.testing.tls import TlsMaterial

__all__ = ["BrokerError", "LocalKafkaBroker", "free_port"]

log = logging.getLogger(__name__)


class BrokerError(ConnectException):
    """The local broker could not start or stop; the message says why."""


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class LocalKafkaBroker(LocalProcess):
    """One Kafka broker process in KRaft mode, owned by whoever started it.

    Args:
        data_dir: folder for the broker's logs, metadata and its own log file; wiped at start.
        port: client port (0 = a free port).
        controller_port: KRaft controller port (0 = a free port).
        heap: JVM heap (``-Xmx``/``-Xms``); small by default for 2-core test machines.
        extra_properties: more ``server.properties`` entries.
        sasl_users: ``{username: password}`` accepted by an extra SASL_PLAINTEXT listener (mechanism
            PLAIN) at :attr:`sasl_bootstrap_servers`; ``None`` for no such listener.
        sasl_port: port of that listener (0 = a free port).
        tls: keys and stores of SSL (client certificate required) and SASL_SSL listeners at
            :attr:`ssl_bootstrap_servers` and :attr:`sasl_ssl_bootstrap_servers`; ``None`` for none.
        tls_users: ``{username: password}`` of the SASL_SSL listener (SCRAM-SHA-256/512 and PLAIN; it also
            takes OAUTHBEARER, with unsecured tokens).

    Use as a context manager, or call :meth:`start` and :meth:`stop` (process plumbing:
    :class:`~connect_spark.localprocess.LocalProcess`).
    """

    name = "Kafka broker"
    error = BrokerError
    log_name = "server.log"
    state_file = "broker.json"
    state_key = "bootstrap.servers"
    stop_timeout = 30.0

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int = 0,
        controller_port: int = 0,
        heap: str = "512m",
        extra_properties: dict[str, str] | None = None,
        sasl_users: dict[str, str] | None = None,
        sasl_port: int = 0,
        tls: "TlsMaterial | None" = None,
        tls_users: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir)
        self.port = port
        self.controller_port = controller_port
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self.sasl_users = dict(sasl_users) if sasl_users is not None else None
        self.sasl_port = sasl_port
        self.tls = tls
        self.tls_users = dict(tls_users or {})
        self.ssl_port = 0
        self.sasl_ssl_port = 0

    # -- public -----------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.bootstrap_servers

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT (PLAIN) listener's address; only for a broker given ``sasl_users``."""
        if self.sasl_users is None:
            raise BrokerError("This broker has no SASL listener: create it with sasl_users={user: password}")
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def ssl_bootstrap_servers(self) -> str:
        """The SSL listener's address (a client certificate signed by the test CA is required)."""
        if self.tls is None:
            raise BrokerError("This broker has no TLS listeners: create it with tls=make_tls_material(...)")
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        """The SASL_SSL listener's address (SCRAM-SHA-256/512 and PLAIN for ``tls_users``)."""
        if self.tls is None:
            raise BrokerError("This broker has no TLS listeners: create it with tls=make_tls_material(...)")
        return f"127.0.0.1:{self.sasl_ssl_port}"

    def start(self, timeout: float = 90.0, detach: bool = False) -> "LocalKafkaBroker":
        """Format storage, start the broker and wait until it answers metadata requests.

        Args:
            timeout: seconds to wait for the broker to answer.
            detach: start the JVM in its own session so it outlives this Python process (the
                ``dev-kafka`` command); its pid and address are written to ``broker.json``.

        Raises:
            BrokerError: the jars are missing, a port is taken, or the broker died or did not answer
                in time; the message carries the end of the broker's log.
        """
        if self._process is not None:
            raise BrokerError(f"The broker in {self.data_dir} is already running (pid {self._process.pid}).")
        classpath = self._classpath()
        java = find_java(17, "The local Kafka broker")
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        ports = [self.port, self.controller_port]
        if self.sasl_users is not None:
            self.sasl_port = self.sasl_port or free_port()
            ports.append(self.sasl_port)
        if self.tls is not None:
            self.ssl_port = self.ssl_port or free_port()
            self.sasl_ssl_port = self.sasl_ssl_port or free_port()
            ports += [self.ssl_port, self.sasl_ssl_port]
        for port in ports:
            if _port_in_use(port):
                raise BrokerError(f"Cannot start the Kafka broker: port 127.0.0.1:{port} is already in use.")

        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        (self.data_dir / "logs").mkdir(parents=True)
        config = self._write_config()
        log4j = self._write_log4j()
        jvm_flags = [
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.data_dir}",
        ]
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        fmt = subprocess.run(
            [java, *jvm_flags, "-cp", classpath, "kafka.tools.StorageTool", "format",
             f"--cluster-id={cluster_id}", "-c", str(config), *self._scram_arguments()],  # "=": an id may start with "-"
            capture_output=True,
            text=True,
        )
        if fmt.returncode != 0:
            raise BrokerError(f"Formatting Kafka storage failed:\n{(fmt.stdout + fmt.stderr)[-3000:]}")

        self._launch([java, *jvm_flags, "-cp", classpath, "kafka.Kafka", str(config)], timeout, detach)
        return self

    @classmethod
    def detached_address(cls, data_dir: str | os.PathLike[str]) -> str | None:
        """The bootstrap address of a broker started with ``detach=True``, or None."""
        state = cls._detached_state(data_dir)
        return state[cls.state_key] if state is not None else None

    # -- internals --------------------------------------------------------------------------

    def _classpath(self) -> str:
        from connect_spark.jvm import KAFKA_BROKER, jar_paths
        from connect_spark.jvm.resolver import JarResolutionError

        try:
            jars = jar_paths(KAFKA_BROKER)
        except JarResolutionError as e:
            raise BrokerError(f"Cannot start the Kafka broker: {e}") from e
        return os.pathsep.join(str(j) for j in jars)

    def _write_config(self) -> Path:
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            # Keep every record: tests and demos produce records with old timestamps, which time-based
            # retention would delete within minutes.
            "log.retention.ms": "-1",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.threads": "1",
        }
        if self.sasl_users is not None:
            properties.update(self._sasl_properties())
        if self.tls is not None:
            properties.update(self._tls_properties(properties))
        properties.update(self.extra_properties)
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        return path

    def _sasl_properties(self) -> dict[str, str]:
        """The SASL_PLAINTEXT listener next to PLAINTEXT (brokers still talk to each other in plaintext)."""
        assert self.sasl_users is not None
        users = " ".join(f'user_{name}="{_jaas_quoted(password)}"' for name, password in self.sasl_users.items())
        return {
            "listeners": (f"PLAINTEXT://127.0.0.1:{self.port},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                          f"CONTROLLER://127.0.0.1:{self.controller_port}"),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        }

    def _tls_properties(self, properties: dict[str, str]) -> dict[str, str]:
        """SSL (client certificate required) and SASL_SSL listeners added to the ones ``properties`` has."""
        assert self.tls is not None
        tls = self.tls
        users = " ".join(f'user_{name}="{_jaas_quoted(password)}"' for name, password in self.tls_users.items())
        listeners = properties["listeners"].replace(
            "CONTROLLER://", f"SSL://127.0.0.1:{self.ssl_port},SASL_SSL://127.0.0.1:{self.sasl_ssl_port},CONTROLLER://")
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            "listeners": listeners,
            "advertised.listeners": (f"{properties['advertised.listeners']},SSL://127.0.0.1:{self.ssl_port},"
                                     f"SASL_SSL://127.0.0.1:{self.sasl_ssl_port}"),
            "listener.security.protocol.map": f"{properties['listener.security.protocol.map']},SSL:SSL,SASL_SSL:SASL_SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.broker_keystore),
            "ssl.keystore.password": tls.store_password,
            "ssl.key.password": tls.store_password,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_pem),
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
            "sasl.enabled.mechanisms": ",".join(filter(None, [properties.get("sasl.enabled.mechanisms"),
                                                              "SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"])),
            # Kafka's default OAUTHBEARER validator accepts unsecured (unsigned) tokens: a development broker.
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="broker";',
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        }

    def _scram_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create the SCRAM credentials of ``tls_users``."""
        if self.tls is None:
            return []
        arguments = []
        for name, password in self.tls_users.items():
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                arguments += ["--add-scram", f'{mechanism}=[name={name},password="{_jaas_quoted(password)}"]']
        return arguments

    def _write_log4j(self) -> Path:
        path = self.data_dir / "log4j2.properties"
        path.write_text(
            "status = warn\n"
            "appender.out.type = Console\n"
            "appender.out.name = STDOUT\n"
            "appender.out.layout.type = PatternLayout\n"
            "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.out.ref = STDOUT\n"
            "logger.kafka.name = kafka\nlogger.kafka.level = WARN\n"
            "logger.apache.name = org.apache.kafka\nlogger.apache.level = WARN\n"
            "logger.server.name = kafka.server.KafkaRaftServer\nlogger.server.level = INFO\n"
        )
        return path

    def _wait_until_ready(self, timeout: float) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            if not _accepts_connections(self.port):
                time.sleep(0.2)
                continue
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5000,
                                         client_id="connect-spark-readiness")
                try:
                    admin.describe_cluster()
                    return
                finally:
                    admin.close()
            except (KafkaError, OSError) as e:
                last_error = e
                time.sleep(0.5)
        raise BrokerError(
            f"The Kafka broker did not answer at {self.bootstrap_servers} within {timeout:.0f} s "
            f"(last error: {last_error!r}). End of {self.log_file}:\n{self._log_tail()}"
        )


def _jaas_quoted(value: str) -> str:
    """``value`` escaped for a double-quoted JAAS option value."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _accepts_connections(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0
