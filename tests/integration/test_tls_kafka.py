"""Secure Kafka as Connect users configure it, end to end against a real TLS broker.

A broker of this module's own serves, next to a plaintext listener (used only by the test to produce and
to check), an SSL listener that requires a client certificate and a SASL_SSL listener with SCRAM users; its
CA and certificates are made at test time. The workers only know a TLS listener, so any client of the
runtime that missed the ssl.* keys (offset, status and config stores, the consumer-group commit, the dead
letter queue producer and admin, the REST herder's admin, Spark's Kafka source) would fail to connect.

* mutual TLS, a JKS truststore and a PKCS12 keystore: `connect-spark distributed` with a Delta sink and a
  files sink, each with a dead letter queue;
* SASL_SSL with SCRAM-SHA-512 and a PKCS12 truststore: `connect-spark standalone --available-now`, files sink
  with a dead letter queue;
* a wrong truststore password stops the worker at start with an error naming the key, not the password.
"""

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from connect_spark.api.records import TopicPartition
from connect_spark.config.properties import format_properties
from connect_spark.config.worker import WorkerConfig
from connect_spark.status.records import StatusRecord, connector_status_key, decode_status
from connect_spark.status.states import State
from connect_spark.status.stores import status_store_for
from connect_spark.testing.harness import cli_command, committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce, read_topic
from connect_spark.testing.tls import make_tls_material

from test_distributed import call, free_port, start_worker, stop_worker, wait_for
from test_security import run_cli

USER, PASSWORD = "connect-tls", "scram-pw-Zq81"
JSON = "org.apache.kafka.connect.json.JsonConverter"
GOOD, BAD = 16, 2  # records per topic that convert, and that go to the dead letter queue


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_broker(jars, tls, tmp_path_factory):
    from connect_spark.localkafka import LocalKafkaBroker

    broker = LocalKafkaBroker(tmp_path_factory.mktemp("tls-kafka"), heap="384m", tls=tls, tls_users={USER: PASSWORD})
    broker.start()
    yield broker
    broker.stop()


def small_spark(**extra):
    return {"spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
            "spark.driver.memory": "1g", "key.converter": JSON, "key.converter.schemas.enable": "false",
            "value.converter": JSON, "value.converter.schemas.enable": "false", **extra}


def mtls_keys(tls):
    """A JKS truststore and a PKCS12 keystore, as a Kafka admin hands them to a Connect user."""
    return {"security.protocol": "SSL",
            "ssl.truststore.location": str(tls.client_truststore("jks")),
            "ssl.truststore.password": tls.store_password,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.client_keystore("p12")),
            "ssl.keystore.password": tls.store_password,
            "ssl.key.password": tls.store_password}


def scram_keys(tls, password=PASSWORD):
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{USER}" password="{password}";',
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(tls.client_truststore("p12")),
            "ssl.truststore.password": tls.store_password}


def produce_orders(broker, topic):
    """GOOD convertible records and BAD broken ones over two partitions (through the plaintext listener)."""
    create_topic(broker.bootstrap_servers, topic, partitions=2)
    records = [(i % 2, json.dumps({"id": i}).encode(), json.dumps({"id": i, "amount": i * 10}).encode(), [])
               for i in range(GOOD)]
    records += [(p, b'{"id": -1}', b"{oops", []) for p in range(BAD)]
    produce(broker.bootstrap_servers, topic, records)
    return {TopicPartition(topic, p): off for p, off in end_offsets(broker.bootstrap_servers, topic).items()}


def dlq_keys(topic):
    return {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": topic,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true"}


def files_rows(folder):
    return [json.loads(line) for path in Path(folder).rglob("*.jsonl") for line in path.read_text().splitlines()]


def group_offsets(broker, group):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        return {TopicPartition(tp.topic, tp.partition): meta.offset
                for tp, meta in admin.list_group_offsets(group)[group].items()}
    finally:
        admin.close()


def secrets_of(tls):
    return (tls.store_password, tls.key_password, PASSWORD)


