"""connect-status and connect-configs records: Kafka Connect's exact keys and JSON values, both ways."""

import json

import pytest

from connect_spark.status import records as rec
from connect_spark.status.states import IllegalTransition, State, TargetState, check_transition


def test_status_value_has_connects_four_fields():
    value = rec.encode_status(State.RUNNING, "127.0.0.1:8083", 7)
    assert json.loads(value) == {"state": "RUNNING", "trace": None, "worker_id": "127.0.0.1:8083", "generation": 7}


def test_task_status_key_with_dashes_in_the_connector_name():
    key = rec.task_status_key("my-sink-2", 11)
    assert key == "status-task-my-sink-2-11"
    decoded = rec.decode_status(key, rec.encode_status(State.FAILED, "w:1", 3, "Traceback ..."))
    assert (decoded.connector, decoded.task, decoded.state, decoded.trace, decoded.generation) == (
        "my-sink-2", 11, State.FAILED, "Traceback ...", 3)


def test_connector_status_round_trip_and_tombstone():
    key = rec.connector_status_key("orders")
    assert key == "status-connector-orders"
    assert rec.decode_status(key, rec.encode_status(State.STOPPED, "w:1", 1)).state is State.STOPPED
    assert rec.decode_status(key, None).state is None


def test_destroyed_is_never_encoded():
    with pytest.raises(ValueError):
        rec.encode_status(State.DESTROYED, "w", 1)


@pytest.mark.parametrize("key,value", [
    ("status-topic-orders:connector-x", b'{"topic":{}}'),
    ("status-task-x-notanumber", b'{"state":"RUNNING"}'),
    ("status-connector-x", b'{"state":"SLEEPING"}'),
    ("status-connector-x", b"not json"),
])
def test_foreign_or_broken_status_records_are_refused(key, value):
    with pytest.raises(rec.UnexpectedRecord):
        rec.decode_status(key, value)


def test_config_records_shapes():
    assert rec.connector_config_key("a") == "connector-a"
    assert json.loads(rec.encode_properties({"tasks.max": 2, "topics": "t"})) == {
        "properties": {"tasks.max": "2", "topics": "t"}}
    assert rec.task_config_key("a-b", 0) == "task-a-b-0"
    assert json.loads(rec.encode_commit(3)) == {"tasks": 3}
    assert json.loads(rec.encode_restart(True, False)) == {"include-tasks": True, "only-failed": False}


def test_stopped_target_state_is_paused_for_old_workers():
    assert json.loads(rec.encode_target_state(TargetState.STOPPED)) == {"state": "PAUSED", "state.v2": "STOPPED"}
    assert json.loads(rec.encode_target_state(TargetState.STARTED)) == {"state": "STARTED", "state.v2": "STARTED"}
    decoded = rec.decode_config("target-state-a", rec.encode_target_state(TargetState.STOPPED))
    assert decoded.target_state is TargetState.STOPPED
    # A record written by a worker before KIP-875 has no state.v2.
    assert rec.decode_config("target-state-a", b'{"state":"PAUSED"}').target_state is TargetState.PAUSED


def test_config_decoding():
    task = rec.decode_config("task-my-sink-3", rec.encode_properties({"k": "v"}))
    assert (task.kind, task.connector, task.task, task.properties) == ("task", "my-sink", 3, {"k": "v"})
    assert rec.decode_config("connector-x", None).properties is None
    assert rec.decode_config("commit-x", b'{"tasks":2}').tasks == 2
    with pytest.raises(rec.UnexpectedRecord):
        rec.decode_config("session-key", b'{"key":"abc","algorithm":"HmacSHA256","creation-timestamp":1}')
    with pytest.raises(rec.UnexpectedRecord):
        rec.decode_config("tasks-fencing-x", b'{"task-count":1}')


def test_transitions():
    check_transition(None, State.RUNNING, task=True)
    check_transition(State.RUNNING, State.PAUSED, task=False)
    check_transition(State.FAILED, State.RESTARTING, task=True)
    check_transition(State.STOPPED, State.RUNNING, task=False)
    with pytest.raises(IllegalTransition):
        check_transition(State.FAILED, State.RUNNING, task=True)  # only a restart revives a failed task
    with pytest.raises(IllegalTransition):
        check_transition(State.RUNNING, State.STOPPED, task=True)  # tasks are never STOPPED
    with pytest.raises(IllegalTransition):
        check_transition(State.DESTROYED, State.RUNNING, task=False)
