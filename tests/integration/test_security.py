"""SASL/PLAIN end to end: worker security keys reach Spark's Kafka source, the offset store and the metadata
client; a wrong password stops the CLI quickly with a clear error.

A broker of its own (plaintext + SASL_PLAINTEXT listeners) serves this module; the worker only knows the SASL
listener, so every client that missed the security keys would fail to connect.
"""

import subprocess
import time

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import cli_command, committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import decode_value, read_recorded_records

USER, PASSWORD = "connect", "s3cret-sasl-pw"


def jaas(user, password):
    return f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def sasl_broker(jars, tmp_path_factory):
    from connect_spark.localkafka import LocalKafkaBroker

    broker = LocalKafkaBroker(tmp_path_factory.mktemp("sasl-kafka"), heap="384m", sasl_users={USER: PASSWORD})
    broker.start()
    yield broker
    broker.stop()


def sasl_worker(broker, work_dir, password=PASSWORD):
    return worker_properties(broker.sasl_bootstrap_servers, work_dir, **{
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas(USER, password),
        "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
        "spark.driver.memory": "1g",
    })


def run_cli(command, log_file, timeout):
    with open(log_file, "wb") as log:
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
            raise AssertionError(f"the CLI did not finish within {timeout} s:\n{log_file.read_text()[-3000:]}")
    return code, time.monotonic() - started, log_file.read_text(errors="replace")


def test_connector_runs_end_to_end_over_sasl_plain(sasl_broker, topic_name, work_dir):
    create_topic(sasl_broker.bootstrap_servers, topic_name, partitions=2)
    produce(sasl_broker.bootstrap_servers, topic_name,
            [(i % 2, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(10)])
    worker = sasl_worker(sasl_broker, work_dir)
    recording = work_dir / "recorded"
    connector = {"name": "sasl-sink", "connector.class": "RecordingSink", "topics": topic_name, "tasks.max": "1",
                 "recording.dir": str(recording)}

    code, _, output = run_cli(cli_command(worker, connector, work_dir, available_now=True), work_dir / "cli.log", 400)

    assert code == 0, output[-3000:]
    values = sorted(decode_value(r["value"]) for r in read_recorded_records(recording))
    assert values == sorted(f"v{i}".encode() for i in range(10)), values
    # Offsets were committed to connect-offsets through the SASL listener (read back the same way).
    assert committed_offsets(worker, "sasl-sink") == {TopicPartition(topic_name, 0): 5,
                                                     TopicPartition(topic_name, 1): 5}
    assert PASSWORD not in output


def test_wrong_password_fails_fast_with_a_clear_error(sasl_broker, topic_name, work_dir):
    create_topic(sasl_broker.bootstrap_servers, topic_name, partitions=1)
    worker = sasl_worker(sasl_broker, work_dir, password="not-the-password")
    connector = {"name": "sasl-wrong", "connector.class": "RecordingSink", "topics": topic_name,
                 "recording.dir": str(work_dir / "recorded")}

    code, seconds, output = run_cli(cli_command(worker, connector, work_dir, available_now=True),
                                    work_dir / "cli.log", 120)

    assert code != 0, output[-3000:]
    assert seconds < 60, f"took {seconds:.0f} s"
    assert "Authentication to Kafka at" in output and "sasl.jaas.config" in output, output[-3000:]
    assert "Invalid username or password" in output
    assert "not-the-password" not in output
    assert "Traceback" not in output and "py4j" not in output, output[-3000:]
