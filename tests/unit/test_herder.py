"""The herder's reconciliation and state machine, with in-memory status/config logs and a file offset store.

Connectors are run by ScriptedHandle (no Spark); configs are validated for real against the worker.
"""

import threading
import time

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.config.worker import WorkerConfig
from connect_spark.herder import AlreadyExistsError, BadRequestError, Herder, NotFoundError
from connect_spark.status.log import MemoryLog
from connect_spark.status.states import State, TargetState
from connect_spark.status.stores import ConfigStore, StatusStore
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.testing.handles import ScriptedHandle
from connect_spark.testing.waiting import wait_for as shared_wait_for

WORKER = {"key.converter": "StringConverter", "value.converter": "StringConverter", "bootstrap.servers": "127.0.0.1:1"}


def wait_for(condition, timeout=10.0):
    return shared_wait_for(condition, timeout, interval=0.02)


class Worker:
    """A herder on memory logs (kept across restarts, like the topics) run in a thread."""

    def __init__(self, tmp_path):
        self.status_log, self.config_log = MemoryLog(), MemoryLog()
        self.offsets_file = tmp_path / "offsets.json"
        self.handles = {}
        self.herder = None

    def start(self):
        status, config = StatusStore(self.status_log), ConfigStore(self.config_log)
        status.start()
        config.start()
        self.offsets = FileOffsetStore(str(self.offsets_file))
        self.offsets.start()

        def factory(connector_config):
            handle = ScriptedHandle(connector_config)
            self.handles[connector_config.name] = handle
            return handle

        self.herder = Herder(WorkerConfig(WORKER), config, status, self.offsets, factory, "127.0.0.1:8083")
        self.thread = threading.Thread(target=self.herder.run, daemon=True)
        self.thread.start()
        self.herder.started.wait(5)
        return self.herder

    def stop(self):
        self.herder.request_stop()
        self.thread.join(10)
        self.offsets.stop()

    def connector_state(self, name):
        return self.herder.connector_status(name).connector.state

    def task_states(self, name):
        return [t.state for t in self.herder.connector_status(name).tasks]


@pytest.fixture
def worker(tmp_path):
    w = Worker(tmp_path)
    w.start()
    yield w
    w.stop()


def sink(tmp_path, **extra):
    return {"connector.class": "RecordingSink", "topics": "orders", "tasks.max": "2",
            "recording.dir": str(tmp_path / "rec"), **extra}


def test_create_runs_connector_and_writes_task_configs(worker, tmp_path):
    herder = worker.herder
    herder.create_connector("s1", sink(tmp_path))
    wait_for(lambda: worker.connector_state("s1") is State.RUNNING and len(worker.task_states("s1")) == 2)
    assert worker.task_states("s1") == [State.RUNNING, State.RUNNING]
    info = herder.connector_info("s1")
    assert [c["task.id"] for c in info.task_configs] == ["0", "1"]
    assert herder.connector_status("s1").connector.worker_id == "127.0.0.1:8083"
    with pytest.raises(AlreadyExistsError):
        herder.create_connector("s1", sink(tmp_path))


def test_invalid_config_is_refused_with_every_problem(worker, tmp_path):
    with pytest.raises(BadRequestError) as e:
        worker.herder.create_connector("bad", {"connector.class": "NoSuchSink", "tasks.max": "0", "topics": "t"})
    message = str(e.value)
    assert "contains the following" in message and "tasks.max" in message and "NoSuchSink" in message
    assert worker.herder.connectors() == []
    with pytest.raises(BadRequestError):
        worker.herder.create_connector("x", {**sink(tmp_path), "name": "y"})


def test_pause_resume_stop_and_delete(worker, tmp_path):
    herder = worker.herder
    herder.create_connector("s2", sink(tmp_path))
    wait_for(lambda: worker.connector_state("s2") is State.RUNNING)
    herder.pause_connector("s2")
    wait_for(lambda: worker.connector_state("s2") is State.PAUSED)
    assert worker.task_states("s2") == [State.PAUSED, State.PAUSED]
    assert "pause" in worker.handles["s2"].calls
    herder.resume_connector("s2")
    wait_for(lambda: worker.connector_state("s2") is State.RUNNING)
    herder.stop_connector("s2")
    wait_for(lambda: worker.connector_state("s2") is State.STOPPED)
    assert worker.task_states("s2") == []  # a stopped connector has no tasks
    assert herder.connector_info("s2").task_configs == []
    assert worker.handles["s2"].calls[-1] == "stop"
    herder.resume_connector("s2")
    wait_for(lambda: worker.connector_state("s2") is State.RUNNING and len(worker.task_states("s2")) == 2)
    herder.delete_connector("s2")
    wait_for(lambda: herder.status_store.connector("s2") is None)
    assert herder.status_store.tasks("s2") == {}
    with pytest.raises(NotFoundError):
        herder.connector_status("s2")


