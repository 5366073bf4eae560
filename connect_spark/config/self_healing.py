"""The self-healing keys: the restart policy and stall detection, declared once for the worker and connectors.

The worker declares them with their defaults (:data:`WORKER_SELF_HEALING_DEF`); a connector may set any of
them too (:data:`CONNECTOR_SELF_HEALING_DEF`, not set: the worker's). Read through
:func:`self_healing_value`, which applies that rule; the runtime's users are
:mod:`connect_spark.runtime.worker.restarts` and :mod:`connect_spark.runtime.worker.stalls`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connect_spark.config.definition import ConfigDef, Importance, Range, Type, ValidString

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["WORKER_SELF_HEALING_DEF", "CONNECTOR_SELF_HEALING_DEF", "self_healing_value"]

_GROUP = "Self-healing (connect_spark)"

# key, type, worker default, validator, documentation
_KEYS: list[tuple[str, Type, Any, Any, str]] = [
    ("errors.restart.max.attempts", Type.INT, 0, Range.at_least(-1),
     "How many times a FAILED connector is restarted automatically (from its committed offsets) before it stays "
     "FAILED. 0: never, as in Kafka Connect; -1: without limit. Configuration errors and failures a task raises as "
     "NonRestartableException are never restarted."),
    ("errors.restart.backoff.min.ms", Type.LONG, 1000, Range.at_least(0),
     "Wait before the first automatic restart, in milliseconds; each further attempt waits twice as long."),
    ("errors.restart.backoff.max.ms", Type.LONG, 60000, Range.at_least(0),
     "Longest wait between two automatic restarts, in milliseconds."),
    ("errors.restart.backoff.jitter", Type.DOUBLE, 0.2, Range.between(0.0, 1.0),
     "Random share added to or taken from each wait (0.2: plus or minus 20%), so that connectors failing "
     "together do not restart together."),
    ("errors.restart.reset.after.ms", Type.LONG, 300000, Range.at_least(0),
     "After this long RUNNING since its last automatic restart, a connector's attempt count starts again from 0."),
    ("errors.stall.timeout.ms", Type.LONG, 0, Range.at_least(0),
     "Report a connector as stalled when its committed offsets have not moved for this long while records wait "
     "(lag above 0), or when one micro-batch has been running this long. 0: no stall detection."),
    ("errors.stall.action", Type.STRING, "log", ValidString.in_("log", "fail", case_insensitive=True),
     "What a stall does: log (a log line, the stall metric and the status trace) or fail (also fail the connector, "
     "so that the restart policy applies)."),
]


def _definition(with_defaults: bool) -> ConfigDef:
    cd = ConfigDef()
    for name, type_, default, validator, doc in _KEYS:
        if not with_defaults:
            doc = f"{doc} Not set: the worker's."
        cd.define(name, type_, default if with_defaults else None, validator, Importance.LOW, doc, _GROUP)
    return cd


WORKER_SELF_HEALING_DEF = _definition(with_defaults=True)
"""The worker's self-healing keys, with their defaults."""

CONNECTOR_SELF_HEALING_DEF = _definition(with_defaults=False)
"""The same keys on a connector: not set means the worker's value."""


def self_healing_value(key: str, worker: "WorkerConfig", connector: "ConnectorConfig | None") -> Any:
    """The connector's value of ``key`` when it sets one, else the worker's."""
    value = connector.get(key) if connector is not None else None
    return worker.get(key) if value is None else value
