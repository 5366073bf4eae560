"""The ``connect-spark`` command: parses arguments, configures logging, calls the runtime. Nothing else."""

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
    print(f"JVM artifacts for pyspark {versions.spark} and delta-spark {versions.delta} in {jars_root()} "
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
    from connect_spark.runtime.launcher import run_standalone

    return run_standalone(args.worker, args.connectors, available_now=args.available_now)


def _cmd_distributed(args: argparse.Namespace) -> int:
    from connect_spark.herder.distributed import run_distributed

    return run_distributed(args.worker)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="connect-spark", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    standalone = sub.add_parser(
        "standalone", help="run connectors in this driver, one streaming query each (like connect-standalone)"
    )
    standalone.add_argument("--available-now", action="store_true",
                            help="drain what is in the topics, commit, and exit 0 (Trigger.AvailableNow)")
    standalone.add_argument("worker", metavar="WORKER.properties")
    standalone.add_argument("connectors", metavar="CONNECTOR.properties", nargs="+")
    standalone.set_defaults(func=_cmd_standalone)

    distributed = sub.add_parser(
        "distributed", help="run a long-lived worker with the REST API; connectors are managed through it "
        "(like connect-distributed)"
    )
    distributed.add_argument("worker", metavar="WORKER.properties")
    distributed.set_defaults(func=_cmd_distributed)

    jars = sub.add_parser("jars", help="resolve the pinned JVM jars from Maven Central (once)")
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
    demo.add_argument("--records", type=int, default=10_000)
    demo.add_argument("--data-dir", default=os.path.join(".data", "demo"))
    demo.set_defaults(func=_cmd_demo)
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
