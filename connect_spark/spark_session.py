"""The one place a SparkSession is built (or an existing one adopted).

A session connect_spark builds gets: the master, the locally resolved jars of Spark's Kafka source and
of Delta (``spark.jars``, so runs need no network), Delta's SQL extension and catalog, the running
Python interpreter for executors, and defaults sized for small machines; with a local master, also a
Python worker daemon that forks workers with the executor side already imported
(:mod:`connect_spark.runtime.python_worker.daemon`); and a driver JVM that maps Spark's classes from a class data
sharing archive (:mod:`connect_spark.jvm.class_archive`). A session passed in (a
notebook's ``spark``, a Databricks cluster that has Kafka and Delta built in) is used as it is, once
:func:`require_session_support` found in it what the connector needs.

Optional JVM sets (Iceberg) are added only when asked for: by the runtime for the connectors it is
about to run (``SinkConnector.artifact_sets``, see :func:`artifact_sets_for`), or by a caller that builds
a session before knowing its connectors (``optional_sets``, or ``connect_spark.jars.optional`` in ``conf``).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["get_or_create_session", "session_conf", "require_session_support", "is_remote_session", "artifact_sets_for",
           "CLASS_ARCHIVE_KEY", "JARS_MODE_KEY", "OPTIONAL_JARS_KEY", "SESSION_DEFAULTS", "WORKER_DAEMON_KEY",
           "WORKER_DAEMON_MODULE"]

log = logging.getLogger(__name__)

#: ``auto`` (default): add the local jars unless the platform provides Kafka and Delta (Databricks);
#: ``local``: always add them; ``none``: add nothing (the cluster or ``--jars`` provides them).
JARS_MODE_KEY = "connect_spark.jars"
#: Comma-separated optional artifact sets (``iceberg``) a built session carries in any case.
OPTIONAL_JARS_KEY = "connect_spark.jars.optional"
#: ``auto`` (default): a built session's driver JVM starts from a class data sharing archive of Spark's
#: classes, written by the first driver (:mod:`connect_spark.jvm.class_archive`); ``off``: it does not.
CLASS_ARCHIVE_KEY = "connect_spark.jvm.class_archive"

#: Spark's setting for the module its Python worker daemon runs; a local session connect_spark builds uses
#: :data:`WORKER_DAEMON_MODULE` unless the setting is given.
WORKER_DAEMON_KEY = "spark.python.daemon.module"
WORKER_DAEMON_MODULE = "connect_spark.runtime.python_worker.daemon"

#: The Spark settings a session connect_spark builds starts from (``spark.*`` keys of the worker go on
#: top); listed in ``conf/config-reference.md``.
SESSION_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.streaming.stopGracefullyOnShutdown": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-Dio.netty.tryReflectionSetAccessible=true",
    # PySpark's DataFrame debugging sends every Column and DataFrame call's Python call site to the JVM (several
    # round trips each): about 1,700 of a clean Delta batch's 2,200 round trips before its write. The call
    # sites would name connect_spark's own lines, not the user's.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def _platform_provides_jars() -> bool:
    # Databricks runtimes ship Spark's Kafka source and Delta on the classpath.
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def artifact_sets_for(connector_classes: Iterable[str]) -> list[str]:
    """The optional artifact sets the named connectors need (``SinkConnector.required_spark_support``).

    Called by the standalone worker before it builds its session; a name that does not resolve is left
    to the validation that reports it.
    """
    from connect_spark.api.errors import ConnectException
    from connect_spark.jvm import optional_artifact_sets
    from connect_spark.plugins import instantiate

    available = optional_artifact_sets()
    wanted: set[str] = set()
    for name in connector_classes:
        try:
            needs = instantiate("connector", name).required_spark_support()
        except ConnectException:
            continue
        wanted.update(n for n in needs if n in available)
    return sorted(wanted)


def session_conf(conf: Mapping[str, str] | None = None, ui: bool = True,
                 optional_sets: Iterable[str] = ()) -> dict[str, str]:
    """The Spark settings a built session gets: defaults, then the local jars, then ``conf`` on top.

    Args:
        optional_sets: names of optional artifact sets to add (jars and SQL extensions).

    Raises:
        connect_spark.jvm.JarResolutionError: the jars are needed but were never resolved.
        ConfigException: an unknown optional set name.
    """
    settings = dict(SESSION_DEFAULTS)
    settings["spark.ui.enabled"] = "true" if ui else "false"
    settings["spark.pyspark.python"] = sys.executable
    settings["spark.pyspark.driver.python"] = sys.executable
    user = dict(conf or {})
    mode = user.pop(JARS_MODE_KEY, "auto")
    from connect_spark.api.errors import ConfigException
    from connect_spark.jvm import optional_artifact_sets
    from connect_spark.jvm.spark_versions import missing_support_reason

    if mode not in ("auto", "local", "none"):
        raise ConfigException("must be one of auto, local, none", JARS_MODE_KEY, mode)
    _class_archive_wanted(user)
    user.pop(CLASS_ARCHIVE_KEY, None)
    asked = user.pop(OPTIONAL_JARS_KEY, "")
    names = sorted(set(optional_sets) | {n.strip() for n in asked.split(",") if n.strip()})
    available = optional_artifact_sets()
    unknown = [n for n in names if n not in available]
    if unknown:
        reason = missing_support_reason(unknown) or (
            f"unknown optional artifact set(s) {', '.join(unknown)}; known: iceberg")
        raise ConfigException(reason, OPTIONAL_JARS_KEY, asked or ",".join(unknown))
    optional = [available[n] for n in names]
    extensions = [settings["spark.sql.extensions"]] + [e for s in optional for e in s.spark_extensions]
    settings["spark.sql.extensions"] = ",".join(dict.fromkeys(extensions))
    if mode == "local" or (mode == "auto" and not _platform_provides_jars()):
        from connect_spark.jvm import delta_set, jar_paths, spark_kafka_set

        jars = [str(p) for s in (spark_kafka_set(), delta_set(), *optional) for p in jar_paths(s)]
        existing = user.pop("spark.jars", "")
        settings["spark.jars"] = ",".join([j for j in existing.split(",") if j] + jars)
    settings.update(user)
    return settings


@contextmanager
def _interrupt_handler_kept(keep: bool) -> Iterator[None]:
    """Puts back the SIGINT handler the body replaced, when ``keep`` (and in the main thread: only it has one)."""
    if not keep or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if previous is not None:  # None: a handler not installed from Python, nothing to put back
            signal.signal(signal.SIGINT, previous)


def get_or_create_session(
    spark: "SparkSession | None" = None,
    master: str | None = None,
    app_name: str = "connect-spark",
    conf: Mapping[str, str] | None = None,
    ui: bool = True,
    optional_sets: Iterable[str] = (),
    keep_interrupt_handler: bool = False,
) -> "SparkSession":
    """Return ``spark`` if given, else build (or get the active) session with connect_spark's settings.

    Args:
        spark: an existing session (a notebook's, a cluster's); used unchanged.
        master: ``spark.master``; default ``conf['spark.master']``, else ``$SPARK_MASTER``, else
            ``local[*]``. Under ``spark-submit`` the master given there wins.
        app_name: the application name shown in the Spark UI.
        conf: more ``spark.*`` settings (a worker config's ``spark.*`` keys), applied last.
        ui: start the Spark UI (tests turn it off).
        optional_sets: optional artifact sets (``iceberg``) a built session carries, see
            :func:`artifact_sets_for`; ignored for a session passed in.
        keep_interrupt_handler: put back the SIGINT handler the process had. PySpark's ``SparkContext``,
            built in the main thread, takes SIGINT for itself (it cancels every job and raises
            ``KeyboardInterrupt`` wherever the main thread is); the standalone and distributed workers,
            whose Ctrl-C is a graceful stop, ask for theirs back. Left false, a notebook keeps PySpark's.
    """
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    # Executors must run the same interpreter as the driver (the venv with connect_spark in it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = session_conf(conf, ui=ui, optional_sets=optional_sets)
    builder = SparkSession.builder.appName(app_name)
    submitted = "spark.master" in _submit_conf()
    chosen_master = master or settings.pop("spark.master", None) or os.environ.get("SPARK_MASTER")
    if not submitted:
        chosen_master = chosen_master or "local[*]"
        builder = builder.master(chosen_master)
        if chosen_master.startswith("local"):
            # A local driver serves only this machine: keep its RPC, block manager and UI on loopback.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            settings.setdefault("spark.driver.host", "127.0.0.1")
            settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
            # Local Python workers run this interpreter, so they can fork from a daemon that has the
            # executor side imported already (connect_spark.runtime.python_worker.daemon).
            settings.setdefault(WORKER_DAEMON_KEY, WORKER_DAEMON_MODULE)
        if _class_archive_wanted(conf or {}):
            _add_class_archive(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _interrupt_handler_kept(keep_interrupt_handler):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("CONNECT_SPARK_SPARK_LOG_LEVEL", "WARN"))
    log.info("SparkSession ready: master=%s, Spark %s", session.sparkContext.master, session.version)
    return session


def _class_archive_wanted(conf: Mapping[str, str]) -> bool:
    """Whether ``conf`` leaves :data:`CLASS_ARCHIVE_KEY` at ``auto``.

    Raises:
        ConfigException: a value other than ``auto`` or ``off``.
    """
    from connect_spark.api.errors import ConfigException

    mode = conf.get(CLASS_ARCHIVE_KEY, "auto")
    if mode not in ("auto", "off"):
        raise ConfigException("must be one of auto, off", CLASS_ARCHIVE_KEY, mode)
    return mode == "auto"


def _add_class_archive(settings: dict[str, str]) -> None:
    """Give the driver JVM about to start the class data sharing options (:mod:`connect_spark.jvm.class_archive`),
    unless a session already runs (the builder will return it) or the user's Java options manage sharing."""
    from pyspark.sql import SparkSession

    from connect_spark.jvm.class_archive import driver_java_options, mentions_class_sharing

    options = settings.get("spark.driver.extraJavaOptions", "")
    if SparkSession.getActiveSession() is not None or mentions_class_sharing(options):
        return
    extra = driver_java_options(settings)
    if extra:
        settings["spark.driver.extraJavaOptions"] = " ".join([options, *extra]).strip()


def _submit_conf() -> dict[str, str]:
    """Settings spark-submit passed to this driver (it exports them as system properties)."""
    # spark-submit starts the JVM first and exposes its conf through PYSPARK_GATEWAY_PORT; when that
    # is set the master is already chosen and must not be overridden.
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return {"spark.master": "(spark-submit)"}
    return {}


#: What a connector may need in a session: the JVM class that proves it is there, what it is, and the
#: function naming the artifact set whose coordinates provide it (:mod:`connect_spark.jvm.artifacts`).
_SUPPORT = {
    "kafka": ("org.apache.spark.sql.kafka010.KafkaSourceProvider", "Spark's Kafka source", "spark_kafka_set"),
    "delta": ("io.delta.tables.DeltaTable", "Delta Lake", "delta_set"),
    "iceberg": ("org.apache.iceberg.spark.SparkCatalog", "Apache Iceberg", "iceberg_set"),
}


def is_remote_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (no py4j gateway, no ``sparkContext``, no RDDs).

    The one test every classic-only path asks (the JVM class checks here, the runner's choice of a
    self-contained ``foreachBatch`` function in :mod:`connect_spark.runtime.processors.remote_batches`). Checked by
    type, so it never imports Spark Connect's client where it is not installed.
    """
    return type(spark).__module__.startswith("pyspark.sql.connect.")


#: Per need, the data source a Spark Connect server must find, and the options that let Spark analyse a read
#: of it without touching any data (an analysis round trip, no job).
_REMOTE_PROBES = {
    "kafka": ("kafka", {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "connect-spark-probe"}),
    "delta": ("delta", {"path": "/connect-spark-probe/no-such-table"}),
    "iceberg": ("iceberg", {"path": "connect_spark_probe.no_such_table"}),
}


def _require_remote_support(spark: "SparkSession", needs: "tuple[str, ...] | list[str]", connector_name: str) -> None:
    """:func:`require_session_support` on a Spark Connect session: the server's classpath cannot be read from
    here, so each need is asked as Spark's analysis of a read of its data source, which fails with
    ``DATA_SOURCE_NOT_FOUND`` when the server lacks it (any other answer means the source is there)."""
    from connect_spark.api.errors import ConnectException

    missing = []
    for need in ("kafka", *needs):
        if need not in _REMOTE_PROBES:
            continue
        source, options = _REMOTE_PROBES[need]
        try:
            spark.read.format(source).options(**options).load().schema
        except Exception as e:  # noqa: BLE001 - only the missing-source answer matters
            if "DATA_SOURCE_NOT_FOUND" in str(e) or "Failed to find the data source" in str(e):
                missing.append((_SUPPORT[need][1], source))
    if missing:
        lacking = "; ".join(f'{what} (data source "{source}" not found)' for what, source in missing)
        raise ConnectException(
            f"Connector {connector_name} cannot run on the Spark Connect server it was given: the server lacks "
            f"{lacking}. The server's jars are set when it starts (its platform's runtime, or "
            "start-connect-server.sh --packages / spark.jars); `connect-spark jars` prints the coordinates "
            "connect_spark resolves for this Spark.")


def require_session_support(spark: "SparkSession", needs: "tuple[str, ...] | list[str]", connector_name: str) -> None:
    """Refuse a session that lacks Spark's Kafka source or what the connector ``needs`` (``"delta"``).

    Called by the connector runner at start, before the connector's tasks start. On a Spark Connect session
    the server is asked whether it finds each data source (:func:`_require_remote_support`).

    Raises:
        connect_spark.api.errors.ConnectException: a needed JVM class is missing; the message says how
            to get a session that has it.
    """
    from connect_spark.api.errors import ConnectException

    if is_remote_session(spark):
        _require_remote_support(spark, needs, connector_name)
        return
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        log.debug("%s: the session has no JVM gateway; its Kafka and Delta support are not checked", connector_name)
        return
    from py4j.java_gateway import JavaClass

    from connect_spark.jvm import artifacts

    missing = []
    for need in ("kafka", *needs):
        if need not in _SUPPORT:
            raise ConnectException(f"Connector {connector_name} needs {need!r} in the SparkSession, which "
                                   f"connect_spark does not know; known: {', '.join(sorted(_SUPPORT))}")
        class_name, what, set_for_running_spark = _SUPPORT[need]
        found = jvm
        for part in class_name.split("."):
            found = getattr(found, part)
        if not isinstance(found, JavaClass):
            artifact_set = getattr(artifacts, set_for_running_spark)()
            if artifact_set is None:
                from connect_spark.jvm.spark_versions import missing_support_reason

                raise ConnectException(f"Connector {connector_name} cannot run here: {missing_support_reason((need,))}")
            missing.append((what, class_name, ",".join(artifact_set.coordinates)))
    if not missing:
        return
    lacking = "; ".join(f"{what} (class {class_name} is not on its classpath)" for what, class_name, _ in missing)
    packages = ",".join(c for _, _, c in missing)
    raise ConnectException(
        f"Connector {connector_name} cannot run in the SparkSession it was given: it lacks {lacking}. "
        "Get a session that has it: let connect_spark build the session (pass no session, or call "
        "connect_spark.spark_session.get_or_create_session() before any other session exists: it adds the locally "
        "resolved jars and Delta's settings), or build yours with "
        f'.config("spark.jars.packages", "{packages}")'
        + (' and Delta\'s .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") and '
           '.config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")'
           if any(c == "io.delta.tables.DeltaTable" for _, c, _ in missing) else "")
        + ". A session already running keeps its classpath: stop it first (spark.stop())."
    )