def test_delta_and_files_sinks_with_dlq_over_mutual_tls(tls_broker, tls, spark, topic_name, work_dir):
    ends = produce_orders(tls_broker, topic_name)
    port, suffix = free_port(), topic_name[-6:]
    status_topic = f"tls-status-{suffix}"
    worker = worker_properties(tls_broker.ssl_bootstrap_servers, work_dir, **{
        **mtls_keys(tls), **small_spark(), "listeners": f"http://127.0.0.1:{port}", "trigger": "500ms",
        "config.storage.topic": f"tls-configs-{suffix}", "config.storage.replication.factor": "1",
        "status.storage.topic": status_topic, "status.storage.replication.factor": "1",
        "offset.storage.topic": f"tls-offsets-{suffix}", "group.id": f"tls-cluster-{suffix}"})
    worker_file = work_dir / "worker.properties"
    worker_file.write_text(format_properties(worker))
    table, files = work_dir / "delta", work_dir / "files"
    connectors = {
        "tls-delta": {"connector.class": "DeltaSink", "topics": topic_name, "delta.table.path": str(table),
                      "delta.column.offset": "_offset", **dlq_keys(f"dlq-delta-{suffix}")},
        # On the executors: their Python workers read the JKS and PKCS12 stores for the DLQ clients themselves.
        "tls-files": {"connector.class": "FilesSink", "topics": topic_name, "files.dir": str(files),
                      "files.format": "json", "files.rotate.records": "1", "task.execution.mode": "executor",
                      **dlq_keys(f"dlq-files-{suffix}")},
    }
    url, log_file = f"http://127.0.0.1:{port}", work_dir / "distributed.log"
    answers = []
    proc = start_worker(worker_file, log_file)
    try:
        wait_for(lambda: call(url + "/")[0] == 200, 180, "the REST API", proc)
        for name, config in connectors.items():
            code, body = call(url + "/connectors", "POST", {"name": name, "config": config})
            assert code == 201, body
        for name in connectors:
            wait_for(lambda: committed_offsets(worker, name) == ends, 300, f"{name}'s offsets committed", proc)
            answers.append(json.dumps(call(f"{url}/connectors/{name}/status")[1]))
            answers.append(json.dumps(call(f"{url}/connectors/{name}")[1]))
    finally:
        stop_worker(proc)

    # Every convertible record in each sink, every broken one in its dead letter queue.
    rows = spark.read.format("delta").load(str(table)).collect()
    assert sorted(r["id"] for r in rows) == list(range(GOOD))
    assert sorted(r["id"] for r in files_rows(files)) == list(range(GOOD))
    for dlq in (f"dlq-delta-{suffix}", f"dlq-files-{suffix}"):
        dead = read_topic(tls_broker.bootstrap_servers, dlq)
        assert sorted(r.value for r in dead) == [b"{oops"] * BAD, dlq
        assert all(dict(r.headers)["__connect.errors.topic"] == topic_name.encode() for r in dead)
    # Offsets in connect-offsets (checked above, through the SSL listener) and in the consumer groups.
    for name in connectors:
        assert group_offsets(tls_broker, f"connect-{name}") == ends, name
    # Statuses in connect-status, written through the SSL listener.
    statuses = {decode_status(r.key.decode(), r.value).state.name
                for r in read_topic(tls_broker.bootstrap_servers, status_topic)
                if r.key.decode() in {connector_status_key(n) for n in connectors}}
    assert "RUNNING" in statuses, statuses
    # No store password in the log or a REST answer.
    text = log_file.read_text(errors="replace") + "\n".join(answers)
    for secret in secrets_of(tls):
        assert secret not in text


def test_files_sink_with_dlq_over_sasl_ssl_scram(tls_broker, tls, topic_name, work_dir):
    """Connect's precedence too: the worker's consumer.*, producer.* and admin.* JAAS entries are wrong and the
    connector's *.override.* ones right, so Spark's source, the partition lookups, the DLQ producer and the DLQ
    admin client only connect if the overrides win; the worker's own clients use the top-level keys."""
    ends = produce_orders(tls_broker, topic_name)
    dlq = f"dlq-{topic_name}"
    wrong, right = scram_keys(tls, "wrong-prefixed-pw")["sasl.jaas.config"], scram_keys(tls)["sasl.jaas.config"]
    worker = worker_properties(tls_broker.sasl_ssl_bootstrap_servers, work_dir, **{
        **scram_keys(tls), **small_spark(), "offset.storage.topic": f"scram-offsets-{topic_name[-6:]}",
        **{f"{kind}.sasl.jaas.config": wrong for kind in ("consumer", "producer", "admin")}})
    files = work_dir / "files"
    connector = {"name": "scram-files", "connector.class": "FilesSink", "topics": topic_name,
                 "files.dir": str(files), "files.format": "json", "files.rotate.records": "1", **dlq_keys(dlq),
                 **{f"{kind}.override.sasl.jaas.config": right for kind in ("consumer", "producer", "admin")}}

    code, _, output = run_cli(cli_command(worker, connector, work_dir, available_now=True), work_dir / "cli.log", 400)

    assert code == 0, output[-3000:]
    assert sorted(r["id"] for r in files_rows(files)) == list(range(GOOD))
    assert [r.value for r in read_topic(tls_broker.bootstrap_servers, dlq)] == [b"{oops"] * BAD
    assert committed_offsets(worker, "scram-files") == ends  # read back over SASL_SSL too
    assert group_offsets(tls_broker, "connect-scram-files") == ends
    for secret in (*secrets_of(tls), "wrong-prefixed-pw"):
        assert secret not in output
    # A standalone worker keeps no statuses; the status store of a distributed one, over the same listener:
    assert_status_store_works(WorkerConfig({**worker, "status.storage.topic": f"scram-status-{topic_name[-6:]}",
                                            "status.storage.replication.factor": "1"}))


