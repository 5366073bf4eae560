"""The benchmark's arms: how each one is configured, launched, watched, stopped and checked.

Every arm runs as its own child process (its own JVM), one at a time, against the same broker and
topic; :mod:`jobs.bench.runner` decides when. An arm whose plugin does not resolve yet reports
``unavailable: <reason>`` instead of running.

* s — the ceiling of a Python record path: Spark's Kafka source → ``mapInArrow`` with a no-op function →
  the ``noop`` sink (:mod:`jobs.bench.ceiling_job`); c and d2 are reported as a share of it;
* a — plain Spark: ``readStream.format("kafka") → from_json → writeStream.format("delta")``
  (:mod:`jobs.bench.plain_spark_job`);
* b — connect_spark's Delta sink (``DeltaSink``), exactly-once, JsonConverter without schemas;
* c — connect_spark with a per-record Python task (:mod:`jobs.bench.per_record_sink`), StringConverter;
* d1 — Apache Kafka Connect's standalone worker with ``FileStreamSinkConnector`` and StringConverter;
* d2 — connect_spark's FileStreamSink-compatible connector, same configuration as d1;
* r — d2 in ``task.execution.mode=realtime`` (Spark 4.2's real-time mode, 1 s batches, commits from the executors
  every 200 ms, a task slot per partition); it streams even for a drain (real-time mode has no AvailableNow), and
  the runner stops it once drained;
* rj — connect_spark's JDBC sink (``JdbcSinkConnector``) in real-time mode, r's worker settings, into a PostgreSQL the
  arm starts on loopback at its first run (one table per run, ``insert.mode=insert``, ``auto.create=true``) and stops
  in :meth:`Arm.close`; the topic's schemaless JSON goes in through JsonConverter without schemas and
  ``fields.whitelist`` (the sink's explicit column list for schemaless values, typed from the first value);
* b1 — b on a topic where 1 % of the records need the per-record conversion path (written by another
  producer's serializer: keys in another order, a whole ``amount`` as an integer; valid, but the vectorized
  plan cannot prove them, see :func:`jobs.bench.records.record_value`);
* b2 — b0 (defaults, cold) on a topic where 1 % of the records are odd, with a dead letter queue: half
  of them write ``amount`` as a string (records of another type: to the DLQ), half are b1's (valid, but
  taken per record), as real topics carry them;
* a0, b0 — a and b with their defaults (no Spark setting, no batch bound, no execution mode): the wall
  time of a cold ``--available-now`` run, start-up included, is the figure to compare.

s, a, b, c and d2 get the same Spark settings (:attr:`BenchSettings.spark_conf`) and the same batch bound;
the connect_spark arms ask for ``task.execution.mode=executor``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

from jobs.bench import health
from jobs.bench.watchers import CommitWatcher, ConsumerGroupWatcher, SparkCheckpointWatcher

__all__ = ["BenchSettings", "RunSpec", "Launched", "Arm", "PlainSparkArm", "ConnectSparkArm", "KafkaConnectArm",
           "CeilingArm", "RealtimeArm", "RealtimeJdbcArm", "default_arms", "REPO_ROOT"]

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class BenchSettings:
    """What every arm shares. ``spark_conf`` goes to the sessions of arms s and a and to the worker of b, c, d2."""

    bootstrap_servers: str
    partitions: int
    max_offsets_per_trigger: int = 250_000
    trigger_ms: int = 1000
    offset_flush_interval_ms: int = 1000
    spark_conf: dict[str, str] = field(default_factory=lambda: {
        "spark.master": "local[2]",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
    })
    connect_heap: str = "-Xms256M -Xmx2G"  # what Kafka's connect-standalone.sh sets

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "bootstrap_servers"}


@dataclass
class RunSpec:
    """One run of one arm: its topic, a unique id (connector name, group, folders), its folder and the broker."""

    topic: str
    run_id: str
    work: Path
    available_now: bool
    bootstrap_servers: str = ""


class Launched:
    """A running arm: its process, the watcher of its commits, and how to check its output."""

    def __init__(self, process: subprocess.Popen, watcher: CommitWatcher,
                 check: Callable[[range], health.Health], log_file: Path) -> None:
        self.process = process
        self.watcher = watcher
        self.check = check
        self.log_file = log_file

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 90.0) -> int | None:
        """SIGTERM (each arm stops gracefully on it), SIGKILL after ``timeout``; then end any process
        of the arm's tree still left (Spark's JVM, Python workers). Returns the exit code."""
        try:
            leftovers = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            leftovers = []
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("pid %s did not stop in %.0f s: killing it", self.process.pid, timeout)
                self.process.kill()
                self.process.wait(30)
        for child in leftovers:
            try:
                child.wait(10)
            except psutil.TimeoutExpired:
                child.kill()
            except psutil.Error:
                pass
        return self.process.returncode

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    return env


def _spawn(command: list[str], work: Path) -> tuple[subprocess.Popen, Path]:
    log_file = work / "arm.log"
    with open(log_file, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=str(REPO_ROOT), env=_env())
    return process, log_file


class Arm:
    key: str = ""
    label: str = ""
    #: > 0: the arm reads a topic where every ``odd_every``-th record needs the per-record path
    odd_every: int = 0
    #: with ``odd_every``: half the odd records are of another type (dead letters), see ``record_value``
    odd_mix: bool = False
    #: True when, launched for a drain (``RunSpec.available_now``), the process exits by itself once drained.
    exits_when_drained: bool = True

    def unavailable_reason(self) -> str | None:
        """None when the arm can run; otherwise why not (shown as ``unavailable: <reason>``)."""
        return None

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        raise NotImplementedError

    def close(self) -> None:
        """Called by :func:`jobs.bench.runner.run_benchmark` once every run is done (also after a failure), for
        arms that keep something between their runs (arm rj's database server). Never raises."""


class PlainSparkArm(Arm):
    key, label = "a", "plain Spark: kafka → from_json → delta"

    def __init__(self, defaults: bool = False) -> None:
        self.defaults = defaults
        if defaults:
            self.key, self.label = "a0", "plain Spark with its defaults (cold, wall time)"

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        table, checkpoint = spec.work / "table", spec.work / "checkpoint"
        command = [sys.executable, "-m", "jobs.bench.plain_spark_job", "--bootstrap", settings.bootstrap_servers,
                   "--topic", spec.topic, "--table", str(table), "--checkpoint", str(checkpoint),
                   "--trigger-ms", str(settings.trigger_ms)]
        if not self.defaults:
            command += ["--max-offsets-per-trigger", str(settings.max_offsets_per_trigger)]
        if spec.available_now:
            command.append("--available-now")
        for key, value in ({} if self.defaults else settings.spark_conf).items():
            command += ["--conf", f"{key}={value}"]
        process, log_file = _spawn(command, spec.work)
        return Launched(process, SparkCheckpointWatcher(checkpoint, spec.topic),
                        lambda ids: health.delta_health(table, ids), log_file)


class CeilingArm(Arm):
    """Arm s: Spark's Kafka source → ``mapInArrow`` (no-op) → ``noop`` sink, the per-record arms' ceiling."""

    key, label = "s", "ceiling: Spark's Kafka source → mapInArrow (no-op)"

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        checkpoint = spec.work / "checkpoint"
        command = [sys.executable, "-m", "jobs.bench.ceiling_job", "--bootstrap", settings.bootstrap_servers,
                   "--topic", spec.topic, "--checkpoint", str(checkpoint), "--trigger-ms", str(settings.trigger_ms),
                   "--max-offsets-per-trigger", str(settings.max_offsets_per_trigger)]
        if spec.available_now:
            command.append("--available-now")
        for key, value in settings.spark_conf.items():
            command += ["--conf", f"{key}={value}"]
        process, log_file = _spawn(command, spec.work)
        watcher = SparkCheckpointWatcher(checkpoint, spec.topic)
        return Launched(process, watcher, lambda ids: health.offsets_health(watcher.latest, ids), log_file)


class ConnectSparkArm(Arm):
    """A connect_spark connector run by the real CLI: ``connect-spark standalone [--available-now]``."""

    def __init__(self, key: str, label: str, connector_class: str,
                 connector_props: Callable[[RunSpec], dict[str, str]],
                 check: Callable[[RunSpec, range], health.Health],
                 converters: dict[str, str], defaults: bool = False, odd_every: int = 0,
                 odd_mix: bool = False) -> None:
        self.key, self.label = key, label
        self.defaults = defaults
        self.odd_every = odd_every
        self.odd_mix = odd_mix
        self.connector_class = connector_class
        self.connector_props = connector_props
        self._check = check
        self.converters = converters

    def unavailable_reason(self) -> str | None:
        from connect_spark import plugins

        try:
            plugins.resolve("connector", self.connector_class, "connector.class")
        except Exception as e:  # a missing module, a class that is not there yet
            return f"{self.connector_class} does not resolve ({str(e).splitlines()[0]})"
        return None

    def worker(self, settings: BenchSettings, spec: RunSpec) -> dict[str, str]:
        from connect_spark.localkafka import free_port

        if self.defaults:  # what a user writes without tuning anything
            return {"bootstrap.servers": settings.bootstrap_servers, **self.converters,
                    "checkpoint.location": str(spec.work / "checkpoints"), "offset.storage.replication.factor": "1",
                    "listeners": f"http://127.0.0.1:{free_port()}"}
        return {
            "bootstrap.servers": settings.bootstrap_servers,
            **self.converters,
            "checkpoint.location": str(spec.work / "checkpoints"),
            "offset.storage.replication.factor": "1",
            "offset.flush.interval.ms": str(settings.offset_flush_interval_ms),
            "trigger": f"{settings.trigger_ms}ms",
            "task.execution.mode": "executor",
            "max.offsets.per.trigger": str(settings.max_offsets_per_trigger),
            "listeners": f"http://127.0.0.1:{free_port()}",
            **settings.spark_conf,
        }

    def connector(self, settings: BenchSettings, spec: RunSpec) -> dict[str, str]:
        return {"name": spec.run_id, "connector.class": self.connector_class, "topics": spec.topic,
                "tasks.max": str(settings.partitions), **self.connector_props(spec)}

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        from connect_spark.testing.harness import cli_command

        command = cli_command(self.worker(settings, spec), self.connector(settings, spec), spec.work,
                              available_now=spec.available_now)
        process, log_file = _spawn(command, spec.work)
        watcher = ConsumerGroupWatcher(settings.bootstrap_servers, f"connect-{spec.run_id}", spec.topic)
        return Launched(process, watcher, lambda ids: self._check(spec, ids), log_file)


class RealtimeArm(ConnectSparkArm):
    """Arm r: connect_spark's FileStreamSink in ``task.execution.mode=realtime`` (see the module docstring).

    Without arguments, arm r; :class:`RealtimeJdbcArm` gives another connector the same worker settings."""

    exits_when_drained = False

    def __init__(self, key: str = "r", label: str = "connect_spark FileStreamSink (realtime mode)",
                 connector_class: str = "FileStreamSink",
                 connector_props: Callable[[RunSpec], dict[str, str]] | None = None,
                 check: Callable[[RunSpec, range], health.Health] | None = None,
                 converters: dict[str, str] | None = None) -> None:
        super().__init__(key, label, connector_class,
                         connector_props or (lambda spec: {"file": str(spec.work / "out" / "sink.txt")}),
                         check or (lambda spec, ids: health.lines_health(spec.work / "out", ids)),
                         converters or _STRING_CONVERTERS)

    def unavailable_reason(self) -> str | None:
        from connect_spark.jvm.spark_versions import running_versions
        from connect_spark.streaming.realtime_requirements import MINIMUM_SPARK

        version = running_versions().spark
        if tuple(int(p) for p in version.split(".")[:2]) < MINIMUM_SPARK:
            return f"real-time mode needs Spark 4.2 or newer (pyspark {version})"
        return super().unavailable_reason()

    def worker(self, settings: BenchSettings, spec: RunSpec) -> dict[str, str]:
        worker = super().worker(settings, spec)
        worker["task.execution.mode"] = "realtime"
        worker["trigger"] = "1s"  # the length of a real-time batch
        for key in ("offset.flush.interval.ms", "max.offsets.per.trigger"):  # real-time defaults; no batch bound
            worker.pop(key, None)
        worker["spark.master"] = f"local[{max(2, settings.partitions)}]"  # a task slot per partition
        return worker

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        streaming = RunSpec(spec.topic, spec.run_id, spec.work, available_now=False,
                            bootstrap_servers=spec.bootstrap_servers)
        return super().launch(settings, streaming)


class RealtimeJdbcArm(RealtimeArm):
    """Arm rj: connect_spark's JDBC sink in real-time mode into a local PostgreSQL (see the module docstring).

    The server (:class:`connect_spark.testing.postgres.LocalPostgres`, its settings as the test fixture's) is started
    by the first :meth:`launch` and stopped by :meth:`close`; each run writes a table of its own, named after the
    run, and its health counts the ids in that table."""

    CONNECTOR = "io.confluent.connect.jdbc.JdbcSinkConnector"

    def __init__(self) -> None:
        super().__init__("rj", "connect_spark JDBC sink → PostgreSQL (realtime mode)", self.CONNECTOR,
                         self._connector_props, self._check_table, _SCHEMALESS_JSON_CONVERTERS)
        self.server = None

    def unavailable_reason(self) -> str | None:
        reason = super().unavailable_reason()
        if reason:
            return reason
        from connect_spark.testing.postgres import PostgresError, find_server_binaries

        try:
            find_server_binaries()
            import psycopg  # noqa: F401  (the health check reads the table with it)
        except (PostgresError, ImportError) as e:
            return str(e).splitlines()[0]
        return None

    @staticmethod
    def table_name(spec: RunSpec) -> str:
        return spec.run_id.replace("-", "_")

    def _connector_props(self, spec: RunSpec) -> dict[str, str]:
        from jobs.bench.records import FIELD_NAMES

        return {"connection.url": self.server.jdbc_url(), "table.name.format": self.table_name(spec),
                "insert.mode": "insert", "auto.create": "true", "fields.whitelist": ",".join(FIELD_NAMES)}

    def _check_table(self, spec: RunSpec, ids: range) -> health.Health:
        return health.table_health(self.server.conninfo(), self.table_name(spec), ids)

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        if self.server is None:
            import tempfile

            from connect_spark.testing.postgres import LocalPostgres

            # Under /tmp, not the bench's folder: the server runs as the postgres user, who must reach it.
            self.server = LocalPostgres(tempfile.mkdtemp(prefix="bench-postgres-")).start()
        return super().launch(settings, spec)

    def close(self) -> None:
        if self.server is not None:
            try:
                self.server.remove()
            except Exception as e:  # a server that will not stop must not hide the figures
                log.warning("arm rj: stopping PostgreSQL failed: %s", e)
            self.server = None


class KafkaConnectArm(Arm):
    """Apache Kafka Connect's own standalone worker (``ConnectStandalone``) from the ``kafka-connect`` jars."""

    key, label = "d1", "Kafka Connect standalone: FileStreamSink"
    exits_when_drained = False  # Connect has no "drain and exit": the runner stops it once drained

    def unavailable_reason(self) -> str | None:
        from connect_spark.jvm import KAFKA_CONNECT, is_resolved

        if not is_resolved(KAFKA_CONNECT):
            return "the kafka-connect jars are not resolved (run `connect-spark jars`)"
        return None

    def launch(self, settings: BenchSettings, spec: RunSpec) -> Launched:
        from connect_spark.config.properties import format_properties
        from connect_spark.jvm import KAFKA_CONNECT
        from connect_spark.jvm.java import find_java
        from connect_spark.localkafka import free_port

        out = spec.work / "out"
        out.mkdir(parents=True, exist_ok=True)
        worker = {
            "bootstrap.servers": settings.bootstrap_servers,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(spec.work / "connect.offsets"),
            "offset.flush.interval.ms": str(settings.offset_flush_interval_ms),
            "listeners": f"http://127.0.0.1:{free_port()}",
        }
        connector = {"name": spec.run_id, "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                     "tasks.max": str(settings.partitions), "topics": spec.topic, "file": str(out / "sink.txt")}
        worker_file, connector_file = spec.work / "worker.properties", spec.work / "connector.properties"
        worker_file.write_text(format_properties(worker))
        connector_file.write_text(format_properties(connector))
        log4j = spec.work / "log4j2.properties"
        log4j.write_text(
            "status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
            "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = STDOUT\n"
        )
        command = [find_java(17, "Kafka Connect"), *settings.connect_heap.split(), "-XX:+UseG1GC", "-Djava.awt.headless=true",
                   f"-Dlog4j2.configurationFile={log4j}", "-cp", str(KAFKA_CONNECT.folder() / "*"),
                   "org.apache.kafka.connect.cli.ConnectStandalone", str(worker_file), str(connector_file)]
        process, log_file = _spawn(command, spec.work)
        watcher = ConsumerGroupWatcher(settings.bootstrap_servers, f"connect-{spec.run_id}", spec.topic)
        return Launched(process, watcher, lambda ids: health.lines_health(out, ids), log_file)


_STRING_CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


_SCHEMALESS_JSON_CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def _delta_arm(key: str, label: str, **options) -> "ConnectSparkArm":
    return ConnectSparkArm(key, label, "DeltaSink",
                           lambda spec: {"delta.table.path": str(spec.work / "table"), "insert.mode": "append"},
                           lambda spec, ids: health.delta_health(spec.work / "table", ids), _SCHEMALESS_JSON_CONVERTERS,
                           **options)


#: Every n-th record of arm b1's topic needs the per-record path (1 %).
ODD_EVERY = 100


def _delta_dlq_arm() -> "ConnectSparkArm":
    """Arm b2: the Delta sink with its defaults and a dead letter queue, on the topic with odd records."""
    from jobs.bench.records import dead_letter_ids

    def props(spec: RunSpec) -> dict[str, str]:
        return {"delta.table.path": str(spec.work / "table"), "insert.mode": "append", "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": f"{spec.run_id}-dlq",
                "errors.deadletterqueue.topic.replication.factor": "1"}

    return ConnectSparkArm(
        "b2", "connect_spark DeltaSink with its defaults, 1 % odd records, DLQ (cold, wall time)", "DeltaSink", props,
        lambda spec, ids: health.with_dead_letters(
            health.delta_health(spec.work / "table", ids, dead_letter_ids(ids, ODD_EVERY)),
            spec.bootstrap_servers, f"{spec.run_id}-dlq", dead_letter_ids(ids, ODD_EVERY)),
        _SCHEMALESS_JSON_CONVERTERS, defaults=True, odd_every=ODD_EVERY, odd_mix=True)


def default_arms() -> list[Arm]:
    """Every arm, in the order they run within a round."""
    return [
        CeilingArm(),
        PlainSparkArm(),
        _delta_arm("b", "connect_spark DeltaSink (exactly-once)"),
        _delta_arm("b1", "connect_spark DeltaSink, 1 % of records per record", odd_every=ODD_EVERY),
        ConnectSparkArm(
            "c", "connect_spark per-record Python task (executor mode)",
            "jobs.bench.per_record_sink:PerRecordSinkConnector",
            lambda spec: {"bench.output.dir": str(spec.work / "out")},
            lambda spec, ids: health.lines_health(spec.work / "out", ids, health.CSV_ID),
            _STRING_CONVERTERS,
        ),
        KafkaConnectArm(),
        ConnectSparkArm(
            "d2", "connect_spark FileStreamSink (executor mode)", "FileStreamSink",
            lambda spec: {"file": str(spec.work / "out" / "sink.txt")},
            lambda spec, ids: health.lines_health(spec.work / "out", ids),
            _STRING_CONVERTERS,
        ),
        RealtimeArm(),
        RealtimeJdbcArm(),
        PlainSparkArm(defaults=True),
        _delta_arm("b0", "connect_spark DeltaSink with its defaults (cold, wall time)", defaults=True),
        _delta_dlq_arm(),
    ]
