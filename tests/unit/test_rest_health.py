"""``GET /health`` over the real REST server: 503 while starting, 200 when ready, 503 with the reason otherwise."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from connect_spark.config.worker import WorkerConfig
from connect_spark.herder import Herder
from connect_spark.rest.app import create_app
from connect_spark.rest.server import RestServer
from connect_spark.status.log import KafkaLog, MemoryLog
from connect_spark.status.stores import ConfigStore, StatusStore
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.testing.handles import ScriptedHandle

WORKER = {"key.converter": "StringConverter", "value.converter": "StringConverter", "bootstrap.servers": "127.0.0.1:1"}


def _get(url):
    try:
        with urllib.request.urlopen(url + "/health", timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def serve(tmp_path):
    started = []

    def serve(config_log):
        status, config = StatusStore(MemoryLog()), ConfigStore(config_log)
        status.start()
        offsets = FileOffsetStore(str(tmp_path / "offsets.json"))
        offsets.start()
        herder = Herder(WorkerConfig(WORKER), config, status, offsets, ScriptedHandle, "127.0.0.1:8083")
        server = RestServer(create_app(herder), "http://127.0.0.1:0")
        server.start()
        started.append((herder, server, offsets))
        return herder, server.url

    yield serve
    for herder, server, offsets in started:
        herder.request_stop()
        server.stop()
        offsets.stop()


def _run(herder):
    thread = threading.Thread(target=herder.run, daemon=True)
    thread.start()
    assert herder.started.wait(10)
    return thread


def test_starting_then_healthy_then_stopped(serve):
    config_log = MemoryLog()
    herder, url = serve(config_log)
    assert _get(url) == (503, {"status": "starting", "message": "Worker is still starting up."})
    thread = _run(herder)
    code, body = _get(url)
    assert (code, body["status"]) == (200, "healthy")
    herder.request_stop()
    thread.join(10)
    code, body = _get(url)
    assert (code, body["status"]) == (503, "unhealthy") and "stopped" in body["message"]


def test_unreadable_config_store_is_unhealthy_with_the_reason(serve):
    # A config topic whose log never started: reading it to its end fails, as with an unreachable cluster.
    herder, url = serve(KafkaLog("127.0.0.1:1", "connect-configs", 1, 1, config_key="config.storage.topic"))
    _run(herder)
    code, body = _get(url)
    assert (code, body["status"]) == (503, "unhealthy")
    assert "config store cannot be read" in body["message"] and "not started" in body["message"]


def _post(url, path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_create_with_initial_offsets_writes_them_before_the_connector_exists(serve, tmp_path):
    from connect_spark.api.records import TopicPartition

    herder, url = serve(MemoryLog())
    _run(herder)
    config = {"connector.class": "RecordingSink", "topics": "orders", "recording.dir": str(tmp_path / "rec")}
    offsets = [{"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": {"kafka_offset": 42}}]
    code, body = _post(url, "/connectors", {"name": "seeded", "config": config, "offsets": offsets})
    assert code == 201, body
    assert herder.offset_store.read("seeded") == {TopicPartition("orders", 1): 42}

    bad = [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": None}]
    code, body = _post(url, "/connectors", {"name": "nulls", "config": config, "offsets": bad})
    assert code == 400 and "cannot be null" in body["message"]
    code, body = _post(url, "/connectors", {"name": "invalid", "config": {**config, "tasks.max": "zero"},
                                            "offsets": offsets})
    assert code == 400
    assert herder.offset_store.read("nulls") == {} and herder.offset_store.read("invalid") == {}
    assert herder.connectors() == ["seeded"]