def assert_status_store_works(worker_config):
    """A RUNNING status written by one status store is read back by another (a restarted worker)."""
    writer, reader = status_store_for(worker_config), status_store_for(worker_config)
    writer.start()
    try:
        writer.put(StatusRecord("scram-files", None, State.RUNNING, None, "worker-1:8083", 1))
    finally:
        writer.stop()
    reader.start()
    try:
        assert reader.connector("scram-files").state is State.RUNNING
    finally:
        reader.stop()


def test_wrong_truststore_password_fails_at_start_naming_the_key(tls_broker, tls, topic_name, work_dir):
    create_topic(tls_broker.bootstrap_servers, topic_name, partitions=1)
    wrong = "not-the-truststore-pw"
    worker = worker_properties(tls_broker.ssl_bootstrap_servers, work_dir, **{
        **mtls_keys(tls), **small_spark(), "ssl.truststore.password": wrong})
    connector = {"name": "tls-wrong", "connector.class": "FilesSink", "topics": topic_name,
                 "files.dir": str(work_dir / "files"), "files.format": "json"}

    code, _, output = run_cli(cli_command(worker, connector, work_dir, available_now=True), work_dir / "cli.log", 120)

    assert code != 0, output[-3000:]
    assert "query generation" not in output, "refused at start, before any query ran"
    assert "ssl.truststore.password" in output and "password is wrong" in output, output[-3000:]
    assert wrong not in output and tls.store_password not in output
    assert "Traceback" not in output, output[-3000:]


def oauth_keys(tls, jaas_options, **keys):
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **keys,
            "sasl.jaas.config": f"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                f"{jaas_options};",
            "ssl.truststore.location": str(tls.client_truststore("jks")), "ssl.truststore.password": tls.store_password}


def test_offset_store_and_group_over_oauthbearer_client_credentials(tls_broker, tls, topic_name):
    """The runtime's own clients get their tokens from a token endpoint (client credentials)."""
    from connect_spark.storage import KafkaOffsetStore
    from connect_spark.testing.oauth import LocalTokenEndpoint

    create_topic(tls_broker.bootstrap_servers, topic_name, partitions=1)
    with LocalTokenEndpoint({"connect-svc": "oauth-client-secret"}) as endpoint:
        store = KafkaOffsetStore(tls_broker.sasl_ssl_bootstrap_servers, topic=f"oauth-offsets-{topic_name[-6:]}",
                                 partitions=1, replication_factor=1, client_config=oauth_keys(
                                     tls, 'clientId="connect-svc" clientSecret="oauth-client-secret" scope="kafka"',
                                     **{"sasl.oauthbearer.token.endpoint.url": endpoint.url}))
        store.start()
        try:
            offsets = {TopicPartition(topic_name, 0): 7}
            store.write("oauth-sink", offsets, "connect-oauth-sink")
            assert store.read("oauth-sink") == offsets
        finally:
            store.stop()
        assert {client for client, _ in endpoint.requests} == {"connect-svc"}
    assert group_offsets(tls_broker, "connect-oauth-sink") == {TopicPartition(topic_name, 0): 7}


def test_files_sink_over_oauthbearer_unsecured_tokens(tls_broker, tls, topic_name, work_dir):
    """Spark's source (Java's own unsecured login), the offset store, the group commit and the DLQ over
    SASL_SSL/OAUTHBEARER, as on a development broker."""
    ends = produce_orders(tls_broker, topic_name)
    dlq = f"dlq-{topic_name}"
    worker = worker_properties(tls_broker.sasl_ssl_bootstrap_servers, work_dir, **{
        **oauth_keys(tls, 'unsecuredLoginStringClaim_sub="connect"'), **small_spark(),
        "offset.storage.topic": f"oauth-offsets-{topic_name[-6:]}"})
    files = work_dir / "files"
    connector = {"name": "oauth-files", "connector.class": "FilesSink", "topics": topic_name,
                 "files.dir": str(files), "files.format": "json", "files.rotate.records": "1", **dlq_keys(dlq)}

    code, _, output = run_cli(cli_command(worker, connector, work_dir, available_now=True), work_dir / "cli.log", 400)

    assert code == 0, output[-3000:]
    assert sorted(r["id"] for r in files_rows(files)) == list(range(GOOD))
    assert [r.value for r in read_topic(tls_broker.bootstrap_servers, dlq)] == [b"{oops"] * BAD
    assert committed_offsets(worker, "oauth-files") == ends
    assert group_offsets(tls_broker, "connect-oauth-files") == ends
