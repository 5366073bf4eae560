"""The keys and JSON values of ``connect-status`` and ``connect-configs``, exactly as Kafka Connect writes them.

Pure functions, no Kafka client: the Kafka-backed stores call them to encode what they write and to
decode what they read, so a Kafka Connect cluster's tooling can read connect_spark's topics and the
other way round (``KafkaStatusBackingStore`` and ``KafkaConfigBackingStore`` are the reference).

``connect-status`` (keys are plain strings, values compact JSON)::

    status-connector-<name>        {"state":"RUNNING","trace":null,"worker_id":"127.0.0.1:8083","generation":3}
    status-task-<name>-<n>         the same fields

``connect-configs``::

    connector-<name>               {"properties":{...connector config...}}
    task-<name>-<n>                {"properties":{...task config...}}
    commit-<name>                  {"tasks":<number of task configs just written>}
    target-state-<name>            {"state":"STARTED"|"PAUSED","state.v2":"STARTED"|"PAUSED"|"STOPPED"}
    restart-connector-<name>       {"include-tasks":false,"only-failed":false}

A ``None`` value is a tombstone (a deleted connector, a destroyed status).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from connect_spark.api.errors import ConnectException
from connect_spark.status.states import State, TargetState

__all__ = [
    "StatusRecord",
    "ConfigRecord",
    "UnexpectedRecord",
    "connector_status_key",
    "task_status_key",
    "encode_status",
    "decode_status",
    "connector_config_key",
    "task_config_key",
    "commit_key",
    "target_state_key",
    "restart_key",
    "encode_properties",
    "encode_commit",
    "encode_target_state",
    "encode_restart",
    "decode_config",
]

_STATUS_CONNECTOR = "status-connector-"
_STATUS_TASK = "status-task-"
_CONNECTOR = "connector-"
_TASK = "task-"
_COMMIT = "commit-"
_TARGET_STATE = "target-state-"
_RESTART = "restart-connector-"


class UnexpectedRecord(ConnectException):
    """A record of a status or config topic whose key or value has none of the known shapes."""


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=False).encode("utf-8")


def _loads(raw: bytes | None, key: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise UnexpectedRecord(f"the value of {key!r} is not JSON: {e}") from None


# --- connect-status -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusRecord:
    """One decoded ``connect-status`` record; ``state`` is ``None`` for a tombstone.

    Attributes:
        connector: the connector name.
        task: the task number, or ``None`` for the connector's own status.
        state: the observed state.
        trace: the stack trace of a FAILED instance.
        worker_id: ``host:port`` of the worker that wrote it.
        generation: the herder generation it was written in.
    """

    connector: str
    task: int | None
    state: State | None
    trace: str | None = None
    worker_id: str | None = None
    generation: int = 0


def connector_status_key(connector: str) -> str:
    return f"{_STATUS_CONNECTOR}{connector}"


def task_status_key(connector: str, task: int) -> str:
    return f"{_STATUS_TASK}{connector}-{task}"


def encode_status(state: State, worker_id: str, generation: int, trace: str | None = None) -> bytes:
    """The value of a status record (a DESTROYED status is a tombstone: do not call this for it)."""
    if state is State.DESTROYED:
        raise ValueError("DESTROYED is written as a tombstone")
    return _dumps({"state": state.value, "trace": trace, "worker_id": worker_id, "generation": int(generation)})


def decode_status(key: str, value: bytes | None) -> StatusRecord:
    """Decode one ``connect-status`` record.

    Task keys are split as Kafka Connect splits them: the last ``-`` separates the task number, so
    connector names may themselves contain dashes.

    Raises:
        UnexpectedRecord: the key or value has another shape (``status-topic-*`` records among them).
    """
    if key.startswith(_STATUS_CONNECTOR):
        connector, task = key[len(_STATUS_CONNECTOR):], None
    elif key.startswith(_STATUS_TASK):
        connector, sep, number = key[len(_STATUS_TASK):].rpartition("-")
        if not sep or not connector or not number.isdigit():
            raise UnexpectedRecord(f"task status key {key!r} does not end with -<task number>")
        task = int(number)
    else:
        raise UnexpectedRecord(f"{key!r} is not a connector or task status key")
    data = _loads(value, key)
    if data is None:
        return StatusRecord(connector, task, None)
    if not isinstance(data, dict) or "state" not in data:
        raise UnexpectedRecord(f"the value of {key!r} has no state")
    try:
        state = State(data["state"])
    except ValueError:
        raise UnexpectedRecord(f"the value of {key!r} has an unknown state {data['state']!r}") from None
    generation = data.get("generation")
    return StatusRecord(connector, task, state, data.get("trace"), data.get("worker_id"),
                        int(generation) if isinstance(generation, int) else 0)


# --- connect-configs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigRecord:
    """One decoded ``connect-configs`` record.

    Attributes:
        kind: ``connector``, ``task``, ``commit``, ``target-state`` or ``restart``.
        connector: the connector name.
        task: the task number (``task`` records only).
        properties: the configuration (``connector``/``task``; ``None`` for a tombstone).
        tasks: the number of task configs (``commit``).
        target_state: the target state (``target-state``; ``None`` for a tombstone).
        include_tasks, only_failed: the restart request (``restart``).
    """

    kind: str
    connector: str
    task: int | None = None
    properties: dict[str, str] | None = None
    tasks: int | None = None
    target_state: TargetState | None = None
    include_tasks: bool = False
    only_failed: bool = False


def connector_config_key(connector: str) -> str:
    return f"{_CONNECTOR}{connector}"


def task_config_key(connector: str, task: int) -> str:
    return f"{_TASK}{connector}-{task}"


def commit_key(connector: str) -> str:
    return f"{_COMMIT}{connector}"


def target_state_key(connector: str) -> str:
    return f"{_TARGET_STATE}{connector}"


def restart_key(connector: str) -> str:
    return f"{_RESTART}{connector}"


def encode_properties(properties: Mapping[str, Any]) -> bytes:
    """The value of a ``connector-*`` or ``task-*`` record: every value as a string, as Connect stores them."""
    return _dumps({"properties": {str(k): (None if v is None else str(v)) for k, v in properties.items()}})


def encode_commit(tasks: int) -> bytes:
    return _dumps({"tasks": int(tasks)})


def encode_target_state(state: TargetState) -> bytes:
    """``state`` is what workers before KIP-875 read: they know no STOPPED, so it is written as PAUSED there."""
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return _dumps({"state": legacy.value, "state.v2": state.value})


def encode_restart(include_tasks: bool, only_failed: bool) -> bytes:
    return _dumps({"include-tasks": bool(include_tasks), "only-failed": bool(only_failed)})


def _properties(data: Any, key: str) -> dict[str, str] | None:
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("properties"), dict):
        raise UnexpectedRecord(f"the value of {key!r} has no properties object")
    return {str(k): v for k, v in data["properties"].items()}


def decode_config(key: str, value: bytes | None) -> ConfigRecord:
    """Decode one ``connect-configs`` record.

    Raises:
        UnexpectedRecord: a key this runtime does not use (``session-key``, ``tasks-fencing-*``,
            ``logger-cluster-*``) or a value of the wrong shape.
    """
    data = _loads(value, key)
    if key.startswith(_CONNECTOR):
        return ConfigRecord("connector", key[len(_CONNECTOR):], properties=_properties(data, key))
    if key.startswith(_TASK) and not key.startswith("tasks-"):
        connector, sep, number = key[len(_TASK):].rpartition("-")
        if not sep or not number.isdigit():
            raise UnexpectedRecord(f"task config key {key!r} does not end with -<task number>")
        return ConfigRecord("task", connector, task=int(number), properties=_properties(data, key))
    if key.startswith(_COMMIT):
        if not isinstance(data, dict) or not isinstance(data.get("tasks"), int):
            raise UnexpectedRecord(f"the value of {key!r} has no task count")
        return ConfigRecord("commit", key[len(_COMMIT):], tasks=data["tasks"])
    if key.startswith(_TARGET_STATE):
        connector = key[len(_TARGET_STATE):]
        if data is None:
            return ConfigRecord("target-state", connector)
        raw = data.get("state.v2", data.get("state")) if isinstance(data, dict) else None
        try:
            return ConfigRecord("target-state", connector, target_state=TargetState(raw))
        except ValueError:
            raise UnexpectedRecord(f"the value of {key!r} has an unknown target state {raw!r}") from None
    if key.startswith(_RESTART):
        data = data or {}
        return ConfigRecord("restart", key[len(_RESTART):], include_tasks=bool(data.get("include-tasks")),
                            only_failed=bool(data.get("only-failed")))
    raise UnexpectedRecord(f"{key!r} is not a key this runtime uses")
