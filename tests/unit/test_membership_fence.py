"""WorkerGroup.fenced(): when a distributed worker may no longer act for its group, on a fake clock and a fake
group client (the real group is exercised by tests/integration/test_cluster.py)."""

import json
from types import SimpleNamespace

from kafka.coordinator.base import MemberState

from connect_spark.config.worker import WorkerConfig
from connect_spark.herder.membership import WorkerGroup

WORKER = {"key.converter": "StringConverter", "value.converter": "StringConverter",
          "bootstrap.servers": "127.0.0.1:1", "group.id": "g", "session.timeout.ms": "6000"}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _group(clock):
    coordinator = SimpleNamespace(state=MemberState.UNJOINED,
                                  heartbeat=SimpleNamespace(last_receive=0.0, last_reset=0.0))
    group = WorkerGroup(WorkerConfig(WORKER), "127.0.0.1:8083", "http://127.0.0.1:8083", None, None,
                        lambda: None, clock=clock, coordinator=coordinator)
    return group, coordinator


def _joined(group, coordinator, clock, generation):
    group.join_completed(generation, "m", json.dumps({"connectors": ["c"], "leader_url": "x"}).encode())
    coordinator.state = MemberState.STABLE
    coordinator.heartbeat.last_reset = clock.now


def test_a_worker_is_fenced_until_it_joined():
    clock = Clock()
    group, coordinator = _group(clock)
    assert group.fenced() and group.assigned() == frozenset()
    _joined(group, coordinator, clock, 4)
    assert not group.fenced() and group.assigned() == {"c"}


def test_a_session_without_heartbeat_answers_for_longer_than_the_timeout_fences_until_the_next_join():
    clock = Clock()
    group, coordinator = _group(clock)
    _joined(group, coordinator, clock, 4)
    clock.now += 5.9
    assert not group.fenced()
    coordinator.heartbeat.last_receive = clock.now  # an answer: the session lives on
    clock.now += 5.9
    assert not group.fenced()
    clock.now += 0.2  # 6.1 s without an answer (the worker was suspended): fenced
    assert group.fenced() and group.generation == -1 and group.assigned() == frozenset()
    coordinator.heartbeat.last_receive = clock.now  # a late answer does not unfence
    assert group.fenced()
    _joined(group, coordinator, clock, 7)  # only the next join does, with a newer generation
    assert not group.fenced() and group.generation == 7


def test_a_member_the_coordinator_forgot_is_fenced():
    clock = Clock()
    group, coordinator = _group(clock)
    _joined(group, coordinator, clock, 4)
    coordinator.state = MemberState.UNJOINED
    assert group.fenced()
    group.rebalance_started(-1)
    coordinator.state = MemberState.REBALANCING
    assert group.fenced()