def test_created_paused_does_not_start(worker, tmp_path):
    worker.herder.create_connector("s3", sink(tmp_path), TargetState.PAUSED)
    wait_for(lambda: worker.herder.status_store.connector("s3") is not None)
    assert worker.connector_state("s3") is State.PAUSED
    assert "start" not in worker.handles["s3"].calls


def test_failures_and_restart(worker, tmp_path):
    herder = worker.herder
    herder.create_connector("f1", sink(tmp_path, **{"scripted.fail.task": "1"}))
    wait_for(lambda: State.FAILED in worker.task_states("f1"))
    tasks = herder.connector_status("f1").tasks
    assert tasks[1].state is State.FAILED and "scripted failure of task 1" in tasks[1].trace
    assert worker.connector_state("f1") is State.RUNNING  # as in Connect, a task failure leaves the connector RUNNING
    # Nothing failed at the connector level and tasks are not included: nothing to restart.
    unchanged = herder.restart_connector("f1", include_tasks=False, only_failed=True)
    assert [t.state for t in unchanged.tasks] == [State.RUNNING, State.FAILED]
    old = worker.handles["f1"]
    shown = herder.restart_connector("f1", include_tasks=True, only_failed=True)
    assert [t.state for t in shown.tasks] == [State.RUNNING, State.RESTARTING]
    assert shown.connector.state is State.RUNNING  # onlyFailed: the connector is not restarted
    wait_for(lambda: worker.handles["f1"] is not old and worker.handles["f1"].calls[:1] == ["start"])
    assert old.calls[-1] == "stop"

    herder.create_connector("f2", sink(tmp_path, **{"scripted.fail.start": "true"}))
    wait_for(lambda: herder.status_store.connector("f2") is not None
             and herder.status_store.connector("f2").state is State.FAILED)
    assert "scripted start failure" in herder.connector_status("f2").connector.trace
    with pytest.raises(NotFoundError):
        herder.restart_task("f2", 7)


def test_offsets_need_stopped_connector(worker, tmp_path):
    herder = worker.herder
    herder.create_connector("o1", sink(tmp_path))
    wait_for(lambda: worker.connector_state("o1") is State.RUNNING)
    tp = TopicPartition("orders", 0)
    with pytest.raises(BadRequestError, match="STOPPED"):
        herder.alter_offsets("o1", {tp: 5})
    herder.stop_connector("o1")
    herder.alter_offsets("o1", {tp: 5})
    assert herder.connector_offsets("o1") == {tp: 5}
    herder.reset_offsets("o1")
    assert herder.connector_offsets("o1") == {}


def test_connectors_come_back_after_a_restart(tmp_path):
    first = Worker(tmp_path)
    first.start()
    first.herder.create_connector("keep", sink(tmp_path))
    first.herder.create_connector("held", sink(tmp_path))
    wait_for(lambda: first.connector_state("keep") is State.RUNNING)
    first.herder.pause_connector("held")
    wait_for(lambda: first.connector_state("held") is State.PAUSED)
    first.stop()
    # A clean worker stop leaves the instances UNASSIGNED.
    assert first.herder.status_store.connector("keep").state is State.UNASSIGNED

    first.start()  # same logs: a new process reading the same topics
    try:
        wait_for(lambda: first.connector_state("keep") is State.RUNNING)
        wait_for(lambda: first.connector_state("held") is State.PAUSED)
        assert sorted(first.herder.connectors()) == ["held", "keep"]
    finally:
        first.stop()


def test_distributed_refuses_a_bad_worker_config_before_starting(capsys):
    from connect_spark.herder.distributed import EXIT_BAD_CONFIG, run_distributed

    code = run_distributed({**WORKER, "listeners": "ftp://x:1", "rest.basic.auth.username": "u"})
    err = capsys.readouterr().err
    assert code == EXIT_BAD_CONFIG
    assert "listeners" in err and "rest.basic.auth.password" in err


