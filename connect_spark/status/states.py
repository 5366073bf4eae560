"""Connector and task states, as Kafka Connect names them, and the transitions the herder may make.

Two kinds of state, as in Kafka Connect:

* the *target state* (:class:`TargetState`) is what the user asked for with ``PUT /pause``,
  ``/resume`` or ``/stop`` (or ``initial_state`` at creation); it is kept in ``connect-configs``;
* the *observed state* (:class:`State`) is what a connector or task is doing; it is written to
  ``connect-status`` by the herder and shown by ``GET /connectors/{name}/status``.

The herder calls :func:`check_transition` before it writes an observed state, so an impossible move
(a task becoming STOPPED, anything leaving DESTROYED) is a bug caught where it happens.
"""

from __future__ import annotations

import enum

from connect_spark.api.errors import ConnectException

__all__ = ["State", "TargetState", "IllegalTransition", "check_transition", "TRANSITIONS"]


class State(str, enum.Enum):
    """The observed state of a connector or a task (``AbstractStatus.State``)."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"  # connectors only
    DESTROYED = "DESTROYED"  # written as a tombstone, never shown

    def __str__(self) -> str:
        return self.value


class TargetState(str, enum.Enum):
    """What the user asked a connector to do (``TargetState``)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    def __str__(self) -> str:
        return self.value


class IllegalTransition(ConnectException):
    """The herder tried a state change Kafka Connect never makes."""


_ANY_LIVE = {State.UNASSIGNED, State.RUNNING, State.PAUSED, State.FAILED, State.RESTARTING, State.STOPPED}

TRANSITIONS: dict[State, frozenset[State]] = {
    # A new or reassigned instance starts RUNNING, or PAUSED/STOPPED when that is its target state.
    State.UNASSIGNED: frozenset({State.RUNNING, State.PAUSED, State.STOPPED, State.FAILED, State.RESTARTING,
                                 State.UNASSIGNED, State.DESTROYED}),
    State.RUNNING: frozenset({State.PAUSED, State.STOPPED, State.FAILED, State.UNASSIGNED, State.RESTARTING,
                              State.RUNNING, State.DESTROYED}),
    State.PAUSED: frozenset({State.RUNNING, State.STOPPED, State.FAILED, State.UNASSIGNED, State.RESTARTING,
                             State.PAUSED, State.DESTROYED}),
    # FAILED is terminal until a restart (or a new target state that stops or restarts the instance).
    State.FAILED: frozenset({State.RESTARTING, State.UNASSIGNED, State.STOPPED, State.FAILED, State.DESTROYED}),
    State.RESTARTING: frozenset({State.RUNNING, State.PAUSED, State.STOPPED, State.FAILED, State.UNASSIGNED,
                                 State.RESTARTING, State.DESTROYED}),
    # A stopped connector comes back only through resume (RUNNING, via RESTARTING or UNASSIGNED).
    State.STOPPED: frozenset({State.RUNNING, State.RESTARTING, State.UNASSIGNED, State.STOPPED, State.PAUSED,
                              State.DESTROYED}),
    State.DESTROYED: frozenset(),
}
"""Observed state → the states it may move to (staying in the same state is allowed: rewrites are idempotent)."""

assert set(TRANSITIONS) == _ANY_LIVE | {State.DESTROYED}


def check_transition(current: State | None, new: State, *, task: bool) -> None:
    """Raise :class:`IllegalTransition` unless ``current`` → ``new`` is a move Kafka Connect makes.

    Args:
        current: the state written last, or ``None`` for an instance with no status yet.
        new: the state about to be written.
        task: ``True`` for a task (tasks are never STOPPED: a stopped connector has no tasks).
    """
    if task and new is State.STOPPED:
        raise IllegalTransition("A task is never STOPPED: a stopped connector has no tasks (they become UNASSIGNED)")
    if current is None:
        return
    if new not in TRANSITIONS[current]:
        raise IllegalTransition(f"A {'task' if task else 'connector'} cannot go from {current} to {new}")
