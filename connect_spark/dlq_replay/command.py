"""``connect-spark dlq replay WORKER.properties CONNECTOR.properties``: the command line of DLQ replay.

:func:`add_dlq_parser` is called by :mod:`connect_spark.cli` to declare the sub-command; argparse then
calls :func:`run_dlq_command`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from connect_spark.dlq_replay.letters import LetterFilter
from connect_spark.dlq_replay.replay import CHUNK_SIZE, SKIP_CHOICES

__all__ = ["add_dlq_parser", "run_dlq_command", "EXIT_REPLAY_RUNNING"]

EXIT_OK, EXIT_BAD_CONFIG = 0, 2
EXIT_REPLAY_RUNNING = 3
"""Exit code of ``dlq replay`` when another replay of the connector holds the lease."""


def add_dlq_parser(sub: Any) -> None:
    """Declare `dlq replay` on the `connect-spark` sub-command parsers `sub` (argparse's add_subparsers result)."""
    dlq = sub.add_parser("dlq", help="work with a connector's dead letter queue (replay)")
    actions = dlq.add_subparsers(dest="dlq_action", required=True, metavar="ACTION")
    replay = actions.add_parser(
        "replay", help="send the connector's dead letters through its converters, transforms and put again",
        description="Read the connector's dead letter topic from where the last replay stopped and deliver each "
                    "record again with its original topic, partition, offset, timestamp, key and headers "
                    "(the dead letter queue must have been written with "
                    "errors.deadletterqueue.context.headers.enable=true). A record that fails again goes back to "
                    "the dead letter queue with its replay count. Letters a filter leaves out, or over "
                    "--max-replays, stay for a later replay; the summary counts each letter as replayed, kept or "
                    "dropped. One replay per connector at a time.",
        epilog="exit codes: 0 done (or listed); 1 the replay failed; 2 invalid configuration or option; "
               "3 another replay of the connector is running (it holds a lease that a crashed replay leaves "
               "for at most a minute)")
    replay.add_argument("worker", metavar="WORKER.properties")
    replay.add_argument("connector", metavar="CONNECTOR.properties", help="the connector, with its cause fixed")
    replay.add_argument("--dry-run", action="store_true", help="list what would be replayed, grouped by error")
    replay.add_argument("--error-class", help="only letters of this exception class (full or short name)")
    replay.add_argument("--stage", help="only letters of this stage (TRANSFORMATION, VALUE_CONVERTER, TASK_PUT, ...)")
    replay.add_argument("--topic", help="only letters whose original topic is this one")
    replay.add_argument("--since-ms", type=int, help="only letters written at or after this epoch millisecond")
    replay.add_argument("--until-ms", type=int, help="only letters written before this epoch millisecond")
    replay.add_argument("--max-replays", type=int, default=3,
                        help="keep letters already replayed this many times for later (default 3)")
    replay.add_argument("--skip", action="append", choices=SKIP_CHOICES, default=[],
                        help="drop these letters for good instead of keeping them for a later replay: "
                             "over-limit (replayed --max-replays times), no-context (written without context "
                             "headers, so they cannot be replayed); repeat for both")
    replay.add_argument("--chunk-size", type=int, default=CHUNK_SIZE,
                        help=f"letters read, delivered and committed at a time (default {CHUNK_SIZE})")
    replay.set_defaults(func=run_dlq_command)


def run_dlq_command(args: argparse.Namespace) -> int:
    from connect_spark.config.definition import ConfigValidationError
    from connect_spark.config.validation import validate_configs
    from connect_spark.dlq_replay.replay import check_options, replay_dead_letters
    from connect_spark.dlq_replay.replay_log import ReplayInProgressError, ReplayLog

    try:
        worker, (connector,) = validate_configs(args.worker, [args.connector])
    except ConfigValidationError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_CONFIG
    check_options(args.max_replays, args.skip, args.chunk_size)
    letter_filter = LetterFilter(args.error_class, args.stage, args.topic, args.since_ms, args.until_ms)
    with ReplayLog.for_worker(worker, connector.name) as replay_log:
        spark = None
        try:
            if not args.dry_run:  # before Spark starts: a refused replay answers at once
                replay_log.claim()
                from connect_spark.spark_session import artifact_sets_for, get_or_create_session

                spark = get_or_create_session(None, app_name="connect-spark-dlq-replay", conf=worker.spark_conf(),
                                              optional_sets=artifact_sets_for([connector.connector_class]))
            result = replay_dead_letters(spark, worker, connector, letter_filter, args.dry_run, args.max_replays,
                                         args.skip, args.chunk_size, replay_log)
        except ReplayInProgressError as e:
            print(f"connect-spark: {e}", file=sys.stderr)
            return EXIT_REPLAY_RUNNING
    print(result.report(args.dry_run))
    return EXIT_OK
