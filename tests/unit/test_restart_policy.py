"""The restart policy's arithmetic and rules: back-off, jitter, limits, reset, never-restarted errors."""

from __future__ import annotations

import random

import pytest

from connect_spark.api.errors import ConfigException, NonRestartableException
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.worker.restarts import RestartPolicy, RestartTracker, is_restartable
from connect_spark.runtime.tasks.worker_task import TaskFailedError

WORKER = {"bootstrap.servers": "127.0.0.1:1", "key.converter": "StringConverter", "value.converter": "StringConverter"}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_backoff_doubles_up_to_the_maximum_without_jitter():
    policy = RestartPolicy(max_attempts=-1, backoff_min_ms=100, backoff_max_ms=1000, jitter=0.0)
    assert [policy.delay_s(n, random.Random(1)) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_jitter_stays_within_its_share():
    policy = RestartPolicy(max_attempts=-1, backoff_min_ms=1000, backoff_max_ms=1000, jitter=0.25)
    delays = {policy.delay_s(1, random.Random(seed)) for seed in range(50)}
    assert all(0.75 <= d <= 1.25 for d in delays) and len(delays) > 1


def test_attempts_are_limited_planned_and_reset_after_a_healthy_period():
    clock = Clock()
    tracker = RestartTracker(RestartPolicy(max_attempts=2, backoff_min_ms=1000, jitter=0.0, reset_after_ms=5000),
                             clock=clock, wall=lambda: 0.0)
    plan = tracker.on_failure(RuntimeError("down"))
    assert plan is not None and plan.attempt == 1 and plan.due_monotonic == 101.0
    assert "attempt 1 of 2 at 1970-01-01T00:00:01.000+00:00" in plan.describe()
    assert not tracker.due()
    clock.now = 101.0
    assert tracker.due()
    tracker.started()
    assert tracker.on_failure(RuntimeError("down")).attempt == 2
    assert tracker.on_failure(RuntimeError("down")) is None  # the last attempt was used: it stays FAILED
    tracker.started()
    tracker.on_running()
    clock.now += 5.0
    tracker.on_running()
    assert tracker.attempts == 0
    assert tracker.on_failure(RuntimeError("down again")).attempt == 1


def test_no_policy_never_restarts():
    assert RestartTracker(RestartPolicy()).on_failure(RuntimeError("down")) is None


def test_config_and_non_restartable_errors_are_never_restarted_even_wrapped_or_remote():
    assert not is_restartable(ConfigException("bad", "k", "v"))
    wrapped = TaskFailedError("task failed", 0, NonRestartableException("table dropped"))
    assert not is_restartable(wrapped)
    remote = TaskFailedError("task failed on an executor", 0)
    remote.trace = "Traceback ...\nconnect_spark.api.errors.NonRestartableException: gone"
    assert not is_restartable(remote)
    assert is_restartable(TaskFailedError("task failed", 0, RuntimeError("timeout")))


def test_connector_keys_override_the_worker_defaults():
    from connect_spark.config.validation import validate_configs

    worker_props = {**WORKER, "errors.restart.max.attempts": "3", "errors.restart.backoff.min.ms": "50"}
    worker, (connector,) = validate_configs(worker_props, [{
        "name": "c", "connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/x",
        "errors.restart.max.attempts": "7"}])
    policy = RestartPolicy.of(worker, connector)
    assert (policy.max_attempts, policy.backoff_min_ms, policy.backoff_max_ms) == (7, 50, 60000)


def test_bad_values_name_the_key():
    with pytest.raises(ConfigValidationError) as error:
        WorkerConfig({**WORKER, "errors.restart.backoff.jitter": "2", "errors.restart.max.attempts": "-5"})
    text = str(error.value)
    assert "errors.restart.backoff.jitter" in text and "errors.restart.max.attempts" in text
