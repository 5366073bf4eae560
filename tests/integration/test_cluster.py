"""Three `connect-spark distributed` processes in one group.id on one broker: each connector runs on exactly
one worker, moves after kill -9, comes back to a returning worker, survives a rolling restart; writes are
refused (409) while the group rebalances; a suspended worker commits nothing stale, even when suspended in the
middle of an offset commit: the broker refuses the commit once it wakes up, and its status writes are dropped.

One test walks the scenarios in order so the three Spark drivers start once. "Never on two workers at once"
and "nothing stale committed" are checked on what the topics recorded (the status history, the offset
history), not on timing.
"""

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

from connect_spark.config.properties import format_properties
from connect_spark.storage.offsets import UnexpectedOffsetRecord, decode_record
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, produce, read_topic
from connect_spark.testing.recording import read_recorded_calls, read_recorded_records
from tests.integration.test_distributed import call, free_port, stop_worker, wait_for

CONNECTORS = [f"c{i}" for i in range(6)]
ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    """The three workers of the test: their ports, property files, processes and logs."""

    def __init__(self, bootstrap_servers, work_dir, suffix):
        self.ports = [free_port() for _ in range(3)]
        self.files, self.logs, self.procs = [], [], [None, None, None]
        self.status_topic = f"cluster-status-{suffix}"
        self.offset_topic = f"cluster-offsets-{suffix}"
        for i, port in enumerate(self.ports):
            props = worker_properties(bootstrap_servers, work_dir / f"w{i}", **{
                "group.id": f"cluster-{suffix}", "listeners": f"http://127.0.0.1:{port}",
                "config.storage.topic": f"cluster-configs-{suffix}", "config.storage.replication.factor": "1",
                "status.storage.topic": self.status_topic, "status.storage.replication.factor": "1",
                "offset.storage.topic": self.offset_topic, "offset.storage.partitions": "1",
                "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
                "rebalance.timeout.ms": "20000", "scheduled.rebalance.max.delay.ms": "4000",
                "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
                "spark.driver.memory": "512m",
            })
            path = work_dir / f"worker-{i}.properties"
            path.write_text(format_properties(props))
            self.files.append(path)
            self.logs.append(work_dir / f"worker-{i}.log")
        self.markers = [work_dir / f"pause-in-commit-{i}" for i in range(3)]

    def url(self, i):
        return f"http://127.0.0.1:{self.ports[i]}"

    def worker_id(self, i):
        return f"127.0.0.1:{self.ports[i]}"

    def start(self, i):
        """Start worker ``i`` through tests/integration/pause_in_commit.py: it suspends itself in its next
        offset commit once the test creates ``markers[i]``."""
        log = open(self.logs[i], "ab")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PAUSE_IN_COMMIT_MARKER": str(self.markers[i])}
        self.procs[i] = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.pause_in_commit", "distributed", str(self.files[i])],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=str(ROOT))

    def suspended(self, i):
        with open(f"/proc/{self.procs[i].pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"

    def up(self, i):
        wait_for(lambda: call(self.url(i) + "/")[0] == 200, 180, f"worker {i}'s REST API", self.procs[i])

    def placement(self, via):
        """connector -> worker id of its RUNNING status, as any worker's REST API answers."""
        placed = {}
        for name in CONNECTORS:
            code, body = call(self.url(via) + f"/connectors/{name}/status")
            if code == 200 and body["connector"]["state"] == "RUNNING":
                placed[name] = body["connector"]["worker_id"]
        return placed

    def leader(self, via):
        return call(self.url(via) + "/")[1]["group"]["leader_url"]


def delivered(work_dir, name):
    return {r["offset"] for r in read_recorded_records(work_dir / "rec" / name)}


def task_starts(work_dir, name):
    return [c for c in read_recorded_calls(work_dir / "rec" / name) if c["call"] == "start"]


def placed_index(cluster, worker_id):
    return next(i for i in range(3) if cluster.worker_id(i) == worker_id)


def produce_all(bootstrap_servers, topics, start, count):
    for topic in topics:
        produce(bootstrap_servers, topic, [(0, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(start, start + count)])


def running_history(bootstrap_servers, topic):
    """connector -> [(state, worker_id)] in the order the status topic holds them."""
    history = defaultdict(list)
    for record in read_topic(bootstrap_servers, topic):
        key = record.key.decode()
        if key.startswith("status-connector-") and record.value is not None:
            value = json.loads(record.value)
            history[key[len("status-connector-"):]].append((value["state"], value["worker_id"]))
    return history


def assert_no_stale_status(bootstrap_servers, topic):
    """No connector or task status in the topic replaced another worker's status of a newer generation: what
    a worker writes after another took its connector over (it was suspended past its session) is dropped."""
    last = {}
    for record in read_topic(bootstrap_servers, topic):
        key = record.key.decode()
        if not key.startswith("status-"):
            continue
        if record.value is None:
            last.pop(key, None)
            continue
        value = json.loads(record.value)
        before = last.get(key)
        assert before is None or before[0] == value["worker_id"] or before[1] <= value["generation"], (
            key, before, value)
        last[key] = (value["worker_id"], value["generation"])


def committed_offsets(bootstrap_servers, topic, name):
    """The offsets of ``name`` that connect-offsets holds, as its readers (read_committed) see them."""
    offsets = {}
    for record in read_topic(bootstrap_servers, topic, committed_only=True):
        try:
            decoded = decode_record(record.key, record.value)
        except UnexpectedOffsetRecord:
            continue
        if decoded.connector == name:
            offsets[decoded.partition] = decoded.offset
    return offsets


def assert_never_on_two_workers(history, killed):
    """A connector RUNNING on X only becomes RUNNING on Y after X wrote it UNASSIGNED or X was killed."""
    for name, events in history.items():
        runner = None
        for state, worker_id in events:
            if state == "RUNNING":
                assert runner in (None, worker_id) or runner in killed, (name, events)
                runner = worker_id
            elif state in ("UNASSIGNED", "STOPPED") and worker_id == runner:
                runner = None


def assert_offsets_never_go_back(bootstrap_servers, topic):
    last = {}
    for record in read_topic(bootstrap_servers, topic, committed_only=True):
        try:
            decoded = decode_record(record.key, record.value)
        except UnexpectedOffsetRecord:
            continue
        key = (decoded.connector, decoded.partition)
        if decoded.offset is not None:
            assert decoded.offset >= last.get(key, 0), (key, decoded.offset, last.get(key))
            last[key] = decoded.offset


def test_three_workers_share_fail_over_and_fence(bootstrap_servers, topic_name, work_dir):
    suffix = topic_name[-6:]
    topics = [f"{topic_name}-{name}" for name in CONNECTORS]
    for topic in topics:
        create_topic(bootstrap_servers, topic, partitions=1)
    produce_all(bootstrap_servers, topics, 0, 5)
    cluster = Cluster(bootstrap_servers, work_dir, suffix)
    killed = set()
    try:
        for i in range(3):
            cluster.start(i)
        for i in range(3):
            cluster.up(i)

        # Six connectors created through the three workers (C's while another one leads): two per worker.
        leader = cluster.leader(0)
        for n, name in enumerate(CONNECTORS):
            via = n % 3
            config = {"connector.class": "RecordingSink", "topics": topics[n], "tasks.max": "1",
                      "recording.dir": str(work_dir / "rec" / name)}
            code, body = wait_for(lambda: (lambda r: r if r[0] != 409 else None)(
                call(cluster.url(via) + "/connectors", "POST", {"name": name, "config": config})), 60, "created")
            assert code == 201, body
        assert leader == cluster.leader(2)
        placed = wait_for(lambda: (lambda p: p if len(p) == 6 else None)(cluster.placement(1)), 240, "six RUNNING")
        assert sorted(list(placed.values()).count(cluster.worker_id(i)) for i in range(3)) == [2, 2, 2], placed
        info = call(cluster.url(0) + "/")[1]
        assert info["worker_id"] == cluster.worker_id(0) and info["group"]["rebalances"] >= 1
        assert sorted(info["group"]["assigned"]) == sorted(n for n, w in placed.items() if w == cluster.worker_id(0))
        with urllib.request.urlopen(cluster.url(0) + "/metrics", timeout=30) as response:
            metrics = response.read().decode()
        completed = [line for line in metrics.splitlines()
                     if line.startswith("kafka_connect_connect_worker_rebalance_metrics_completed_rebalances_total{")]
        assert len(completed) == 1 and float(completed[0].split()[-1]) >= 1, metrics[-2000:]
        for name in CONNECTORS:
            wait_for(lambda: delivered(work_dir, name) >= set(range(5)), 120, f"{name}'s first records")

        # A restart asked of a worker that does not run the connector reaches the one that does.
        other = next(i for i in range(3) if cluster.worker_id(i) != placed["c0"])
        starts = len(task_starts(work_dir, "c0"))
        assert call(cluster.url(other) + "/connectors/c0/restart", "POST")[0] == 204
        wait_for(lambda: len(task_starts(work_dir, "c0")) > starts, 120, "c0 restarted by its worker")
        assert {c["pid"] for c in task_starts(work_dir, "c0")} == {cluster.procs[placed_index(cluster, placed["c0"])].pid}

        # kill -9 of worker 1: its connectors run again on the others, nothing lost.
        victim = cluster.worker_id(1)
        moved = sorted(name for name, w in placed.items() if w == victim)
        cluster.procs[1].send_signal(signal.SIGKILL)
        cluster.procs[1].wait(30)
        killed.add(victim)
        produce_all(bootstrap_servers, topics, 5, 5)
        after = wait_for(lambda: (lambda p: p if len(p) == 6 and victim not in p.values() else None)(
            cluster.placement(0)), 120, "the killed worker's connectors elsewhere")
        for name in CONNECTORS:
            wait_for(lambda: delivered(work_dir, name) >= set(range(10)), 120, f"{name}'s next records")
        assert all(after[name] == placed[name] for name in CONNECTORS if name not in moved)

        # The worker comes back (same id): it gets work again; connectors that keep their worker never stop.
        cluster.start(1)
        cluster.up(1)
        back = wait_for(lambda: (lambda p: p if len(p) == 6 and victim in p.values() else None)(
            cluster.placement(0)), 120, "work for the returning worker")
        unmoved = [n for n in CONNECTORS if back[n] == after[n]]
        history = running_history(bootstrap_servers, cluster.status_topic)
        for name in unmoved:
            assert [s for s, w in history[name] if w == after[name]][-1] == "RUNNING", history[name]
        killed.discard(victim)

        # A worker that does not lead suspended past its session timeout: the others take over. A connector
        # created meanwhile starts a rebalance that waits for the suspended worker's session to expire: a
        # write then gets 409 and succeeds when retried. Resumed, the worker stops its connectors and commits
        # nothing stale.
        leader_url = cluster.leader(0)
        s = next(i for i in (2, 1, 0) if cluster.url(i) != leader_url)
        w = next(i for i in range(3) if i != s)
        cluster.procs[s].send_signal(signal.SIGSTOP)
        extra = {"connector.class": "RecordingSink", "topics": topics[0], "tasks.max": "1",
                 "recording.dir": str(work_dir / "rec" / "extra")}
        wait_for(lambda: call(cluster.url(w) + "/connectors", "POST",
                              {"name": "extra", "config": extra, "initial_state": "STOPPED"})[0] == 201, 60, "extra")
        config = {"connector.class": "RecordingSink", "topics": topics[0], "tasks.max": "1",
                  "recording.dir": str(work_dir / "rec" / "c0")}
        wait_for(lambda: call(cluster.url(w) + "/connectors/c0/config", "PUT", config)[0] == 409, 60, "a 409")
        wait_for(lambda: call(cluster.url(w) + "/connectors/c0/config", "PUT", config)[0] == 200, 60, "the retry")
        stopped = cluster.worker_id(s)
        wait_for(lambda: (lambda p: p if len(p) == 6 and stopped not in p.values() else None)(
            cluster.placement(w)), 120, "the suspended worker's connectors elsewhere")
        produce_all(bootstrap_servers, topics, 10, 5)
        cluster.procs[s].send_signal(signal.SIGCONT)
        wait_for(lambda: "lost its group membership" in cluster.logs[s].read_text(), 60, "the fenced worker's notice")
        for name in CONNECTORS:
            wait_for(lambda: delivered(work_dir, name) >= set(range(15)), 120, f"{name}'s records after the pause")
        try:
            wait_for(lambda: len(cluster.placement(0)) == 6, 120, "six RUNNING after the pause")
        except AssertionError as e:
            raise AssertionError(f"{e}: {[call(cluster.url(0) + f'/connectors/{n}/status') for n in CONNECTORS]}")

        # A worker suspended in the middle of an offset commit (before its record reached the producer), past its
        # session: another worker takes its connectors over and commits past that commit. Resumed, the worker
        # finishes the commit it was in: the broker refuses it (its claim of the offsets was fenced when the
        # other worker claimed them), connect-offsets never moves back and its status writes are dropped.
        placed = wait_for(lambda: (lambda p: p if len(p) == 6 else None)(cluster.placement(w)), 120, "six RUNNING")
        leader_url = cluster.leader(w)
        z = next(i for i in (2, 1, 0) if cluster.url(i) != leader_url and cluster.worker_id(i) in placed.values())
        v = next(i for i in range(3) if i != z)  # asked over REST while z is suspended (z's API would not answer)
        zombie = cluster.worker_id(z)
        theirs = sorted(n for n, wid in placed.items() if wid == zombie)
        cluster.markers[z].touch()
        produce_all(bootstrap_servers, topics, 15, 3)
        wait_for(lambda: cluster.suspended(z), 120, "the worker suspended in its commit")
        wait_for(lambda: (lambda p: p if len(p) == 6 and zombie not in p.values() else None)(
            cluster.placement(v)), 120, "the suspended worker's connectors elsewhere")
        produce_all(bootstrap_servers, topics, 18, 3)
        for name in theirs:
            wait_for(lambda: list(committed_offsets(bootstrap_servers, cluster.offset_topic, name).values()) == [21],
                     120, f"{name}'s offsets committed by its new worker")
        cluster.procs[z].send_signal(signal.SIGCONT)
        refusal = "were claimed by another worker"
        # only the log ends this wait: a read of connect-offsets on a loaded machine may come back short, and the
        # offsets are checked whole right after
        wait_for(lambda: refusal in cluster.logs[z].read_text(), 60, "the resumed worker's commit refused")
        assert_offsets_never_go_back(bootstrap_servers, cluster.offset_topic)
        assert refusal in cluster.logs[z].read_text()
        for name in CONNECTORS:
            wait_for(lambda: delivered(work_dir, name) >= set(range(21)), 120, f"{name}'s records after the pause")
        wait_for(lambda: len(cluster.placement(v)) == 6, 120, "six RUNNING after the pause in a commit")

        # Rolling restart (SIGTERM, graceful) of all three: nothing lost.
        for i in range(3):
            assert stop_worker(cluster.procs[i]) == 0, cluster.logs[i].read_text()[-3000:]
            assert "left group" in cluster.logs[i].read_text()
            cluster.start(i)
            cluster.up(i)
            produce_all(bootstrap_servers, topics, 21 + 2 * i, 2)
        for name in CONNECTORS:
            wait_for(lambda: delivered(work_dir, name) >= set(range(27)), 180, f"{name}'s records after the restarts")
        # Taken over without a release: the killed worker and the two suspended ones. What they wrote after
        # waking up is checked too: no status replacing a newer generation's, no offset going back.
        assert_never_on_two_workers(running_history(bootstrap_servers, cluster.status_topic), {victim, stopped, zombie})
        assert_no_stale_status(bootstrap_servers, cluster.status_topic)
        assert_offsets_never_go_back(bootstrap_servers, cluster.offset_topic)
    finally:
        for i, proc in enumerate(cluster.procs):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                stop_worker(proc)
