"""The status store (``connect-status``) and the config store (``connect-configs``).

Both fold the records of their :class:`~connect_spark.status.log.RecordLog` into an in-memory view,
as Kafka Connect's ``KafkaStatusBackingStore`` and ``KafkaConfigBackingStore`` do, and write through
it. The herder is their only writer in a worker: it writes a connector's config and target state when
the REST API asks, its task configs once the connector has generated them, and every status change.
The REST API reads the views.

Records of unknown shape (a Kafka Connect cluster's ``session-key``, source-connector fencing records,
garbage) are skipped with a DEBUG line: such a cluster's topics may be shared for reading.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from connect_spark.status import records as rec
from connect_spark.status.log import KafkaLog, MemoryLog, RecordLog
from connect_spark.status.states import State, TargetState

__all__ = ["StatusStore", "ConfigStore", "ConnectorConfigState", "status_store_for", "config_store_for"]

log = logging.getLogger(__name__)


class StatusStore:
    """Connector and task statuses, by connector name.

    Args:
        record_log: where the statuses are kept (:class:`KafkaLog` on ``status.storage.topic``).
    """

    def __init__(self, record_log: RecordLog) -> None:
        self._log = record_log
        self._lock = threading.RLock()
        self._connectors: dict[str, rec.StatusRecord] = {}
        self._tasks: dict[str, dict[int, rec.StatusRecord]] = {}
        record_log.bind(self._apply)

    def start(self) -> None:
        """Open the log and read every status written so far. Called once by the worker."""
        count = self._log.start()
        log.info("Status store started: %d record(s), %d connector(s)", count, len(self._connectors))

    def stop(self) -> None:
        self._log.stop()

    def refresh(self) -> None:
        """Read what other workers wrote since the last read (the group thread calls it every second)."""
        self._log.read_to_end()

    def _apply(self, key: str, value: bytes | None) -> None:
        try:
            status = rec.decode_status(key, value)
        except rec.UnexpectedRecord as e:
            log.debug("Skipping a status record: %s", e)
            return
        with self._lock:
            if status.task is None:
                if status.state is None:
                    self._connectors.pop(status.connector, None)
                else:
                    self._connectors[status.connector] = status
            else:
                tasks = self._tasks.setdefault(status.connector, {})
                if status.state is None:
                    tasks.pop(status.task, None)
                    if not tasks:
                        del self._tasks[status.connector]
                else:
                    tasks[status.task] = status

    def put(self, status: rec.StatusRecord) -> None:
        """Write one connector or task status (a ``None`` or DESTROYED state writes a tombstone)."""
        key = (rec.connector_status_key(status.connector) if status.task is None
               else rec.task_status_key(status.connector, status.task))
        value = None
        if status.state is not None and status.state is not State.DESTROYED:
            value = rec.encode_status(status.state, status.worker_id or "", status.generation, status.trace)
        self._log.send([(key, value)])

    def put_safe(self, status: rec.StatusRecord) -> bool:
        """Write ``status`` unless the status it would replace was written by another worker in a newer
        generation (Kafka Connect's ``putSafe``): a worker that lost a connector while it was suspended
        must not overwrite what the worker that took the connector over wrote. Decided on the view as read
        so far (the supervisor refreshes it before releasing a connector). Returns whether it was written.
        """
        with self._lock:
            current = (self._connectors.get(status.connector) if status.task is None
                       else self._tasks.get(status.connector, {}).get(status.task))
        if (current is not None and current.worker_id and current.worker_id != status.worker_id
                and current.generation > status.generation):
            log.info("Status of %s%s not written: %s from worker %s (generation %d) is newer than this worker's "
                     "generation %d", status.connector, "" if status.task is None else f" task {status.task}",
                     current.state.value if current.state else "none", current.worker_id, current.generation,
                     status.generation)
            return False
        self.put(status)
        return True

    def put_all(self, statuses: list[rec.StatusRecord]) -> None:
        """Write several statuses at once (a connector and its tasks)."""
        batch = []
        for status in statuses:
            key = (rec.connector_status_key(status.connector) if status.task is None
                   else rec.task_status_key(status.connector, status.task))
            value = None
            if status.state is not None and status.state is not State.DESTROYED:
                value = rec.encode_status(status.state, status.worker_id or "", status.generation, status.trace)
            batch.append((key, value))
        if batch:
            self._log.send(batch)

    def connector(self, name: str) -> rec.StatusRecord | None:
        with self._lock:
            return self._connectors.get(name)

    def tasks(self, name: str) -> dict[int, rec.StatusRecord]:
        with self._lock:
            return dict(sorted(self._tasks.get(name, {}).items()))

    def task(self, name: str, task: int) -> rec.StatusRecord | None:
        with self._lock:
            return self._tasks.get(name, {}).get(task)

    def destroy(self, name: str) -> None:
        """Tombstone the connector's status and every task status it has (the connector was deleted)."""
        with self._lock:
            tasks = list(self._tasks.get(name, {}))
        self.put_all([rec.StatusRecord(name, None, None)] + [rec.StatusRecord(name, t, None) for t in tasks])


@dataclass
class ConnectorConfigState:
    """What ``connect-configs`` holds for one connector."""

    name: str
    properties: dict[str, str]
    target_state: TargetState = TargetState.STARTED
    task_configs: list[dict[str, str]] = field(default_factory=list)


class ConfigStore:
    """Connector configs, task configs and target states, by connector name.

    Task configs are applied as Kafka Connect applies them: ``task-<name>-<n>`` records are buffered
    until the ``commit-<name>`` record that counts them is read, so a reader never sees half a set.

    Args:
        record_log: where the configs are kept (:class:`KafkaLog` on ``config.storage.topic``).
    """

    def __init__(self, record_log: RecordLog) -> None:
        self._log = record_log
        self._lock = threading.RLock()
        self._configs: dict[str, dict[str, str]] = {}
        self._targets: dict[str, TargetState] = {}
        self._tasks: dict[str, list[dict[str, str]]] = {}
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self.records_read = 0  # config records applied: what a group member reports when it joins
        record_log.bind(self._apply)

    def start(self) -> None:
        """Open the log and read every config written so far. Called once by the worker."""
        count = self._log.start()
        log.info("Config store started: %d record(s), %d connector(s)", count, len(self._configs))

    def stop(self) -> None:
        self._log.stop()

    def refresh(self) -> None:
        """Read what other processes wrote since the last read."""
        self._log.read_to_end()

    def _apply(self, key: str, value: bytes | None) -> None:
        self.records_read += 1
        try:
            record = rec.decode_config(key, value)
        except rec.UnexpectedRecord as e:
            log.debug("Skipping a config record: %s", e)
            return
        name = record.connector
        with self._lock:
            if record.kind == "connector":
                if record.properties is None:
                    self._configs.pop(name, None)
                    self._targets.pop(name, None)
                    self._tasks.pop(name, None)
                    self._pending_tasks.pop(name, None)
                else:
                    self._configs[name] = record.properties
            elif record.kind == "task" and record.task is not None:
                if record.properties is not None:
                    self._pending_tasks.setdefault(name, {})[record.task] = record.properties
            elif record.kind == "commit":
                pending = self._pending_tasks.pop(name, {})
                count = record.tasks or 0
                if all(i in pending for i in range(count)):
                    self._tasks[name] = [pending[i] for i in range(count)]
                else:
                    log.warning("Ignoring the task configs of %s: commit-%s counts %d task(s) but not all were read",
                                name, name, count)
            elif record.kind == "target-state":
                if record.target_state is None:
                    self._targets.pop(name, None)
                else:
                    self._targets[name] = record.target_state

    # -- reading ------------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._configs)

    def get(self, name: str) -> ConnectorConfigState | None:
        with self._lock:
            props = self._configs.get(name)
            if props is None:
                return None
            return ConnectorConfigState(name, dict(props), self._targets.get(name, TargetState.STARTED),
                                        [dict(t) for t in self._tasks.get(name, [])])

    # -- writing ------------------------------------------------------------------------------------

    def put_connector_config(self, name: str, properties: Mapping[str, Any],
                             target_state: TargetState | None = None) -> None:
        """Write a connector's config; with ``target_state``, its target state first (as Connect does at creation)."""
        batch = []
        if target_state is not None:
            batch.append((rec.target_state_key(name), rec.encode_target_state(target_state)))
        batch.append((rec.connector_config_key(name), rec.encode_properties(properties)))
        self._log.send(batch)

    def put_task_configs(self, name: str, task_configs: list[Mapping[str, Any]]) -> None:
        """Write the task configs, then the ``commit-<name>`` record that makes them visible."""
        batch = [(rec.task_config_key(name, i), rec.encode_properties(c)) for i, c in enumerate(task_configs)]
        batch.append((rec.commit_key(name), rec.encode_commit(len(task_configs))))
        self._log.send(batch)

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._log.send([(rec.target_state_key(name), rec.encode_target_state(state))])

    def remove_connector(self, name: str) -> None:
        """Tombstone the connector's config and target state (``DELETE /connectors/{name}``)."""
        self._log.send([(rec.connector_config_key(name), None), (rec.target_state_key(name), None)])


def status_store_for(worker: Any) -> StatusStore:
    """The status store on the worker's ``status.storage.topic``."""
    return StatusStore(KafkaLog(worker.bootstrap_servers, worker.status_storage_topic, worker.status_storage_partitions,
                                worker.status_storage_replication_factor, worker.kafka_client_config(),
                                config_key="status.storage.topic"))


def config_store_for(worker: Any) -> ConfigStore:
    """The config store on the worker's ``config.storage.topic`` (one partition, as Connect requires)."""
    return ConfigStore(KafkaLog(worker.bootstrap_servers, worker.config_storage_topic, 1,
                                worker.config_storage_replication_factor, worker.kafka_client_config(),
                                config_key="config.storage.topic"))


def memory_stores() -> tuple[StatusStore, ConfigStore]:
    """A status and a config store kept in this process only."""
    return StatusStore(MemoryLog()), ConfigStore(MemoryLog())
