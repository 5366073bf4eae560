"""Property-based fuzzing of the REST API from its own OpenAPI spec (schemathesis): no answer is a 5xx.

The app runs in-process over a real herder whose connectors are ScriptedHandles (no Spark, no Kafka): memory
status/config logs and a file offset store. Connectors named ``fuzz-running`` and ``fuzz-stopped`` exist so
that generated paths also reach the routes of existing connectors (and the offsets routes of a STOPPED one).
"""

import tempfile
import threading
from pathlib import Path

import hypothesis
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error

from connect_spark.config.worker import WorkerConfig
from connect_spark.herder import Herder
from connect_spark.rest.app import create_app
from connect_spark.status.log import MemoryLog
from connect_spark.status.states import TargetState
from connect_spark.status.stores import ConfigStore, StatusStore
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.testing.handles import ScriptedHandle

WORKER = {"key.converter": "StringConverter", "value.converter": "StringConverter", "bootstrap.servers": "127.0.0.1:1"}
CONNECTOR = {"connector.class": "RecordingSink", "topics": "fuzz", "tasks.max": "2", "recording.dir": "/nonexistent",
             "consumer.override.sasl.jaas.config": "fuzz-secret-marker"}
NAMES = ("fuzz-running", "fuzz-stopped")


def build_herder(offsets_file):
    status, config = StatusStore(MemoryLog()), ConfigStore(MemoryLog())
    status.start()
    config.start()
    offsets = FileOffsetStore(str(offsets_file))
    return Herder(WorkerConfig(WORKER), config, status, offsets, ScriptedHandle, "127.0.0.1:8083"), offsets


# Built at import time because schemathesis reads the spec when the module is collected; run by the fixture.
HERDER, OFFSETS = build_herder(Path(tempfile.mkdtemp(prefix="rest-fuzz-")) / "offsets.json")
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(HERDER, None, "fuzz-cluster"))


@pytest.fixture(scope="module", autouse=True)
def running_herder():
    OFFSETS.start()
    thread = threading.Thread(target=HERDER.run, daemon=True)
    thread.start()
    assert HERDER.started.wait(10)
    HERDER.create_connector(NAMES[0], CONNECTOR, TargetState.STARTED)
    HERDER.create_connector(NAMES[1], CONNECTOR, TargetState.STOPPED)
    yield HERDER
    HERDER.request_stop()
    thread.join(10)
    OFFSETS.stop()


#: One test per operation of the spec, by its label ("GET /connectors/{name}"): under pytest 9 schemathesis's own
#: ``schema.parametrize()`` gives all of them one node id, so a failure could not be told apart or deselected.
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.label for operation in OPERATIONS])
def test_no_server_errors(operation):
    @hypothesis.given(case=operation.as_strategy())
    @hypothesis.settings(max_examples=12, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    def no_server_error(case):
        if "name" in (case.path_parameters or {}) and case.path_parameters["name"].endswith("0"):
            case.path_parameters["name"] = NAMES[0]
        response = case.call()
        case.validate_response(response, checks=[not_a_server_error])
        assert response.status_code < 500, (case.method, case.formatted_path, response.status_code, response.text)
        assert "fuzz-secret-marker" not in response.text

    no_server_error()