def test_listener_parsing():
    from connect_spark.api.errors import ConfigException
    from connect_spark.rest.server import parse_listener

    assert parse_listener("http://127.0.0.1:8083") == ("http", "127.0.0.1", 8083)
    assert parse_listener("http://:8083") == ("http", "0.0.0.0", 8083)
    with pytest.raises(ConfigException, match="listeners"):
        parse_listener("https://127.0.0.1:8443")


def test_a_stall_shows_in_the_running_status_trace_while_it_lasts(worker, tmp_path):
    worker.herder.create_connector("slow", sink(tmp_path))
    wait_for(lambda: worker.connector_state("slow") is State.RUNNING)
    worker.handles["slow"].stalled = "a micro-batch has been running for 61 s"
    status = wait_for(lambda: (s := worker.herder.connector_status("slow").connector).trace and s)
    assert status.state is State.RUNNING and status.trace == "stalled: a micro-batch has been running for 61 s"
    worker.handles["slow"].stalled = None
    wait_for(lambda: worker.herder.connector_status("slow").connector.trace is None)
    assert worker.connector_state("slow") is State.RUNNING


class GroupView:
    """What the herder asks of its worker group, set by the test (the real group is tested with real workers
    in tests/integration/test_cluster.py)."""

    def __init__(self, assigned):
        self.assigned_names = set(assigned)
        self.generation, self.is_leader, self.rebalancing = 3, True, False
        self.is_fenced = False

    def bind_owned(self, owned):
        pass

    def assigned(self):
        return set(self.assigned_names)

    def fenced(self):
        return self.is_fenced

    def revocations_done(self):
        pass


def test_a_connector_taken_away_keeps_the_status_its_new_worker_wrote(tmp_path):
    """A worker that resumes after its session expired drops what it ran, possibly after rejoining (no longer
    fenced): the worker that took the connector over has written RUNNING, and that status stands."""
    from connect_spark.status.records import StatusRecord

    status, config = StatusStore(MemoryLog()), ConfigStore(MemoryLog())
    status.start()
    config.start()
    offsets = FileOffsetStore(str(tmp_path / "offsets.json"))
    offsets.start()
    group = GroupView({"moved", "kept"})
    herder = Herder(WorkerConfig(WORKER), config, status, offsets, ScriptedHandle, "127.0.0.1:8083", group=group)
    thread = threading.Thread(target=herder.run, daemon=True)
    thread.start()
    try:
        herder.create_connector("moved", sink(tmp_path))
        herder.create_connector("kept", sink(tmp_path))
        wait_for(lambda: all((s := status.connector(n)) and s.state is State.RUNNING for n in ("moved", "kept")))
        other = "127.0.0.1:9999"
        status.put_all([StatusRecord("moved", None, State.RUNNING, None, other, 4),
                        StatusRecord("moved", 0, State.RUNNING, None, other, 4)])
        group.assigned_names = {"kept"}
        herder.assignment_changed()
        wait_for(lambda: not herder.supervisor.owns("moved"))
        assert (status.connector("moved").state, status.connector("moved").worker_id) == (State.RUNNING, other)
        assert (status.task("moved", 0).state, status.task("moved", 0).worker_id) == (State.RUNNING, other)
        assert status.task("moved", 1).state is State.UNASSIGNED  # still this worker's own status: released
        group.assigned_names = set()
        herder.assignment_changed()
        wait_for(lambda: status.connector("kept").state is State.UNASSIGNED)
    finally:
        herder.request_stop()
        thread.join(10)
        offsets.stop()


class _GroupHerder:
    """A herder in a GroupView with its own stores, run in a thread (for the fencing tests below)."""

    def __init__(self, tmp_path, group, factory):
        self.status, self.config = StatusStore(MemoryLog()), ConfigStore(MemoryLog())
        self.status.start()
        self.config.start()
        self.offsets = FileOffsetStore(str(tmp_path / "offsets.json"))
        self.offsets.start()
        self.herder = Herder(WorkerConfig(WORKER), self.config, self.status, self.offsets, factory, "127.0.0.1:8083",
                             group=group)
        self.thread = threading.Thread(target=self.herder.run, daemon=True)
        self.thread.start()

    def close(self):
        self.herder.request_stop()
        self.thread.join(10)
        self.offsets.stop()


