"""Secrets in a connector config never leave `connect-spark distributed` through REST answers, the status topic
or the log.

Markers unique to the test stand in for a `*.password` and a `sasl.jaas.config` password; after the connector
ran (records delivered), every REST answer fetched, the whole CLI log and every record of the status topic are
searched for them. The config topic is not searched: like Kafka Connect, connect_spark stores connector configs
there in plain text (use config provider references such as `${file:...}` to keep secrets out of it).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from kafka import KafkaConsumer

from connect_spark.config.properties import format_properties
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_records
from connect_spark.testing.waiting import wait_for_worker as wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rest:
    """Calls the REST API and keeps every answer's raw text."""

    def __init__(self, url):
        self.url = url
        self.answers = []

    def __call__(self, path, method="GET", body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                code, raw = response.status, response.read()
        except urllib.error.HTTPError as e:
            code, raw = e.code, e.read()
        text = raw.decode("utf-8", "replace")
        self.answers.append(f"{method} {path} -> {code} {text}")
        return code, (json.loads(text) if text else None)


def topic_text(bootstrap_servers, topic):
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000, group_id=None)
    try:
        return "\n".join(f"{(r.key or b'').decode('utf-8', 'replace')} {(r.value or b'').decode('utf-8', 'replace')}"
                         for r in consumer)
    finally:
        consumer.close()


def test_secrets_stay_out_of_rest_status_topic_and_log(bootstrap_servers, topic_name, work_dir):
    password_marker = f"pw-marker-{uuid.uuid4().hex}"
    jaas_marker = f"jaas-marker-{uuid.uuid4().hex}"
    # The TLS keys' secrets: store and key passwords, an inline PEM key (PLAINTEXT here, so the Python clients
    # ignore them and Spark's Kafka source is handed them as kafka.* options: neither may show them).
    tls_markers = {key: f"{key.replace('.', '-')}-marker-{uuid.uuid4().hex}" for key in (
        "consumer.override.ssl.truststore.password", "consumer.override.ssl.keystore.password",
        "consumer.override.ssl.key.password", "consumer.override.ssl.keystore.key",
        "producer.override.ssl.keystore.password", "elastic.https.ssl.truststore.password",
        "elastic.https.ssl.keystore.password")}
    create_topic(bootstrap_servers, topic_name, partitions=1)
    produce(bootstrap_servers, topic_name, [(0, b"k", f"v{i}".encode(), []) for i in range(3)])
    port, suffix = free_port(), topic_name[-6:]
    status_topic = f"leak-status-{suffix}"
    worker = worker_properties(bootstrap_servers, work_dir, **{
        "listeners": f"http://127.0.0.1:{port}",
        "config.storage.topic": f"leak-configs-{suffix}", "config.storage.replication.factor": "1",
        "status.storage.topic": status_topic, "status.storage.replication.factor": "1",
        "offset.storage.topic": f"leak-offsets-{suffix}",
        "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
        "spark.driver.memory": "1g",
    })
    (work_dir / "worker.properties").write_text(format_properties(worker))
    recording = work_dir / "recorded"
    config = {
        "connector.class": "RecordingSink", "topics": topic_name, "tasks.max": "1", "recording.dir": str(recording),
        "recording.password": password_marker,
        "consumer.override.sasl.jaas.config":
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{jaas_marker}";',
        **tls_markers,
    }
    log_file = work_dir / "distributed.log"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with open(log_file, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "connect_spark.cli", "distributed",
                                 str(work_dir / "worker.properties")],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    rest = Rest(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: rest("/")[0] == 200, 120, "the REST API", proc)
        assert rest("/connectors", "POST", {"name": "leaky", "config": config})[0] == 201
        wait_for(lambda: len(read_recorded_records(recording)) >= 3, 300, "3 records delivered", proc)
        wait_for(lambda: rest("/connectors/leaky/status")[1]["connector"]["state"] == "RUNNING", 60, "RUNNING", proc)
        for path in ("/connectors/leaky", "/connectors/leaky/config", "/connectors/leaky/tasks",
                     "/connectors/leaky/tasks/0/status", "/connectors?expand=info&expand=status",
                     "/connectors/leaky/offsets"):
            assert rest(path)[0] == 200, rest.answers[-1]
        # Answers that echo a config back: an update, a validation, and a rejected config.
        assert rest("/connectors/leaky/config", "PUT", {**config, "tasks.max": "1"})[0] == 200
        assert rest("/connector-plugins/RecordingSink/config/validate", "PUT",
                    {**config, "connector.class": "RecordingSink"})[0] == 200
        assert rest("/connectors/rejected/config", "PUT", {**config, "tasks.max": "many"})[0] == 400
        assert rest("/connectors/leaky/config", "PATCH", {"errors.tolerance": "sometimes"})[0] == 400
        assert rest("/connectors/leaky", "DELETE")[0] == 204
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(180)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)

    answers = "\n".join(rest.answers)
    assert "[hidden]" in answers  # the secrets were there, masked
    log_text = log_file.read_text(errors="replace")
    status_text = topic_text(bootstrap_servers, status_topic)
    assert "leaky" in status_text  # the status topic was read
    for marker in (password_marker, jaas_marker, *tls_markers.values()):
        assert marker not in answers, [a for a in rest.answers if marker in a]
        assert marker not in log_text, [line for line in log_text.splitlines() if marker in line]
        assert marker not in status_text
