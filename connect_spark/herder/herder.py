"""The herder: owns the connectors of a distributed-mode worker and answers the REST API.

Two sides, as Kafka Connect's ``DistributedHerder``:

* **Requests** (REST threads) never touch a running connector. They validate, write the user's intent
  to the config store (``connect-configs``: the connector config, its target state, empty task configs
  for a stop) and wake the supervisor. What the API shows comes from the stores.
* **The supervisor** (one thread: :meth:`Herder.run`, :class:`~connect_spark.herder.supervisor.Supervisor`)
  *reconciles*: for every connector it compares the config store's intent with the handle it owns, and
  starts, pauses, resumes, stops, restarts or drops handles to match, writing every observed state change
  to the status store (``connect-status``). Between reconciliations it ticks every running handle.

This module is the request side. Alone, a worker owns every connector; in a
group (``group`` given: a :class:`~connect_spark.herder.membership.WorkerGroup`) it runs only the
connectors the group's leader assigned to it, stops the ones taken away, and refuses writes (409) while
the group rebalances.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.secrets import is_secret_key
from connect_spark.herder.errors import AlreadyExistsError, BadRequestError, ConflictError, NotFoundError
from connect_spark.herder.initial_offsets import write_initial_offsets
from connect_spark.herder.supervisor import HandleFactory, Supervisor
from connect_spark.status.records import StatusRecord
from connect_spark.status.states import State, TargetState
from connect_spark.status.stores import ConfigStore, ConnectorConfigState, StatusStore

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.herder.auto_restart import AutoRestarts
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["Herder", "HandleFactory", "ConnectorStatus"]

log = logging.getLogger(__name__)


@dataclass
class ConnectorStatus:
    """A connector's status as ``GET /connectors/{name}/status`` shows it."""

    name: str
    connector: StatusRecord
    tasks: list[StatusRecord]


