"""The REST API against the real server on 127.0.0.1, with the status, config and offset stores on a real broker.

Connectors are run by ScriptedHandle (no Spark); tests/integration/test_distributed.py runs the real thing.
"""

import base64
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from connect_spark.config.worker import WorkerConfig
from connect_spark.herder import Herder
from connect_spark.rest.app import create_app
from connect_spark.rest.server import RestServer
from connect_spark.status.stores import config_store_for, status_store_for
from connect_spark.storage.kafka_offsets import KafkaOffsetStore
from connect_spark.testing.handles import ScriptedHandle

AUTH = ("admin", "s3cret-pw")


class Client:
    def __init__(self, url, auth=AUTH):
        self.url = url
        self.auth = auth

    def call(self, method, path, body=None, auth=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        user, password = auth or self.auth
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, (json.loads(raw) if raw else None)

    def wait_state(self, name, state, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, body = self.call("GET", f"/connectors/{name}/status")
            if code == 200 and body["connector"]["state"] == state:
                return body
            time.sleep(0.1)
        raise AssertionError(f"{name} never reached {state}: {body}")


@pytest.fixture(scope="module")
def rest(bootstrap_servers, tmp_path_factory):
    suffix = str(int(time.time() * 1000))
    worker = WorkerConfig({
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "StringConverter", "value.converter": "StringConverter",
        "config.storage.topic": f"rest-configs-{suffix}", "config.storage.replication.factor": "1",
        "status.storage.topic": f"rest-status-{suffix}", "status.storage.replication.factor": "1",
        "status.storage.partitions": "2",
        "offset.storage.topic": f"rest-offsets-{suffix}", "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "2",
        "listeners": "http://127.0.0.1:0",
        "rest.basic.auth.username": AUTH[0], "rest.basic.auth.password": AUTH[1],
    })
    config_store, status_store = config_store_for(worker), status_store_for(worker)
    offsets = KafkaOffsetStore(bootstrap_servers, worker.offset_storage_topic, 2, 1)
    for store in (config_store, status_store, offsets):
        store.start()
    server = RestServer(None, worker.listeners[0])
    herder = Herder(worker, config_store, status_store, offsets, ScriptedHandle, f"127.0.0.1:{server.port}")
    server.app = create_app(herder, worker.rest_basic_auth, "test-cluster")
    server.start()
    thread = threading.Thread(target=herder.run, daemon=True)
    thread.start()
    try:
        yield Client(server.url), herder, tmp_path_factory.mktemp("rest")
    finally:
        herder.request_stop()
        thread.join(20)
        server.stop()
        for store in (offsets, status_store, config_store):
            store.stop()


def sink(folder, **extra):
    return {"connector.class": "RecordingSink", "topics": "orders", "tasks.max": "2",
            "recording.dir": str(folder), **extra}


def test_root_auth_and_openapi(rest):
    client, herder, _ = rest
    assert herder.worker_id.startswith("127.0.0.1:")
    code, body = client.call("GET", "/")
    assert code == 200 and body["kafka_cluster_id"] == "test-cluster" and "version" in body
    code, body = client.call("GET", "/connectors", auth=("admin", "wrong"))
    assert code == 401 and body == {"error_code": 401, "message": "User cannot access the resource."}
    code, spec = client.call("GET", "/openapi.json")
    assert code == 200 and "/connectors/{name}/offsets" in spec["paths"]
    code, body = client.call("GET", "/no/such/path")
    assert code == 404 and body["error_code"] == 404


def test_connector_lifecycle_over_rest(rest):
    client, herder, folder = rest
    config = sink(folder, **{"db.password": "hunter2"})
    code, body = client.call("POST", "/connectors", {"name": "life", "config": config})
    assert code == 201, body
    assert body["name"] == "life" and body["type"] == "sink" and body["config"]["db.password"] == "[hidden]"
    status = client.wait_state("life", "RUNNING")
    assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
    assert "trace" not in status["connector"] and status["type"] == "sink"

    code, body = client.call("POST", "/connectors", {"name": "life", "config": config})
    assert code == 409 and body["error_code"] == 409 and "already exists" in body["message"]
    code, body = client.call("GET", "/connectors/life/config")
    assert code == 200 and body["db.password"] == "[hidden]" and body["topics"] == "orders"
    code, body = client.call("GET", "/connectors/life/tasks")
    assert code == 200 and [t["id"] for t in body] == [{"connector": "life", "task": 0}, {"connector": "life", "task": 1}]
    assert all(t["config"]["db.password"] == "[hidden]" for t in body)
    code, body = client.call("GET", "/connectors/life/tasks/1/status")
    assert code == 200 and body["id"] == 1 and body["state"] == "RUNNING"
    code, body = client.call("GET", "/connectors?expand=status&expand=info")
    assert code == 200 and body["life"]["status"]["connector"]["state"] == "RUNNING"
    assert body["life"]["info"]["config"]["db.password"] == "[hidden]"

    assert client.call("PUT", "/connectors/life/pause")[0] == 202
    client.wait_state("life", "PAUSED")
    assert client.call("PUT", "/connectors/life/resume")[0] == 202
    client.wait_state("life", "RUNNING")

    code, body = client.call("PATCH", "/connectors/life/config", {"tasks.max": "1", "db.password": None})
    assert code == 200 and body["config"]["tasks.max"] == "1" and "db.password" not in body["config"]
    code, body = client.call("PUT", "/connectors/life/config", {**config, "tasks.max": "1"})
    assert code == 200
    code, body = client.call("PUT", "/connectors/other/config", sink(folder))
    assert code == 201 and body["name"] == "other"

    assert client.call("POST", "/connectors/life/restart")[0] == 204
    code, body = client.call("POST", "/connectors/life/restart?includeTasks=true")
    assert code == 202 and body["connector"]["state"] == "RESTARTING"
    client.wait_state("life", "RUNNING")
    assert client.call("POST", "/connectors/life/tasks/0/restart")[0] == 204
    assert client.call("POST", "/connectors/life/tasks/9/restart")[0] == 404

    assert client.call("DELETE", "/connectors/other")[0] == 204
    code, body = client.call("GET", "/connectors/other")
    assert code == 404 and body == {"error_code": 404, "message": "Connector other not found"}


def test_invalid_config_is_400_with_masked_values(rest):
    client, _, folder = rest
    code, body = client.call("POST", "/connectors", {"name": "bad", "config": {
        "connector.class": "RecordingSink", "topics": "t", "tasks.max": "zero", "recording.dir": str(folder),
        "consumer.override.sasl.jaas.config": "x required password=\"topsecret\";"}})
    assert code == 400 and body["error_code"] == 400 and "tasks.max" in body["message"]
    assert "topsecret" not in body["message"]
    code, body = client.call("POST", "/connectors", {"name": "bad"})
    assert code == 400


def test_offsets_endpoints(rest):
    client, herder, folder = rest
    assert client.call("POST", "/connectors", {"name": "offs", "config": sink(folder)})[0] == 201
    client.wait_state("offs", "RUNNING")
    patch = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 42}}]}
    code, body = client.call("PATCH", "/connectors/offs/offsets", patch)
    assert code == 400 and "STOPPED" in body["message"]
    assert client.call("PUT", "/connectors/offs/stop")[0] == 204
    status = client.wait_state("offs", "STOPPED")
    assert status["tasks"] == []
    code, body = client.call("PATCH", "/connectors/offs/offsets", patch)
    assert code == 200 and body == {"message": "The offsets for this connector have been altered successfully"}
    code, body = client.call("GET", "/connectors/offs/offsets")
    assert code == 200 and body["offsets"] == patch["offsets"]
    code, body = client.call("DELETE", "/connectors/offs/offsets")
    assert code == 200 and body["message"] == "The offsets for this connector have been reset successfully"
    assert client.call("GET", "/connectors/offs/offsets")[1] == {"offsets": []}
    # The stored records are Kafka Connect's.
    info = herder.config_store.get("offs")
    assert info.target_state.value == "STOPPED" and info.task_configs == []


def test_plugins_and_validate(rest):
    client, _, folder = rest
    code, body = client.call("GET", "/connector-plugins")
    assert code == 200
    classes = {p["class"]: p for p in body}
    assert classes["connect_spark.testing.recording.RecordingSinkConnector"]["version"] == "1.0"
    assert all(p["type"] == "sink" for p in body)
    code, body = client.call("GET", "/connector-plugins?connectorsOnly=false")
    assert {"converter", "transformation", "predicate"} <= {p["type"] for p in body}
    code, body = client.call("PUT", "/connector-plugins/RecordingSink/config/validate",
                             {"connector.class": "RecordingSink", "topics": "t", "tasks.max": "0",
                              "recording.dir": str(folder), "db.password": "hunter2"})
    assert code == 200 and body["error_count"] >= 1
    by_name = {c["definition"]["name"]: c for c in body["configs"]}
    assert by_name["tasks.max"]["value"]["errors"]
    assert "recording.dir" in by_name  # the plugin's own keys
    assert "hunter2" not in json.dumps(body)
    code, body = client.call("PUT", "/connector-plugins/connect_spark.testing.recording.FaultySinkConnector/config/validate",
                             {"connector.class": "RecordingSink", "topics": "t"})
    assert code == 400
