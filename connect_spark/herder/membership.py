"""A distributed worker's membership in its ``group.id``, through Kafka's group protocol.

:class:`WorkerGroup` runs one thread that keeps this worker in the group (kafka-python's
``BaseCoordinator``, the generic group client Kafka Connect's ``WorkerCoordinator`` also extends, with
protocol type ``connect-spark``): it joins, heartbeats, rejoins when the coordinator starts a rebalance,
and leaves the group on :meth:`WorkerGroup.close`. Every member reports its worker id, REST URL, how many
config records it has read and the connectors it runs; the leader reads the config topic, asks the
status store which connectors a departed worker ran, and computes the assignment with
:func:`~connect_spark.herder.assignor.assign`.

The herder reads :meth:`WorkerGroup.assigned` at every reconciliation: it starts what is assigned and
stops the rest. A worker that lost its membership (:meth:`WorkerGroup.fenced`: its session expired or
the coordinator forgot it) is assigned nothing, and its offset commits are refused (see
:class:`~connect_spark.storage.owner.OffsetOwner`; the broker fences them too).

The group hooks run on kafka-python's network loop, so they only record state; the stopping and
starting happens on the herder's supervisor thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from kafka.coordinator.base import BaseCoordinator, MemberState as KafkaMemberState

from connect_spark.herder.assignor import MemberState, assign
from connect_spark.status.states import State

if TYPE_CHECKING:
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.status.stores import ConfigStore, StatusStore

__all__ = ["WorkerGroup", "PROTOCOL_TYPE"]

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "connect-spark"
_PROTOCOL = "sticky-v1"
_LOOP_SECONDS = 0.25
_REFRESH_SECONDS = 1.0


class _Coordinator(BaseCoordinator):
    """The group client; every hook hands over to its :class:`WorkerGroup`."""

    def __init__(self, group: "WorkerGroup", client: Any, **configs: Any) -> None:
        super().__init__(client, **configs)
        self.owner = group

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def group_protocols(self) -> list[tuple[str, bytes]]:
        return [(_PROTOCOL, self.owner.metadata())]

    async def _on_join_prepare_async(self, generation: int, member_id: str, timeout_ms: Any = None) -> None:
        self.owner.rebalance_started(generation)

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]) -> dict[str, bytes]:
        return self.owner.perform_assignment(leader_id, members)

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        self.owner.join_completed(generation, member_id, member_assignment_bytes)


class WorkerGroup:
    """This worker's membership; see the module docstring.

    Args:
        worker: the worker configuration (``group.id``, the timeouts, the Kafka client settings).
        worker_id: ``host:port`` of this worker's REST API.
        url: the REST API's base URL, for forwarding.
        config_store, status_store: the started stores.
        on_change: called (from the group thread) when the assignment or the membership changed.
        clock: monotonic seconds, compared with the heartbeats' times (tests give a fake one).
        coordinator: the group client; made (with its Kafka connection) when not given (tests give a fake one).
    """

    def __init__(self, worker: "WorkerConfig", worker_id: str, url: str, config_store: "ConfigStore",
                 status_store: "StatusStore", on_change: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic, coordinator: Any = None) -> None:
        self.worker = worker
        self.worker_id = worker_id
        self.url = url
        self.config_store = config_store
        self.status_store = status_store
        self.on_change = on_change
        self._clock = clock
        self._client: Any = None
        self._coordinator = coordinator if coordinator is not None else self._connect()
        self._lock = threading.RLock()
        self._assigned: frozenset[str] = frozenset()
        self._revoked: frozenset[str] = frozenset()
        self._owned: Callable[[], set[str]] = lambda: set()
        self.generation = -1
        self.leader_url: str | None = None
        self.is_leader = False
        self.rebalancing = True
        self.rebalances = 0
        self.completed_rebalances = 0
        self._rebalance_started_at: float | None = None
        self._rebalance_ended_at: float | None = None
        self._rebalance_seconds_total = 0.0
        self.last_rebalance: dict[str, Any] = {}  # what GET / shows: when the last one started and ended, what moved
        self._lost_since: dict[str, float] = {}
        self._assigned_names: frozenset[str] = frozenset()
        self._rejoin_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _connect(self) -> "_Coordinator":
        """Make the group client: a Kafka connection, and kafka-python's group coordinator over it."""
        from kafka.net.compat import KafkaNetClient

        from connect_spark.kafka.clients import kafka_client_kwargs

        worker = self.worker
        settings = {**kafka_client_kwargs(worker.kafka_client_config()),
                    "bootstrap_servers": worker.bootstrap_servers, "client_id": f"connect-spark-{self.worker_id}"}
        self._client = KafkaNetClient(**settings)
        manager = self._client._manager  # kafka-python's own consumer starts its client the same way
        manager._net.start()
        manager.bootstrap(worker.rebalance_timeout_ms)
        return _Coordinator(
            self, self._client, group_id=worker.group_id, session_timeout_ms=worker.session_timeout_ms,
            heartbeat_interval_ms=worker.heartbeat_interval_ms, max_poll_interval_ms=worker.rebalance_timeout_ms,
            retry_backoff_ms=100, api_version=manager.broker_version)

    # -- the herder's side ---------------------------------------------------------------------------

    def bind_owned(self, owned: Callable[[], set[str]]) -> None:
        """The herder gives the group how to read the connectors it runs (reported when joining)."""
        self._owned = owned

    def assigned(self) -> frozenset[str]:
        """The connectors this worker must run now (nothing while fenced)."""
        if self.fenced():
            return frozenset()
        with self._lock:
            return self._assigned

    def fenced(self) -> bool:
        """True when this worker may no longer act for the group: never joined, forgotten, or its session expired."""
        coordinator = self._coordinator
        state = coordinator.state
        if state is KafkaMemberState.UNJOINED or self.generation < 0:
            return True
        if state is KafkaMemberState.STABLE:
            heartbeat = coordinator.heartbeat
            last = max(heartbeat.last_receive, heartbeat.last_reset)
            if self._clock() - last > self.worker.session_timeout_ms / 1000:
                with self._lock:  # latched: a late heartbeat answer does not unfence; only the next join does
                    self.generation = -1
                return True
        return False

    def revocations_done(self) -> None:
        """The herder stopped the revoked connectors: rejoin so the leader can hand them on."""
        with self._lock:
            if not self._revoked:
                return
            self._revoked = frozenset()
        self._coordinator.request_rejoin()

    # -- the group hooks (kafka-python's network loop) -----------------------------------------------

    def metadata(self) -> bytes:
        return json.dumps({"worker_id": self.worker_id, "url": self.url,
                           "config_records": self.config_store.records_read,
                           "owned": sorted(self._owned())}).encode()

    def rebalance_started(self, generation: int) -> None:
        if generation < 0:  # the coordinator forgot this member: it is fenced until it joins again
            with self._lock:
                self.generation = -1
        self.rebalancing = True
        self.rebalances += 1
        self._rebalance_started_at = time.monotonic()
        self.last_rebalance = {"started": _now(), "reason": "membership lost" if generation < 0 else "group rebalance"}
        log.info("Worker %s: rebalance started (group %s, generation %d)", self.worker_id,
                 self.worker.group_id, generation)

    def perform_assignment(self, leader_id: str, members: list[Any]) -> dict[str, bytes]:
        """The leader's step: read the config topic as far as every member has, then assign."""
        reported = [json.loads(bytes(m.metadata).decode()) for m in members]
        states = [MemberState(m.member_id, r["worker_id"], r["url"], frozenset(r.get("owned", [])))
                  for m, r in zip(members, reported)]
        needed = max(int(r.get("config_records", 0)) for r in reported)
        self.config_store.refresh()
        self.status_store.refresh()
        if self.config_store.records_read < needed:
            log.warning("Leader %s read %d config records, a member reported %d", self.worker_id,
                        self.config_store.records_read, needed)
        weights = {name: _tasks_max(self.config_store.get(name)) for name in self.config_store.connectors()}
        result = assign(states, weights, self._holders(states, set(weights)))
        moved = result.moved(states)
        leader_url = next(s.url for s in states if s.member_id == leader_id)
        log.info("Leader %s assigned %d connector(s) over %d worker(s): %s; moved %s; revoked %s; held %s",
                 self.worker_id, len(weights), len(states),
                 {s.worker_id: result.connectors[s.member_id] for s in states}, moved or "nothing",
                 {s.worker_id: result.revoked[s.member_id] for s in states if result.revoked[s.member_id]} or "nothing",
                 result.held or "nothing")
        self._assigned_names = frozenset(weights)
        return {s.member_id: json.dumps({"leader_url": leader_url, "connectors": result.connectors[s.member_id],
                                         "revoked": result.revoked[s.member_id],
                                         "held": bool(result.held)}).encode() for s in states}

    def _holders(self, states: list[MemberState], names: set[str]) -> dict[str, str]:
        """Connector -> departed worker, for connectors still waiting for their worker to come back."""
        live = {s.worker_id for s in states}
        owned = {c for s in states for c in s.owned}
        now = time.monotonic()
        delay = self.worker.scheduled_rebalance_max_delay_ms / 1000
        holders: dict[str, str] = {}
        self._rejoin_at = None
        for name in sorted(names - owned):
            status = self.status_store.connector(name)
            if status is None or status.state not in (State.RUNNING, State.PAUSED) or not status.worker_id:
                continue  # never ran, stopped, or its worker left gracefully (UNASSIGNED): move at once
            if status.worker_id in live:
                holders[name] = status.worker_id
                continue
            since = self._lost_since.setdefault(status.worker_id, now)
            if now - since < delay:
                holders[name] = status.worker_id
                due = since + delay
                self._rejoin_at = due if self._rejoin_at is None else min(self._rejoin_at, due)
        for worker_id in list(self._lost_since):
            if worker_id in live:
                del self._lost_since[worker_id]
        return holders

    def join_completed(self, generation: int, member_id: str, assignment: bytes) -> None:
        data = json.loads(bytes(assignment).decode())
        with self._lock:
            before = self._assigned
            self._assigned = frozenset(data["connectors"])
            self._revoked = frozenset(data.get("revoked", []))
            self.generation = generation
            self.leader_url = data.get("leader_url")
            self.is_leader = self.leader_url == self.url
        self.last_rebalance = {**self.last_rebalance, "ended": _now(), "generation": generation,
                               "started_connectors": sorted(self._assigned - before),
                               "stopped_connectors": sorted(before - self._assigned)}
        self.rebalancing = False
        self.completed_rebalances += 1
        self._rebalance_ended_at = time.monotonic()
        if self._rebalance_started_at is not None:
            self._rebalance_seconds_total += self._rebalance_ended_at - self._rebalance_started_at
        log.info("Worker %s: rebalance done (generation %d, leader %s): runs %s; starts %s; stops %s",
                 self.worker_id, generation, self.leader_url, sorted(self._assigned),
                 sorted(self._assigned - before) or "nothing", sorted(before - self._assigned) or "nothing")
        self.on_change()

    def rebalance_metrics(self) -> dict[str, float]:
        """Kafka Connect's ``connect-worker-rebalance-metrics`` of this worker (for ``GET /metrics``)."""
        metrics = {"completed-rebalances-total": float(self.completed_rebalances),
                   "rebalancing": 1.0 if self.rebalancing else 0.0, "epoch": float(self.generation)}
        if self._rebalance_ended_at is not None:
            metrics["time-since-last-rebalance-ms"] = (time.monotonic() - self._rebalance_ended_at) * 1000
            metrics["rebalance-avg-time-ms"] = self._rebalance_seconds_total * 1000 / max(1, self.completed_rebalances)
        return metrics

    # -- the group thread ----------------------------------------------------------------------------

    def start(self) -> None:
        """Join the group (waiting up to the rebalance timeout for the first assignment), then keep the membership."""
        self._coordinator.ensure_active_group(timeout_ms=self.worker.rebalance_timeout_ms)
        self._thread = threading.Thread(target=self._run, name="connect-spark-group", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last_refresh = 0.0
        was_fenced = self.fenced()
        while not self._stop.is_set():
            try:
                now = time.monotonic()
                if now - last_refresh >= _REFRESH_SECONDS:
                    self.config_store.refresh()
                    self.status_store.refresh()
                    last_refresh = now
                    if self.is_leader and frozenset(self.config_store.connectors()) != self._assigned_names:
                        log.info("Leader %s: the connectors changed; rebalancing", self.worker_id)
                        self._coordinator.request_rejoin()
                if self.is_leader and self._rejoin_at is not None and now >= self._rejoin_at:
                    log.info("Leader %s: a departed worker's delay is over; rebalancing", self.worker_id)
                    self._rejoin_at = None
                    self._coordinator.request_rejoin()
                fenced = self.fenced()
                if fenced and not was_fenced:
                    log.warning("Worker %s lost its group membership: stopping its connectors", self.worker_id)
                    with self._lock:
                        self.generation = -1  # fenced until the next join completes, rebalancing or not
                    self._coordinator.request_rejoin()
                    self.on_change()
                was_fenced = fenced
                if fenced and self._owned():
                    self._stop.wait(_LOOP_SECONDS)  # rejoin only once the herder stopped everything
                    continue
                self._coordinator.ensure_active_group(timeout_ms=1000)
                self._coordinator.poll_heartbeat()
            except Exception as e:
                log.warning("Worker %s: group membership: %r", self.worker_id, e)
                self._stop.wait(1.0)
            self._stop.wait(_LOOP_SECONDS)

    def close(self) -> None:
        """Leave the group (after the herder's final commits), so the leader moves our connectors at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        try:
            self._coordinator.close(timeout_ms=5000)
        except Exception as e:
            log.warning("Worker %s: leaving the group raised %r", self.worker_id, e)
        try:
            if self._client is not None:
                self._client.close()
        except Exception as e:
            log.debug("Closing the group client raised %r", e)
        log.info("Worker %s left group %s", self.worker_id, self.worker.group_id)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _tasks_max(state: Any) -> int:
    try:
        return max(1, int((state.properties if state is not None else {}).get("tasks.max", 1)))
    except ValueError:
        return 1
