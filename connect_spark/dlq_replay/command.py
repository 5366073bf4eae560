"""``connect-spark dlq replay WORKER.properties CONNECTOR.properties``: the command line of DLQ replay.

:func:`add_dlq_parser` is called by :mod:`connect_spark.cli` to declare the sub-command; argparse then
calls :func:`run_dlq_command`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from connect_spark.dlq_replay.letters import LetterFilter

__all__ = ["add_dlq_parser", "run_dlq_command"]

EXIT_OK, EXIT_BAD_CONFIG = 0, 2


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
                    "the dead letter queue with its replay count.")
    replay.add_argument("worker", metavar="WORKER.properties")
    replay.add_argument("connector", metavar="CONNECTOR.properties", help="the connector, with its cause fixed")
    replay.add_argument("--dry-run", action="store_true", help="list what would be replayed, grouped by error")
    replay.add_argument("--error-class", help="only letters of this exception class (full or short name)")
    replay.add_argument("--stage", help="only letters of this stage (TRANSFORMATION, VALUE_CONVERTER, TASK_PUT, ...)")
    replay.add_argument("--topic", help="only letters whose original topic is this one")
    replay.add_argument("--since-ms", type=int, help="only letters written at or after this epoch millisecond")
    replay.add_argument("--until-ms", type=int, help="only letters written before this epoch millisecond")
    replay.add_argument("--max-replays", type=int, default=3,
                        help="skip letters already replayed this many times (default 3)")
    replay.set_defaults(func=run_dlq_command)


def run_dlq_command(args: argparse.Namespace) -> int:
    from connect_spark.config.definition import ConfigValidationError
    from connect_spark.config.validation import validate_configs
    from connect_spark.dlq_replay.replay import replay_dead_letters

    try:
        worker, (connector,) = validate_configs(args.worker, [args.connector])
    except ConfigValidationError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_CONFIG
    letter_filter = LetterFilter(args.error_class, args.stage, args.topic, args.since_ms, args.until_ms)
    spark = None
    if not args.dry_run:
        from connect_spark.spark_session import artifact_sets_for, get_or_create_session

        spark = get_or_create_session(None, app_name="connect-spark-dlq-replay", conf=worker.spark_conf(),
                                      optional_sets=artifact_sets_for([connector.connector_class]))
    result = replay_dead_letters(spark, worker, connector, letter_filter, args.dry_run, args.max_replays)
    print(result.report(args.dry_run))
    return EXIT_OK