class Herder:
    """Owns the connectors of one worker; see the module docstring.

    Args:
        worker: the worker configuration.
        config_store: ``connect-configs`` (started by the caller).
        status_store: ``connect-status`` (started by the caller).
        offset_store: ``connect-offsets`` (started by the caller).
        handle_factory: builds a connector's handle (:class:`~connect_spark.herder.handle.RunnerHandle` in a worker).
        worker_id: ``host:port`` written as ``worker_id`` in every status.
        validate: validates a connector's properties into a ``ConnectorConfig``; the default checks them
            against the worker exactly as ``connect-spark standalone`` does.
    """

    def __init__(
        self,
        worker: "WorkerConfig",
        config_store: ConfigStore,
        status_store: StatusStore,
        offset_store: "OffsetStore",
        handle_factory: HandleFactory,
        worker_id: str,
        validate: Callable[[Mapping[str, Any]], "ConnectorConfig"] | None = None,
        group: Any = None,
    ) -> None:
        self.worker = worker
        self.config_store = config_store
        self.status_store = status_store
        self.offset_store = offset_store
        self.worker_id = worker_id
        self._validate = validate or self._validate_with_worker
        self._requests_lock = threading.Lock()  # one config-store write sequence at a time
        self.group = group
        self.supervisor = Supervisor(worker, config_store, status_store, handle_factory, worker_id, self._validate,
                                     group)

    @property
    def started(self) -> threading.Event:
        """Set once the supervisor has taken up the stored connectors (or ended)."""
        return self.supervisor.started

    @property
    def stopped(self) -> threading.Event:
        """Set once the supervisor has stopped every connector and returned."""
        return self.supervisor.stopped

    @property
    def last_loop(self) -> float | None:
        """Monotonic time of the supervisor's last loop (``GET /health``: it is turning)."""
        return self.supervisor.last_loop

    @property
    def auto_restarts(self) -> "AutoRestarts":
        """The restart policy's bookkeeping (``errors.restart.*``)."""
        return self.supervisor.auto_restarts

    def run(self) -> None:
        """The supervisor thread's body (:meth:`Supervisor.run`): reconcile and supervise until :meth:`request_stop`."""
        self.supervisor.run()

    def request_stop(self) -> None:
        """Ask :meth:`run` to stop every connector and return. Safe from signal handlers and other threads."""
        self.supervisor.request_stop()

    def assignment_changed(self) -> None:
        """The group's assignment or membership changed (called from the group thread): reconcile everything."""
        self.supervisor.assignment_changed()

    # ================================================================================================
    # Requests (REST threads)
    # ================================================================================================

    def connectors(self) -> list[str]:
        return self.config_store.connectors()

    def connector_info(self, name: str) -> ConnectorConfigState:
        """The connector's config, target state and task configs. Raises NotFoundError."""
        state = self.config_store.get(name)
        if state is None:
            raise NotFoundError(f"Connector {name} not found")
        return state

    def create_connector(self, name: str, config: Mapping[str, Any], initial_state: TargetState = TargetState.STARTED,
                         initial_offsets: Mapping[TopicPartition, int] | None = None) -> ConnectorConfigState:
        """``POST /connectors``: validate, write target state and config, and let the supervisor start it.
        ``initial_offsets`` (KIP-995) are written first; if the config cannot be written they are removed."""
        props = self._checked_props(name, config)
        with self._requests_lock:
            if self.config_store.get(name) is not None:
                raise AlreadyExistsError(f"Connector {name} already exists")
            write_initial_offsets(self.offset_store, name, initial_offsets,
                                  lambda: self.config_store.put_connector_config(name, props, initial_state))
        log.info("Connector %s created (initial state %s)", name, initial_state)
        self._mark(name)
        return self.connector_info(name)

    def put_connector_config(self, name: str, config: Mapping[str, Any]) -> tuple[bool, ConnectorConfigState]:
        """``PUT /connectors/{name}/config``: create, or replace the config (the connector restarts). Returns (created, info)."""
        props = self._checked_props(name, config)
        with self._requests_lock:
            created = self.config_store.get(name) is None
            self.config_store.put_connector_config(name, props, TargetState.STARTED if created else None)
        log.info("Connector %s %s", name, "created" if created else "reconfigured")
        self._mark(name)
        return created, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, Any]) -> ConnectorConfigState:
        """``PATCH /connectors/{name}/config``: merge ``patch`` (a ``null`` value removes the key)."""
        with self._requests_lock:
            current = self.connector_info(name).properties
            merged = {k: v for k, v in {**current, **patch}.items() if v is not None}
            props = self._checked_props(name, merged)
            self.config_store.put_connector_config(name, props)
        self._mark(name)
        return self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        self.check_not_rebalancing()
        with self._requests_lock:
            self.connector_info(name)
            self.config_store.remove_connector(name)
        log.info("Connector %s deleted", name)
        self._mark(name)

    def pause_connector(self, name: str) -> None:
        self._set_target(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """``PUT /stop``: empty task configs first, then target state STOPPED (Connect's order)."""
        with self._requests_lock:
            self.connector_info(name)
            self.config_store.put_task_configs(name, [])
            self.config_store.put_target_state(name, TargetState.STOPPED)
        self._mark(name)

    def _set_target(self, name: str, state: TargetState) -> None:
        self.check_not_rebalancing()
        with self._requests_lock:
            if self.connector_info(name).target_state is not state:
                self.config_store.put_target_state(name, state)
        self._mark(name)

    def restart_connector(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> ConnectorStatus | None:
        """``POST /restart``: the status with the instances to restart shown RESTARTING (None: Connect's plain 204 case).

        The connector and its tasks run as one unit here, so restarting any of them restarts the unit.
        """
        info = self.connector_info(name)
        status = self.connector_status(name)
        restart_connector = not only_failed or status.connector.state is State.FAILED
        restart_tasks = [t.task for t in status.tasks
                         if include_tasks and (not only_failed or t.state is State.FAILED)]
        plain = not include_tasks and not only_failed
        if info.target_state is TargetState.STOPPED or not (restart_connector or restart_tasks):
            return None if plain else status
        if not self._forwarded(name, f"/connectors/{name}/restart",
                               {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}):
            self.supervisor.request_restart(name, include_tasks, only_failed)
        if plain:
            return None
        shown_connector = status.connector
        if restart_connector:
            shown_connector = _with_state(shown_connector, State.RESTARTING)
        tasks = [_with_state(t, State.RESTARTING) if t.task in restart_tasks else t for t in status.tasks]
        return ConnectorStatus(name, shown_connector, tasks)

    def restart_task(self, name: str, task: int) -> None:
        """``POST /tasks/{task}/restart``. Raises NotFoundError for an unknown connector or task."""
        info = self.connector_info(name)
        if task < 0 or task >= max(len(info.task_configs), len(self.status_store.tasks(name))):
            raise NotFoundError(f"Task {name}-{task} not found")
        if self._forwarded(name, f"/connectors/{name}/tasks/{task}/restart", {}):
            return
        self.supervisor.request_restart(name, True, False)

    def _forwarded(self, name: str, path: str, query: dict[str, str]) -> bool:
        """In a group, send a restart to the worker running ``name`` when it is another one; True when sent."""
        if self.group is None or self.supervisor.owns(name):
            return False
        status = self.status_store.connector(name)
        if status is None or not status.worker_id or status.worker_id == self.worker_id:
            return False
        from connect_spark.herder.forwarding import forward_post

        forward_post(status.worker_id, path, query, self.worker.rest_basic_auth)
        return True

    def connector_status(self, name: str) -> ConnectorStatus:
        self.connector_info(name)
        connector = self.status_store.connector(name) or StatusRecord(name, None, State.UNASSIGNED, None, self.worker_id)
        return ConnectorStatus(name, connector, list(self.status_store.tasks(name).values()))

    def task_status(self, name: str, task: int) -> StatusRecord:
        self.connector_info(name)
        status = self.status_store.task(name, task)
        if status is None:
            raise NotFoundError(f"No status found for task {name}-{task}")
        return status

    # -- offsets (KIP-875) --------------------------------------------------------------------------

    def connector_metrics(self, name: str) -> dict[str, Any] | None:
        """The connector's metrics while this worker runs it (None otherwise). Raises NotFoundError."""
        self.connector_info(name)
        handle = self.supervisor.handle(name)
        metrics = getattr(handle, "metrics", None) if handle is not None else None
        return metrics() if metrics is not None else None

    def connector_offsets(self, name: str) -> dict[TopicPartition, int]:
        self.connector_info(name)
        return self.offset_store.read(name)

    def alter_offsets(self, name: str, offsets: Mapping[TopicPartition, int | None]) -> None:
        """``PATCH /offsets``: move (or, with ``None``, reset) committed offsets of a STOPPED connector."""
        self._require_stopped(name)
        if not offsets:
            raise BadRequestError("The offsets to alter must not be empty")
        self.offset_store.write(name, dict(offsets))

    def reset_offsets(self, name: str) -> None:
        """``DELETE /offsets``: forget every committed offset of a STOPPED connector."""
        self._require_stopped(name)
        committed = self.offset_store.read(name)
        if committed:
            self.offset_store.write(name, {tp: None for tp in committed})

    def _require_stopped(self, name: str, timeout_s: float = 30.0) -> None:
        if self.connector_info(name).target_state is not TargetState.STOPPED:
            raise BadRequestError(
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
                f"for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")
        # The stop may still be in progress on the supervisor (in a group: on the worker that ran it, until
        # it writes STOPPED): wait until its final commit is done.
        if not self.supervisor.wait_until_stopped(name, timeout_s):
            raise ConflictError(f"Connector {name} is still stopping; try again shortly")

    # -- helpers ------------------------------------------------------------------------------------

    def _checked_props(self, name: str, config: Mapping[str, Any]) -> dict[str, str]:
        self.check_not_rebalancing()
        if not name or not str(name).strip():
            raise BadRequestError("Connector name is required and must not be empty")
        props = {str(k): (None if v is None else str(v)) for k, v in config.items()}
        given = props.get("name")
        if given is not None and given != name:
            raise BadRequestError(f"Connector name configuration ({given}) doesn't match connector name in the URL ({name})")
        props["name"] = name
        props = {k: v for k, v in props.items() if v is not None}
        self._validate(props)
        literal_secrets = sorted(k for k, v in props.items() if is_secret_key(k) and not v.startswith("${"))
        if literal_secrets:
            log.warning("Connector %s: %s stored in plain text in the config topic, as Kafka Connect does; use a "
                        "config provider reference (${file:...}) to keep the secret out of it",
                        name, ", ".join(literal_secrets))
        return props

    def _validate_with_worker(self, props: Mapping[str, Any]) -> "ConnectorConfig":
        from connect_spark.config.validation import validate_configs

        try:
            _, (config,) = validate_configs(self.worker.originals, [dict(props)])
        except ConfigValidationError as e:
            lines = [str(issue.message) for issue in e.issues]
            raise BadRequestError(f"Connector configuration is invalid and contains the following {len(lines)} "
                                  "error(s):\n" + "\n".join(lines)) from None
        return config

    def check_not_rebalancing(self) -> None:
        """Writes wait for the group to settle, as Kafka Connect's (409 Conflict while it rebalances)."""
        if self.group is not None and self.group.rebalancing:
            raise ConflictError("Cannot complete request because of a conflicting operation (e.g. worker rebalance)")

    def worker_info(self) -> dict[str, Any]:
        """What ``GET /`` adds about this worker and its group (``group`` only in a worker group)."""
        info: dict[str, Any] = {"worker_id": self.worker_id}
        group = self.group
        if group is not None:
            info["group"] = {"group_id": self.worker.group_id, "generation": group.generation,
                             "leader_url": group.leader_url, "leader": group.is_leader,
                             "rebalancing": group.rebalancing, "rebalances": group.rebalances,
                             "last_rebalance": group.last_rebalance,
                             "assigned": sorted(group.assigned())}
        return info

    def rebalance_metrics_text(self) -> str:
        """This worker's rebalance metrics in Prometheus' text format, named as the JMX exporter names Connect's
        ``connect-worker-rebalance-metrics`` (empty for a worker alone)."""
        if self.group is None:
            return ""
        lines = []
        for name, value in self.group.rebalance_metrics().items():
            metric = "kafka_connect_connect_worker_rebalance_metrics_" + name.replace("-", "_")
            lines += [f"# TYPE {metric} {'counter' if name.endswith('-total') else 'gauge'}",
                      f'{metric}{{worker_id="{self.worker_id}"}} {value:g}']
        return "\n".join(lines) + "\n"

    def _mark(self, name: str) -> None:
        self.supervisor.mark(name)



def _with_state(status: StatusRecord, state: State) -> StatusRecord:
    return StatusRecord(status.connector, status.task, state, None, status.worker_id, status.generation)
