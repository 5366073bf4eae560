"""The ``connect-spark`` command line (thin: it parses arguments, configures logging and calls the runtime).

The user-facing text is :data:`DESCRIPTION`, :data:`EPILOG` and each sub-command's help.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_CONFIG = 2

#: What ``connect-spark --help`` says first.
DESCRIPTION = """\
Run Kafka Connect sink connectors as Spark Structured Streaming queries.

Give it the same .properties files Kafka Connect takes: a worker file (bootstrap.servers,
converters, offset storage, ...) and one file per connector (name, connector.class, topics,
transforms.*, errors.*, tasks.max). Only the offsets a task's pre_commit returns are committed,
to connect-offsets and to the consumer group connect-<name>."""

#: What ``connect-spark --help`` says last.
EPILOG = """\
examples:
  connect-spark demo                                   local broker + sample events -> Delta table
  connect-spark standalone conf/worker.properties conf/delta-sink.properties
  connect-spark standalone --available-now conf/worker.properties conf/delta-sink.properties
  connect-spark distributed worker.properties          then POST /connectors to http://127.0.0.1:8083
  connect-spark dlq replay --dry-run worker.properties delta-sink.properties

exit codes: 0 stopped cleanly (SIGINT/SIGTERM) or drained (--available-now); 1 a connector failed
(its trace is logged); 2 invalid configuration (every problem listed, before Spark starts);
3 (dlq replay) another replay of the connector is running.

