"""``POST /connectors/{name}/dlq/replay``: DLQ replay as a REST action of the distributed worker.

Called by the REST route (:mod:`connect_spark.rest.app`) in its request thread: it validates the stored
connector configuration against the worker, runs :func:`~connect_spark.dlq_replay.replay.replay_dead_letters`
(a real replay uses the worker's SparkSession) and shapes the answer. The body's keys mirror the CLI's
options: ``dry_run``, ``error_class``, ``stage``, ``topic``, ``since_ms``, ``until_ms``, ``max_replays``,
``skip`` (a list of ``over-limit``, ``no-context``), ``chunk_size``. While another replay of the connector
runs the answer is 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from connect_spark.dlq_replay.letters import LetterFilter
from connect_spark.api.errors import ConfigException
from connect_spark.herder.errors import BadRequestError, ConflictError

if TYPE_CHECKING:
    from connect_spark.herder.herder import Herder

__all__ = ["replay_over_rest"]

_INTS = ("since_ms", "until_ms", "max_replays", "chunk_size")


def replay_over_rest(herder: "Herder", name: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
    """Replay (or list, with ``dry_run``) the dead letters of connector ``name``; the JSON answer."""
    from connect_spark.config.definition import ConfigValidationError
    from connect_spark.config.validation import validate_configs
    from connect_spark.dlq_replay.replay import CHUNK_SIZE, check_options, replay_dead_letters
    from connect_spark.dlq_replay.replay_log import ReplayInProgressError

    body = dict(body or {})
    for key in _INTS:
        if body.get(key) is not None and not isinstance(body[key], int):
            raise BadRequestError(f"Invalid {key} {body[key]!r}: an integer is expected")
    skip = body.get("skip") or []
    if not isinstance(skip, list) or not all(isinstance(x, str) for x in skip):
        raise BadRequestError(f"Invalid skip {skip!r}: a list of strings is expected")
    max_replays = 3 if body.get("max_replays") is None else body["max_replays"]
    chunk_size = CHUNK_SIZE if body.get("chunk_size") is None else body["chunk_size"]
    try:
        check_options(max_replays, skip, chunk_size)
    except ConfigException as e:
        raise BadRequestError(str(e)) from None
    properties = herder.connector_info(name).properties
    try:
        worker, (connector,) = validate_configs(herder.worker.originals, [dict(properties)])
    except ConfigValidationError as e:
        raise BadRequestError(f"Connector {name} has an invalid configuration: {e}") from None
    dry_run = bool(body.get("dry_run", False))
    spark = None
    if not dry_run:
        from connect_spark.spark_session import get_or_create_session

        spark = get_or_create_session(None, app_name="connect-spark", conf=worker.spark_conf())
    letter_filter = LetterFilter(body.get("error_class"), body.get("stage"), body.get("topic"),
                                 body.get("since_ms"), body.get("until_ms"))
    try:
        result = replay_dead_letters(spark, worker, connector, letter_filter, dry_run, max_replays, skip, chunk_size)
    except ReplayInProgressError as e:
        raise ConflictError(str(e)) from None
    return {"dry_run": dry_run, **result.as_json()}