def test_a_connector_is_released_only_after_its_handle_stopped(tmp_path):
    """While a handle stops (its final commit), the connector stays owned: the group thread of a fenced worker
    waits for the owned set to empty before it rejoins, and must not rejoin while a commit may still happen."""
    owned_while_stopping = []
    box = {}

    class Watched(ScriptedHandle):
        def stop(self, failed=False):
            owned_while_stopping.append(box["herder"].supervisor.owns(self.name))
            super().stop(failed)

    group = GroupView({"c"})
    run = _GroupHerder(tmp_path, group, Watched)
    box["herder"] = run.herder
    try:
        run.herder.create_connector("c", sink(tmp_path))
        wait_for(lambda: (s := run.status.connector("c")) and s.state is State.RUNNING)
        group.assigned_names = set()
        run.herder.assignment_changed()
        wait_for(lambda: not run.herder.supervisor.owns("c"))
        assert owned_while_stopping == [True]
    finally:
        run.close()


def test_a_resumed_worker_that_rejoined_cannot_overwrite_the_new_owners_status(tmp_path):
    """A worker suspended past its session rejoins (not fenced any more, a newer generation) before it noticed
    the connector moved; its query then fails (its commit was fenced by the broker). The FAILED status it writes
    carries the generation it started the connector in, older than the new owner's: the status store drops it."""
    from connect_spark.status.records import StatusRecord

    failing, raised = {}, []

    class Zombie(ScriptedHandle):
        def tick(self):
            if failing.get(self.name):
                raised.append(time.monotonic())
                raise RuntimeError("offsets claimed by another worker")
            return super().tick()

    group = GroupView({"c"})
    run = _GroupHerder(tmp_path, group, Zombie)
    try:
        run.herder.create_connector("c", sink(tmp_path, **{"tasks.max": "1"}))
        wait_for(lambda: (s := run.status.connector("c")) and s.state is State.RUNNING)
        assert run.status.connector("c").generation == 3
        other = "127.0.0.1:9999"
        run.status.put_all([StatusRecord("c", None, State.RUNNING, None, other, 5),
                            StatusRecord("c", 0, State.RUNNING, None, other, 5)])
        group.generation = 6  # rejoined
        failing["c"] = True
        wait_for(lambda: raised and (run.herder.supervisor.last_loop or 0) > raised[0])  # FAILED written or not
        current = run.status.connector("c")
        assert (current.state, current.worker_id, current.generation) == (State.RUNNING, other, 5)
    finally:
        run.close()


def test_the_status_store_drops_a_write_of_an_older_generation_from_another_worker():
    from connect_spark.status.records import StatusRecord

    status = StatusStore(MemoryLog())
    status.start()
    me, other = "127.0.0.1:8083", "127.0.0.1:9999"
    assert status.put_safe(StatusRecord("c", None, State.RUNNING, None, me, 3))
    assert status.put_safe(StatusRecord("c", None, State.RUNNING, None, other, 5))  # a newer generation: written
    assert not status.put_safe(StatusRecord("c", None, State.FAILED, "x", me, 3))  # the older one's: dropped
    assert not status.put_safe(StatusRecord("c", None, State.UNASSIGNED, None, me, 4))
    assert status.connector("c").worker_id == other
    assert status.put_safe(StatusRecord("c", None, State.UNASSIGNED, None, other, 2))  # its own status: written
    assert status.put_safe(StatusRecord("c", None, State.RUNNING, None, me, 7))  # a newer generation again
    assert status.connector("c").worker_id == me
    assert status.put_safe(StatusRecord("c", 0, State.RUNNING, None, me, 1))  # nothing there yet


def test_a_fenced_worker_deletes_no_status(tmp_path):
    """A connector deleted while this worker is fenced: its statuses are left to the worker that owns it now."""
    group = GroupView({"c"})
    run = _GroupHerder(tmp_path, group, ScriptedHandle)
    try:
        run.herder.create_connector("c", sink(tmp_path))
        wait_for(lambda: (s := run.status.connector("c")) and s.state is State.RUNNING)
        group.is_fenced = True
        run.config.remove_connector("c")
        run.herder.supervisor.mark("c")
        wait_for(lambda: not run.herder.supervisor.owns("c"))
        dropped = time.monotonic()
        wait_for(lambda: (run.herder.supervisor.last_loop or 0) > dropped)  # the reconciliation is over
        assert run.status.connector("c").state is State.RUNNING and len(run.status.tasks("c")) == 2
    finally:
        run.close()
