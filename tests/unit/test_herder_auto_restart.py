"""The herder's restart policy: a failing connector is restarted by its worker, with the plan in its status."""

import threading

from connect_spark.config.worker import WorkerConfig
from connect_spark.herder import Herder
from connect_spark.status.log import MemoryLog
from connect_spark.status.states import State
from connect_spark.status.stores import ConfigStore, StatusStore
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.testing.handles import ScriptedHandle
from connect_spark.testing.waiting import wait_for

WORKER = {"key.converter": "StringConverter", "value.converter": "StringConverter", "bootstrap.servers": "127.0.0.1:1",
          "errors.restart.max.attempts": "2", "errors.restart.backoff.min.ms": "20", "errors.restart.backoff.jitter": "0"}


def _run_herder(tmp_path, traces):
    status, config = StatusStore(MemoryLog()), ConfigStore(MemoryLog())
    status.start()
    config.start()
    offsets = FileOffsetStore(str(tmp_path / "offsets.json"))
    offsets.start()
    handles = []

    def factory(connector_config):
        handles.append(ScriptedHandle(connector_config))
        return handles[-1]

    herder = Herder(WorkerConfig(WORKER), config, status, offsets, factory, "127.0.0.1:8083")
    original_put = status.put

    def recording_put(record):  # every status the herder writes, in order
        if record.task == 0 and record.state is State.FAILED:
            traces.append(record.trace)
        original_put(record)

    status.put = recording_put
    thread = threading.Thread(target=herder.run, daemon=True)
    thread.start()
    herder.started.wait(5)
    return herder, handles, thread, offsets


def test_failed_task_is_restarted_with_back_off_until_the_attempts_run_out(tmp_path):
    traces = []
    herder, handles, thread, offsets = _run_herder(tmp_path, traces)
    try:
        herder.create_connector("flaky", {"connector.class": "RecordingSink", "topics": "orders", "tasks.max": "1",
                                          "recording.dir": str(tmp_path / "rec"), "scripted.fail.task": "0"})
        wait_for(lambda: len(traces) == 3, timeout=20)
        wait_for(lambda: herder.connector_status("flaky").tasks[0].state is State.FAILED, timeout=20)
        assert len(handles) == 3  # the first start and two automatic restarts
        assert "Automatic restart: attempt 1 of 2 at " in traces[0]
        assert "Automatic restart: attempt 2 of 2 at " in traces[1]
        assert "Automatic restart" not in traces[2]  # the last attempt failed: it stays FAILED
        assert herder.auto_restarts.attempts("flaky") == 2
    finally:
        herder.request_stop()
        thread.join(10)
        offsets.stop()


def test_connector_without_the_policy_is_not_restarted(tmp_path):
    traces = []
    herder, handles, thread, offsets = _run_herder(tmp_path, traces)
    try:
        herder.create_connector("once", {"connector.class": "RecordingSink", "topics": "orders", "tasks.max": "1",
                                         "recording.dir": str(tmp_path / "rec"), "scripted.fail.task": "0",
                                         "errors.restart.max.attempts": "0"})
        wait_for(lambda: len(traces) == 1, timeout=20)
        herder.restart_connector("once")  # a person's restart still works; the trackers count none
        wait_for(lambda: len(traces) == 2, timeout=20)
        assert len(handles) == 2
        assert all("Automatic restart" not in t for t in traces)
        assert herder.auto_restarts.attempts("once") == 0
    finally:
        herder.request_stop()
        thread.join(10)
        offsets.stop()
