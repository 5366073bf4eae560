"""The worker keys of a worker group: checked together, defaults as Kafka Connect's."""

import pytest

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.worker import WorkerConfig

BASE = {"bootstrap.servers": "localhost:9092", "key.converter": "StringConverter", "value.converter": "StringConverter"}


def test_defaults_are_kafka_connects():
    worker = WorkerConfig({**BASE, "group.id": "g"})
    assert (worker.session_timeout_ms, worker.heartbeat_interval_ms, worker.rebalance_timeout_ms,
            worker.scheduled_rebalance_max_delay_ms) == (10000, 3000, 60000, 300000)


def test_a_heartbeat_not_below_the_session_timeout_is_refused_naming_both_keys():
    with pytest.raises(ConfigValidationError) as e:
        WorkerConfig({**BASE, "group.id": "g",
                      "session.timeout.ms": "3000", "heartbeat.interval.ms": "3000"})
    assert "heartbeat.interval.ms" in str(e.value) and "session.timeout.ms (3000)" in str(e.value)
