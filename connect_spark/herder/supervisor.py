"""The herder's supervisor: the one thread that makes this worker's connectors match the config store.

Kafka Connect's ``DistributedHerder`` tick loop. :meth:`Supervisor.run` runs on the worker's supervisor
thread; the herder's request side (REST threads) only marks connectors to look at (:meth:`Supervisor.mark`),
asks for restarts (:meth:`Supervisor.request_restart`) and waits for stops (:meth:`Supervisor.wait_until_stopped`).
Each loop *reconciles* every marked connector: it compares the config store's intent (config, target state)
with the handle it owns and starts, pauses, resumes, stops, restarts or drops handles to match, writing every
observed state change to the status store (``connect-status``) after
:func:`~connect_spark.status.states.check_transition`. Between reconciliations it ticks every running
handle, shows stalls in the status trace, and restarts connectors the restart policy has due.

On start-up every connector found in the config store is reconciled, so connectors come back after a
worker restart with their last target state. In a group (``group``: a
:class:`~connect_spark.herder.membership.WorkerGroup`) only the connectors the leader assigned to this worker
run, and those taken away are stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.herder.auto_restart import AutoRestarts
from connect_spark.herder.handle import ConnectorHandle, TaskFailure, format_trace
from connect_spark.status.records import StatusRecord
from connect_spark.status.states import IllegalTransition, State, TargetState, check_transition
from connect_spark.status.stores import ConfigStore, ConnectorConfigState, StatusStore

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["Supervisor", "HandleFactory"]

log = logging.getLogger(__name__)

HandleFactory = Callable[["ConnectorConfig"], ConnectorHandle]
"""Builds the handle of a validated connector configuration (the supervisor calls it from its thread)."""

_TICK_SECONDS = 0.2


@dataclass
class _Owned:
    """A connector the supervisor owns: its handle, the config it was built from, and what it is doing."""

    handle: ConnectorHandle
    properties: dict[str, str]
    generation: int = -1  # the group generation it was started in: its status writes carry it
    running: bool = False  # started and not paused
    failed: bool = False  # the connector or its tasks FAILED: only a restart (or a new config) brings it back


class Supervisor:
    """Owns the handles of one worker's connectors; see the module docstring.

    Args:
        worker: the worker configuration (the restart policy's defaults).
        config_store, status_store: ``connect-configs`` and ``connect-status`` (started by the caller).
        handle_factory: builds a connector's handle.
        worker_id: ``host:port`` written as ``worker_id`` in every status.
        validate: validates stored connector properties into a ``ConnectorConfig``.
        group: the worker group, or ``None`` for a worker alone.
    """

    def __init__(self, worker: "WorkerConfig", config_store: ConfigStore, status_store: StatusStore,
                 handle_factory: HandleFactory, worker_id: str,
                 validate: Callable[[Mapping[str, Any]], "ConnectorConfig"], group: Any = None) -> None:
        self.config_store = config_store
        self.status_store = status_store
        self.worker_id = worker_id
        self.group = group
        self._handle_factory = handle_factory
        self._validate = validate
        self._owned: dict[str, _Owned] = {}
        self._dirty: set[str] = set()
        self._busy: set[str] = set()
        self._restarts: dict[str, tuple[bool, bool]] = {}
        self._restarts_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop_requested = threading.Event()
        self._idle = threading.Condition()
        self.generation = 1
        if group is not None:
            group.bind_owned(lambda: set(self._owned))
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.auto_restarts = AutoRestarts(worker, validate)  # the restart policy (errors.restart.*)
        self.last_loop: float | None = None  # monotonic time of the last loop (GET /health)

    # -- called by the herder's request side (REST threads) ------------------------------------------

    def mark(self, name: str) -> None:
        """Reconcile ``name`` at the next loop (its config, target state or restart request changed)."""
        with self._idle:
            self._dirty.add(name)
        self._wake.set()

    def assignment_changed(self) -> None:
        """The group's assignment or membership changed (called from the group thread): reconcile everything."""
        with self._idle:
            self._dirty.update(self.config_store.connectors())
            self._dirty.update(self._owned)
        self._wake.set()

    def request_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        """Restart ``name`` at the next loop (the connector and its tasks run as one unit here)."""
        with self._restarts_lock:
            self._restarts[name] = (include_tasks, only_failed)
        self.mark(name)

    def owns(self, name: str) -> bool:
        """Whether this worker runs ``name`` now."""
        return name in self._owned

    def handle(self, name: str) -> ConnectorHandle | None:
        """The handle of ``name`` while this worker runs it."""
        owned = self._owned.get(name)
        return owned.handle if owned is not None else None

    def wait_until_stopped(self, name: str, timeout_s: float) -> bool:
        """Wait until ``name`` is neither owned nor about to be reconciled here, nor (in a group) still shown
        as not STOPPED by the worker that ran it. False when ``timeout_s`` passed first."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while name in self._owned or name in self._dirty or name in self._busy or self._stopping_elsewhere(name):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(min(remaining, 0.5))
        return True

    def _stopping_elsewhere(self, name: str) -> bool:
        if self.group is None:
            return False
        status = self.status_store.connector(name)
        return status is not None and status.state is not State.STOPPED

    # -- the supervisor thread -----------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask :meth:`run` to stop every connector and return. Safe from signal handlers and other threads."""
        self._stop_requested.set()
        self._wake.set()

    def run(self) -> None:
        """Reconcile every stored connector, then supervise until :meth:`request_stop`; stop everything at the end."""
        try:
            with self._idle:
                self._dirty.update(self.config_store.connectors())
            self.started.set()
            next_sweep = 0.0
            while not self._stop_requested.is_set():
                self._wake.wait(_TICK_SECONDS)
                self._wake.clear()
                if self._stop_requested.is_set():
                    break
                if self.group is not None and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + 1.0  # configs written by other workers reach the owner
                    self.assignment_changed()
                with self._idle:
                    dirty, self._dirty = set(self._dirty), set()
                    self._busy = set(dirty)
                for name in sorted(dirty):
                    self._reconcile_safely(name)
                if self.group is not None:
                    self.group.revocations_done()
                with self._idle:
                    self._busy = set()
                    self._idle.notify_all()
                self._tick_all()
                self.last_loop = time.monotonic()  # GET /health: the supervisor is turning
                for name in self.auto_restarts.take_due():
                    with self._restarts_lock:
                        self._restarts.setdefault(name, (True, False))
                    self.mark(name)
        finally:
            for name in list(self._owned):
                self._drop(name, state=State.UNASSIGNED)
            with self._idle:
                self._idle.notify_all()
            self.started.set()
            self.stopped.set()

    def _reconcile_safely(self, name: str) -> None:
        try:
            self._reconcile(name)
        except IllegalTransition as e:  # a bug: retrying would repeat it
            log.error("Connector %s: %s", name, e)
        except Exception as e:  # a store write failed: try again at the next wake-up
            log.error("Connector %s: reconciling failed, will retry: %r", name, e)
            with self._idle:
                self._dirty.add(name)

    def _reconcile(self, name: str) -> None:
        """Make the owned handle of ``name`` match what the config store says."""
        info = self.config_store.get(name)
        owned = self._owned.get(name)
        if self.group is not None and info is not None and name not in self.group.assigned():
            if owned is not None:
                log.info("Connector %s: no longer assigned to this worker, stopping it", name)
                self._drop(name, state=State.UNASSIGNED)
            return
        with self._restarts_lock:
            restart = self._restarts.pop(name, None)
        if info is None:
            self.auto_restarts.forget(name)
            if owned is not None:
                self._drop(name, state=None)
            if (owned is not None or self.group is None or self.group.is_leader) and not self._fenced(name, "deletes"):
                self.status_store.destroy(name)
            return
        if owned is not None and (owned.properties != info.properties or restart is not None):
            log.info("Connector %s: %s", name, "restarting" if restart is not None else "config changed, restarting")
            self._drop(name, state=State.RESTARTING if restart is not None else State.UNASSIGNED)
            owned = None
        elif owned is None and restart is not None:
            self._write(name, None, State.RESTARTING)
        target = info.target_state
        if target is TargetState.STOPPED:
            if owned is not None:
                self._drop(name, state=None)
            self._write(name, None, State.STOPPED)
            return
        if owned is None:
            try:
                config = self._validate(info.properties)
                handle = self._handle_factory(config)
            except Exception as e:
                log.error("Connector %s FAILED: its stored configuration is not valid: %s", name, e)
                self._write(name, None, State.FAILED, format_trace(e))
                return
            generation = self.group.generation if self.group is not None else self.generation
            owned = self._owned[name] = _Owned(handle, dict(info.properties), generation)
            if target is TargetState.PAUSED:
                self._write_all(name, owned, State.PAUSED, tasks_from=info.task_configs)
                return
            self._start(name, owned, info)
            return
        if owned.failed:
            return  # as in Connect, pause and resume leave FAILED instances alone until a restart
        if target is TargetState.PAUSED and owned.running:
            self._run_step(name, owned, owned.handle.pause)
            owned.running = False
            self._write_all(name, owned, State.PAUSED)
        elif target is TargetState.STARTED and not owned.running:
            if self._run_step(name, owned, owned.handle.resume):
                owned.running = True
                self._after_start(name, owned, info)

    def _start(self, name: str, owned: _Owned, info: ConnectorConfigState) -> None:
        if self._run_step(name, owned, owned.handle.start):
            owned.running = True
            self._after_start(name, owned, info)

    def _after_start(self, name: str, owned: _Owned, info: ConnectorConfigState) -> None:
        task_configs = owned.handle.task_configs()
        if task_configs and task_configs != info.task_configs:
            self.config_store.put_task_configs(name, task_configs)
        self.generation += 1
        self._write_all(name, owned, State.RUNNING)
        log.info("Connector %s RUNNING with %d task(s)", name, len(owned.handle.task_ids()))

    def _run_step(self, name: str, owned: _Owned, step: Callable[[], None]) -> bool:
        """Run a handle step; an exception fails the connector (status FAILED with the trace)."""
        try:
            step()
            return True
        except Exception as e:
            log.error("Connector %s FAILED: %s", name, e)
            owned.running = False
            owned.failed = True
            self._write(name, None, State.FAILED, self._failure_trace(name, owned, e, format_trace(e)))
            return False

    def _tick_all(self) -> None:
        for name, owned in list(self._owned.items()):
            if not owned.running:
                continue
            try:
                alive = owned.handle.tick()
            except TaskFailure as e:
                owned.running = False
                owned.failed = True
                note = self._failure_trace(name, owned, e, "")
                for task_id, trace in sorted(e.traces.items()):
                    log.error("Task %s-%d FAILED", name, task_id)
                    self._write(name, task_id, State.FAILED, trace + note)
                continue
            except Exception as e:
                owned.running = False
                owned.failed = True
                log.error("Connector %s FAILED: %s", name, e)
                self._write(name, None, State.FAILED, self._failure_trace(name, owned, e, format_trace(e)))
                continue
            self.auto_restarts.running(name)
            self._show_stall(name, owned)
            if not alive:
                log.info("Connector %s finished", name)
                self._drop(name, state=State.UNASSIGNED)

    def _show_stall(self, name: str, owned: _Owned) -> None:
        """A stall the connector reports (``errors.stall.action=log``) shows in its RUNNING status's trace
        while it lasts; the trace is cleared when the connector makes progress again."""
        stall = owned.handle.stall()
        trace = None if stall is None else f"stalled: {stall}"
        current = self.status_store.connector(name)
        if current is not None and current.state is State.RUNNING and current.trace != trace:
            self._write(name, None, State.RUNNING, trace)

    def _failure_trace(self, name: str, owned: _Owned, error: BaseException, trace: str) -> str:
        """The status trace of a failure, with the restart policy's planned attempt and time when there is one."""
        planned = self.auto_restarts.failed(name, owned.properties, error)
        return trace if planned is None else f"{trace}\n{planned}"

    def _drop(self, name: str, state: State | None) -> None:
        """Stop the handle, then forget it; tasks become ``state`` (``None``: their statuses are removed).

        The connector stays in the owned set until its handle has stopped (its final commit written or
        refused): a fenced worker rejoins its group only once it owns nothing, so no other worker is given
        the connector while this one may still commit for it.
        """
        owned = self._owned.get(name)
        if owned is None:
            return
        try:
            owned.handle.stop()
        except Exception as e:
            log.warning("Connector %s: stopping raised %r", name, e)
        finally:
            self._owned.pop(name, None)
        task_ids = set(owned.handle.task_ids()) | set(self.status_store.tasks(name))
        if state is None:
            if not self._fenced(name, "task status deletes"):
                self.status_store.put_all([StatusRecord(name, t, None) for t in sorted(task_ids)])
        else:
            if state is State.UNASSIGNED and self.group is not None:
                self.status_store.refresh()  # what a worker that took the connector over wrote meanwhile
            for task_id in sorted(task_ids):
                self._release(name, task_id, state, owned.generation)
            self._release(name, None, state, owned.generation)
        with self._idle:
            self._idle.notify_all()

    def _release(self, name: str, task: int | None, state: State, generation: int) -> None:
        """Write the state a dropped instance is left in, except UNASSIGNED over another worker's status.

        In a group, a worker that was suspended past its session timeout drops its connectors only after it
        resumes, possibly after it has rejoined (so it is no longer fenced): by then another worker runs them
        and its status stands (Kafka Connect's workers release a connector before the next owner starts it).
        The write carries the generation the connector was started in, so the status store also drops it
        when another worker wrote a status in a newer generation.
        """
        if state is State.UNASSIGNED and self.group is not None:
            current = self.status_store.connector(name) if task is None else self.status_store.task(name, task)
            if current is not None and current.worker_id and current.worker_id != self.worker_id:
                log.info("Connector %s: %s is run by worker %s now; its status stands", name,
                         "the connector" if task is None else f"task {task}", current.worker_id)
                return
        self._write(name, task, state, generation=generation)

    def _write_all(self, name: str, owned: _Owned, state: State,
                   tasks_from: list[dict[str, str]] | None = None) -> None:
        task_ids = owned.handle.task_ids() if tasks_from is None or not tasks_from else list(range(len(tasks_from)))
        for stale in set(self.status_store.tasks(name)) - set(task_ids):
            self.status_store.put(StatusRecord(name, stale, None))
        for task_id in task_ids:
            self._write(name, task_id, state)
        self._write(name, None, state)

    def _fenced(self, name: str, what: str) -> bool:
        """True (with a log line) when this worker lost its group membership: it writes no status then."""
        if self.group is None or not self.group.fenced():
            return False
        log.info("Connector %s: not writing %s, this worker lost its group membership", name, what)
        return True

    def _write(self, name: str, task: int | None, state: State, trace: str | None = None,
               generation: int | None = None) -> None:
        """Write a status. In a group it carries the generation the owned connector was started in (else the
        current one) and goes through the status store's ``put_safe``: a newer generation's status stands."""
        if self.group is None:
            current = self.status_store.connector(name) if task is None else self.status_store.task(name, task)
            check_transition(current.state if current else None, state, task=task is not None)
            self.status_store.put(StatusRecord(name, task, state, trace, self.worker_id, self.generation))
            return
        if self._fenced(name, state.value):  # another worker may own it now: its status is the one to keep
            return
        if generation is None:
            owned = self._owned.get(name)
            generation = owned.generation if owned is not None else self.group.generation
        current = self.status_store.connector(name) if task is None else self.status_store.task(name, task)
        check_transition(current.state if current else None, state, task=task is not None)
        self.status_store.put_safe(StatusRecord(name, task, state, trace, self.worker_id, generation))