Every key: conf/config-reference.md. On a cluster: spark-submit jobs/connect_standalone.py with
the same arguments, and the jars `connect-spark jars` prints."""

_DEV_KAFKA_DIR = Path(".data") / "dev-kafka"
_DEV_REGISTRY_DIR = Path(".data") / "dev-registry"
_DEV_OPENSEARCH_DIR = Path(".data") / "dev-opensearch"


def configure_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("kafka", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _cmd_jars(args: argparse.Namespace) -> int:
    import time

    from connect_spark.jvm import artifact_sets, ensure_resolved, jars_root, running_versions
    from connect_spark.jvm.spark_versions import missing_support_reason

    versions = running_versions()
    sets = artifact_sets(versions)
    started = time.monotonic()
    resolved = ensure_resolved(sets)
    delta = f"delta-spark {versions.delta}" if versions.delta else f"Delta {versions.delta_jars} (no delta-spark installed)"
    print(f"JVM artifacts for pyspark {versions.spark} and {delta} in {jars_root()} "
          f"({time.monotonic() - started:.1f} s):")
    for artifact_set in sets:
        print(f"  {artifact_set.label:<24} {len(resolved[artifact_set.name]):>3} jars  {artifact_set.purpose}")
    lacking = missing_support_reason(("iceberg",), versions)
    if lacking:
        print(f"  {'iceberg':<24}   -  {lacking}")
    return EXIT_OK


def _cmd_dev_kafka(args: argparse.Namespace) -> int:
    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker

    data_dir = Path(args.data_dir)
    if args.action == "start":
        running = LocalKafkaBroker.detached_address(data_dir)
        if running:
            print(f"A dev broker is already running at {running} (data in {data_dir}).")
            return EXIT_OK
        ensure_resolved()
        broker = LocalKafkaBroker(data_dir, port=args.port).start(detach=True)
        print(f"Kafka broker running at {broker.bootstrap_servers} (pid {broker.pid}, data in {data_dir}); "
              "stop it with `connect-spark dev-kafka stop`.")
        return EXIT_OK
    if args.action == "status":
        address = LocalKafkaBroker.detached_address(data_dir)
        print(f"running at {address}" if address else "not running")
        return EXIT_OK if address else EXIT_FAILED
    stopped = LocalKafkaBroker.stop_detached(data_dir)
    print("Kafka broker stopped." if stopped else "No dev broker was running.")
    return EXIT_OK


def _dev_server(args: argparse.Namespace, server_class, what: str, started_hint: str, prepare=None) -> int:
    """``start`` / ``status`` / ``stop`` of a local server that outlives the command (dev-registry,
    dev-opensearch): ``server_class`` is a :class:`~connect_spark.localprocess.LocalProcess` with a ``url``."""
    data_dir = Path(args.data_dir)
    if args.action == "start":
        running = server_class.detached_live_address(data_dir)
        if running:
            print(f"A dev {what} is already running at {running}.")
            return EXIT_OK
        if prepare is not None:
            prepare()
        server = server_class(data_dir, port=args.port).start(detach=True)
        print(f"{what[:1].upper() + what[1:]} running at {server.url} (pid {server.pid}, log in {server.log_file}); "
              f"{started_hint}; stop it with `connect-spark {args.command} stop`.")
        return EXIT_OK
    if args.action == "status":
        url = server_class.detached_live_address(data_dir)
        print(f"running at {url}" if url else "not running")
        return EXIT_OK if url else EXIT_FAILED
    stopped = server_class.stop_detached(data_dir)
    print(f"{what[:1].upper() + what[1:]} stopped." if stopped else f"No dev {what} was running.")
    return EXIT_OK


def _cmd_dev_registry(args: argparse.Namespace) -> int:
    from connect_spark.jvm import SCHEMA_REGISTRY, ensure_resolved
    from connect_spark.localregistry import LocalSchemaRegistry

    return _dev_server(args, LocalSchemaRegistry, "schema registry",
                       "set value.converter.schema.registry.url to it", lambda: ensure_resolved([SCHEMA_REGISTRY]))


def _cmd_dev_opensearch(args: argparse.Namespace) -> int:
    from connect_spark.localsearch import LocalOpenSearch

    return _dev_server(args, LocalOpenSearch, "OpenSearch", "set connection.url to it")


def _cmd_demo(args: argparse.Namespace) -> int:
    from connect_spark.demo import run_demo

    rows = run_demo(args.data_dir, records=args.records)
    return EXIT_OK if rows == args.records else EXIT_FAILED


def _cmd_standalone(args: argparse.Namespace) -> int:
    from connect_spark.runtime.worker.launcher import run_standalone

    if args.offsets:
        from connect_spark.herder.initial_offsets import seed_standalone_offsets

        if len(args.connectors) != 1:
            print("--offsets takes exactly one CONNECTOR.properties", file=sys.stderr)
            return EXIT_BAD_CONFIG
        seed_standalone_offsets(args.worker, args.connectors[0], args.offsets)
    return run_standalone(args.worker, args.connectors, available_now=args.available_now)


def _cmd_distributed(args: argparse.Namespace) -> int:
    from connect_spark.herder.distributed import run_distributed

    return run_distributed(args.worker)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="connect-spark", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    standalone = sub.add_parser(
        "standalone", help="run connectors from .properties files, one streaming query each (like connect-standalone)",
        description="Run one Spark streaming query per connector file in this process until SIGINT/SIGTERM "
                    "(the batch in flight is finished and committed first), or with --available-now until "
                    "the records present at start are written and committed.",
    )
    standalone.add_argument("--available-now", action="store_true",
                            help="drain what is in the topics now, commit, and exit 0 (for cron, Airflow, "
                                 "scheduled jobs; Spark's Trigger.AvailableNow)")
    standalone.add_argument("--offsets", metavar="OFFSETS.json",
                            help="start a new connector at these offsets ({\"offsets\": [...]} as GET "
                                 "/connectors/NAME/offsets shows them); ignored once it has committed offsets")
    standalone.add_argument("worker", metavar="WORKER.properties",
                            help="worker settings (bootstrap.servers, converters, offset storage)")
    standalone.add_argument("connectors", metavar="CONNECTOR.properties", nargs="+",
                            help="one file per connector (name, connector.class, topics, ...)")
    standalone.set_defaults(func=_cmd_standalone)

    distributed = sub.add_parser(
        "distributed", help="run a long-lived worker with Kafka Connect's REST API; create connectors "
        "through it (like connect-distributed)",
        description="Start a worker with Kafka Connect's REST API on `listeners` (default "
                    "http://127.0.0.1:8083) and no connectors; create them with POST /connectors. Connector "
                    "configurations are kept in config.storage.topic and come back when the worker restarts.",
    )
    distributed.add_argument("worker", metavar="WORKER.properties",
                             help="worker settings, with group.id and the config/offset/status topics")
    distributed.set_defaults(func=_cmd_distributed)

    jars = sub.add_parser("jars", help="download the JVM jars (Kafka source, Delta, ...) for the installed "
                          "pyspark into .jars/ with Maven, once; prints the folders to pass to spark-submit")
    jars.set_defaults(func=_cmd_jars)

    dev = sub.add_parser("dev-kafka", help="start or stop a local single-node Kafka broker for development")
    dev.add_argument("action", choices=["start", "stop", "status"])
    dev.add_argument("--port", type=int, default=9092, help="client port on 127.0.0.1 (default 9092)")
    dev.add_argument("--data-dir", default=str(_DEV_KAFKA_DIR), help="broker data folder")
    dev.set_defaults(func=_cmd_dev_kafka)

    registry = sub.add_parser("dev-registry", help="start or stop a local schema registry (Apicurio, Confluent's "
                              "API) for development")
    registry.add_argument("action", choices=["start", "stop", "status"])
    registry.add_argument("--port", type=int, default=8081, help="HTTP port on 127.0.0.1 (default 8081)")
    registry.add_argument("--data-dir", default=str(_DEV_REGISTRY_DIR), help="folder for the registry's log")
    registry.set_defaults(func=_cmd_dev_registry)

    search = sub.add_parser("dev-opensearch", help="start or stop a local single-node OpenSearch (the search "
                            "sink's test server) for development")
    search.add_argument("action", choices=["start", "stop", "status"])
    search.add_argument("--port", type=int, default=9200, help="HTTP port on 127.0.0.1 (default 9200)")
    search.add_argument("--data-dir", default=str(_DEV_OPENSEARCH_DIR), help="folder for the node's data and log")
    search.set_defaults(func=_cmd_dev_opensearch)

    demo = sub.add_parser("demo", help="run the end-to-end demo on a local broker and local Spark")
    demo.add_argument("--records", type=int, default=10_000, help="sample events to produce (default 10000)")
    demo.add_argument("--data-dir", default=os.path.join(".data", "demo"),
                      help="where the broker's data and the Delta table go (default .data/demo)")
    demo.set_defaults(func=_cmd_demo)

    from connect_spark.dlq_replay.command import add_dlq_parser

    add_dlq_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.verbose)
    from connect_spark.api.errors import ConfigException, ConnectException

    try:
        return args.func(args)
    except ConfigException as e:
        print(f"Invalid configuration:\n{e}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    except ConnectException as e:
        print(f"connect-spark: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
