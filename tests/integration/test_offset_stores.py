"""KafkaOffsetStore against the session's real Kafka broker; the client-setting translation of connect_spark.kafka.clients.

Each test uses its own offsets topic (``offset.storage.topic``) and its own connector names, so tests
do not see each other's records.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError
from kafka.partitioner import murmur2
from kafka.structs import TopicPartition as KafkaTopicPartition

from connect_spark.api.errors import ConfigException
from connect_spark.api.records import TopicPartition
from connect_spark.kafka.clients import kafka_client_kwargs, parse_jaas_config
from connect_spark.storage.kafka_offsets import KafkaOffsetStore
from connect_spark.storage.offsets import OffsetsFenced, OffsetStoreError, encode_key, encode_value
from connect_spark.storage.owner import OffsetOwner
from connect_spark.testing.kafka import create_topic

# The data topics whose offsets are stored: real topics, so that the consumer group commits succeed.
ORDERS = f"orders-{uuid.uuid4().hex[:6]}"
PAYMENTS = f"payments-{uuid.uuid4().hex[:6]}"
TP0 = TopicPartition(ORDERS, 0)
TP1 = TopicPartition(ORDERS, 1)
TP2 = TopicPartition(PAYMENTS, 2)


@pytest.fixture(scope="module", autouse=True)
def data_topics(bootstrap_servers):
    create_topic(bootstrap_servers, ORDERS, partitions=2)
    create_topic(bootstrap_servers, PAYMENTS, partitions=3)


@pytest.fixture
def offsets_topic(topic_name) -> str:
    return f"offsets-{topic_name}"


@pytest.fixture
def connector() -> str:
    return f"sink-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(bootstrap_servers):
    client = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="test-offset-stores")
    yield client
    client.close()


@pytest.fixture
def store(bootstrap_servers, offsets_topic):
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5, replication_factor=3) as s:
        yield s


def raw_records(bootstrap_servers: str, topic: str) -> list:
    """Every record of ``topic``, read with a plain consumer from the beginning to the end."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        tps = [KafkaTopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        records = []
        while any(consumer.position(tp) < end[tp] for tp in tps):
            for batch in consumer.poll(timeout_ms=1000).values():
                records.extend(batch)
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def test_topic_is_created_compacted_with_the_requested_partitions(store, admin, offsets_topic):
    (described,) = admin.describe_topics([offsets_topic])
    assert len(described["partitions"]) == 5
    assert all(len(p["replica_nodes"]) == 1 for p in described["partitions"])  # RF 3 lowered: one broker
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, offsets_topic)], config_filter="all")
    assert configs["topic"][offsets_topic]["cleanup.policy"]["value"] == "compact"


def test_lowering_the_replication_factor_is_logged(bootstrap_servers, offsets_topic, caplog):
    with caplog.at_level(logging.WARNING, logger="connect_spark.storage"):
        with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=1, replication_factor=3):
            pass
    assert any("replication factor 1 instead of 3" in r.getMessage() for r in caplog.records)


def test_broker_default_replication_factor(bootstrap_servers, offsets_topic, admin):
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=2, replication_factor=-1) as store:
        store.write("c", {TP0: 1})
        assert store.read("c") == {TP0: 1}
    (described,) = admin.describe_topics([offsets_topic])
    assert len(described["partitions"]) == 2


def test_existing_topic_that_is_not_compacted_is_refused(bootstrap_servers, offsets_topic):
    create_topic(bootstrap_servers, offsets_topic, partitions=1, config={"cleanup.policy": "delete"})
    store = KafkaOffsetStore(bootstrap_servers, topic=offsets_topic)
    with pytest.raises(ConfigException, match="cleanup.policy=compact"):
        store.start()
    with pytest.raises(OffsetStoreError, match="not started"):
        store.read("c")


def test_existing_compacted_topic_is_used_as_it_is(bootstrap_servers, offsets_topic, admin):
    create_topic(bootstrap_servers, offsets_topic, partitions=3, config={"cleanup.policy": "compact"})
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=25) as store:
        store.write("c", {TP0: 9})
        assert store.read("c") == {TP0: 9}
    (described,) = admin.describe_topics([offsets_topic])
    assert len(described["partitions"]) == 3


def test_write_then_read(store, connector):
    assert store.read(connector) == {}
    store.write(connector, {TP0: 10, TP1: 20, TP2: 0})
    assert store.read(connector) == {TP0: 10, TP1: 20, TP2: 0}
    store.write(connector, {TP0: 15})
    assert store.read(connector) == {TP0: 15, TP1: 20, TP2: 0}
    store.write(connector, {})  # nothing to do
    assert store.read(connector) == {TP0: 15, TP1: 20, TP2: 0}


def test_a_new_store_reads_what_an_earlier_one_wrote(bootstrap_servers, offsets_topic, connector):
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as first:
        first.write(connector, {TP0: 1, TP1: 2})
        first.write(connector, {TP0: 3})
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as second:
        assert second.read(connector) == {TP0: 3, TP1: 2}


def test_a_store_sees_what_another_store_writes_later(bootstrap_servers, offsets_topic, connector):
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as reader:
        assert reader.read(connector) == {}
        with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as writer:
            writer.write(connector, {TP2: 77})
        assert reader.read(connector) == {TP2: 77}


def test_reset_via_none(store, bootstrap_servers, offsets_topic, connector):
    store.write(connector, {TP0: 10, TP1: 20})
    store.write(connector, {TP0: None})
    assert store.read(connector) == {TP1: 20}
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as again:
        assert again.read(connector) == {TP1: 20}
    store.write(connector, {TP1: None, TP2: None})  # TP2 never had an offset
    assert store.read(connector) == {}


def test_connectors_do_not_see_each_other(store, connector):
    other = connector + "-other"
    store.write(connector, {TP0: 1})
    store.write(other, {TP0: 2, TP1: 3})
    store.write(other, {TP1: None})
    assert store.read(connector) == {TP0: 1}
    assert store.read(other) == {TP0: 2}


def test_raw_records_have_connects_exact_json_bytes(store, bootstrap_servers, offsets_topic, connector):
    store.write(connector, {TP0: 4711})
    store.write(connector, {TP0: None})
    records = raw_records(bootstrap_servers, offsets_topic)
    key = f'["{connector}",{{"kafka_topic":"{ORDERS}","kafka_partition":0}}]'.encode()
    assert [(r.key, r.value) for r in records] == [(key, b'{"kafka_offset":4711}'), (key, None)]
    # Partitioned as the Java producer's default partitioner does it: murmur2 of the key bytes, made
    # positive, modulo the partition count. kafka-python's murmur2 gives Java's values (Kafka's UtilsTest).
    assert murmur2(b"21") - 2**32 == -973932308 and murmur2(b"abc") == 479470107
    expected_partition = (murmur2(key) & 0x7FFFFFFF) % 5
    assert {r.partition for r in records} == {expected_partition}


def test_consumer_group_mirrors_the_offsets(store, admin, bootstrap_servers, connector):
    group = f"connect-{connector}"
    store.write(connector, {TP0: 5, TP1: 6, TP2: 7})
    committed = admin.list_group_offsets(group)[group]
    assert {(tp.topic, tp.partition): om.offset for tp, om in committed.items()} == {
        (ORDERS, 0): 5, (ORDERS, 1): 6, (PAYMENTS, 2): 7}

    store.write(connector, {TP1: None, TP0: 8})
    committed = admin.list_group_offsets(group)[group]
    assert {(tp.topic, tp.partition): om.offset for tp, om in committed.items()} == {
        (ORDERS, 0): 8, (PAYMENTS, 2): 7}

    store.write(connector, {TP2: 9}, group_id=f"{group}-custom")
    assert {(tp.topic, tp.partition): om.offset
            for tp, om in admin.list_group_offsets(f"{group}-custom")[f"{group}-custom"].items()} == {(PAYMENTS, 2): 9}


def test_reset_of_a_group_that_never_existed_is_fine(store, connector, caplog):
    with caplog.at_level(logging.WARNING, logger="connect_spark.storage"):
        store.write(connector, {TP0: None})
    assert not [r for r in _store_records(caplog) if r.levelno >= logging.WARNING]
    assert store.read(connector) == {}


def test_group_commit_failure_only_warns(store, admin, connector, caplog):
    # A group with an active member refuses commits from outside (the case the store must survive).
    group = f"busy-{connector}"
    member = KafkaConsumer(ORDERS, bootstrap_servers=store.bootstrap_servers, group_id=group,
                           enable_auto_commit=False, session_timeout_ms=10000)
    try:
        for _ in range(100):
            member.poll(timeout_ms=100)
            if admin.describe_groups([group])[group].get("members"):
                break
        assert admin.describe_groups([group])[group].get("members")
        with caplog.at_level(logging.WARNING, logger="connect_spark.storage"):
            store.write(connector, {TP0: 3}, group_id=group)
        assert any("consumer group" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    finally:
        member.close(autocommit=False)
    assert store.read(connector) == {TP0: 3}  # the topic write stands


def test_foreign_records_are_skipped_with_a_warning(store, bootstrap_servers, offsets_topic, connector, caplog):
    store.write(connector, {TP0: 1})
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, acks="all")
    try:
        for key, value in [
            (f'["{connector}",{{"filename":"a.txt"}}]'.encode(), b'{"position":30}'),  # a source connector's
            (b"not json", b"{}"),
            (f'["{connector}",{{"kafka_topic":"{ORDERS}","kafka_partition":1}}]'.encode(), b'{"offset":1}'),
            (f'["{connector}",{{"kafka_topic":"{ORDERS}","kafka_partition":"1"}}]'.encode(), b'{"kafka_offset":"12"}'),
        ]:
            producer.send(offsets_topic, key=key, value=value, partition=0)
        producer.flush()
    finally:
        producer.close()
    with caplog.at_level(logging.WARNING, logger="connect_spark.storage"):
        assert store.read(connector) == {TP0: 1, TP1: 12}  # string partition and offset accepted
    warnings = [r.getMessage() for r in _store_records(caplog) if r.levelno == logging.WARNING]
    assert len(warnings) == 3  # (a compacted topic refuses null keys, so there are none to skip)
    assert all(f"{offsets_topic}[0]@" in w for w in warnings)
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5) as again:
        assert again.read(connector) == {TP0: 1, TP1: 12}


def test_many_foreign_records_do_not_flood_the_log(store, bootstrap_servers, offsets_topic, caplog):
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, acks="all")
    try:
        for n in range(25):
            producer.send(offsets_topic, key=f'["src",{{"file":"f{n}"}}]'.encode(), value=b'{"pos":1}')
        producer.flush()
    finally:
        producer.close()
    with caplog.at_level(logging.DEBUG, logger="connect_spark.storage"):
        assert store.read("src") == {}
    skipped = [r for r in caplog.records if r.getMessage().startswith("Skipping record")]
    assert len(skipped) == 25
    assert [r.levelno for r in skipped].count(logging.WARNING) == 10
    assert "further skipped records are logged at DEBUG" in skipped[9].getMessage()


def test_invalid_offsets_are_refused_before_anything_is_written(store, bootstrap_servers, offsets_topic):
    with pytest.raises(OffsetStoreError):
        store.write("c", {TP0: 1, TP1: -5})
    assert raw_records(bootstrap_servers, offsets_topic) == []


def test_unreachable_cluster(offsets_topic):
    from connect_spark.localkafka import free_port

    store = KafkaOffsetStore(f"127.0.0.1:{free_port()}", topic=offsets_topic,
                             client_config={"request.timeout.ms": "2000"}, timeout_s=3)
    with pytest.raises(OffsetStoreError, match="Cannot use the offsets topic"):
        store.start()


# -- client settings (pure logic; kept here with the store that uses them) ------------------------------


def test_client_settings_translation(caplog, tmp_path):
    from connect_spark.testing.tls import make_tls_material

    tls = make_tls_material(tmp_path / "tls")
    config = {
        "bootstrap.servers": "ignored:9092",
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="svc" password="s3cr\\"et";',
        "ssl.truststore.location": str(tls.ca_pem),
        "ssl.keystore.location": str(tls.client_keystore("p12")),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.password": tls.store_password,
        "ssl.endpoint.identification.algorithm": "",
        "request.timeout.ms": "5000",
        "some.unknown.key": "unknown-secret-value",
    }
    with caplog.at_level(logging.DEBUG, logger="connect_spark.kafka"):
        kwargs = kafka_client_kwargs(config)
    context = kwargs.pop("ssl_context")
    assert kwargs == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": 's3cr"et',
        "request_timeout_ms": 5000,
    }
    assert context.check_hostname is False and context.cert_store_stats()["x509_ca"] == 1
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "some.unknown.key" in logged and "ssl.keystore.password" not in logged
    assert "s3cr" not in logged and tls.store_password not in logged and "unknown-secret-value" not in logged


def test_client_settings_for_a_class_and_passwords():
    from connect_spark.config.definition import Password

    config = {"sasl.jaas.config": Password(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username=u password="p";'),
        "ssl.keystore.location": "/k.pem", "ssl.key.password": Password("kp")}
    # PLAINTEXT: the ssl.* keys are ignored, as Kafka ignores them.
    kwargs = kafka_client_kwargs(config, KafkaAdminClient)
    assert kwargs == {"sasl_plain_username": "u", "sasl_plain_password": "p"}
    with pytest.raises(ConfigException) as info:
        kafka_client_kwargs({"sasl.jaas.config": "username=x password=secret"})
    assert "secret" not in str(info.value)


def test_parse_jaas_config():
    module, options = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule  required\n username="a b" password=c;')
    assert module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert options == {"username": "a b", "password": "c"}
    with pytest.raises(ValueError):
        parse_jaas_config('x.Module required username="a" garbage;')


def _store_records(caplog):
    """What the store logged; not kafka-python's own warnings (a slow poll on a busy machine logs one)."""
    return [r for r in caplog.records if r.name.startswith("connect_spark.storage")]


# -- claims: the broker fences every writer but the last one to claim a connector's offsets ----------------


def test_a_later_claim_fences_the_earlier_one_at_the_broker(store, connector):
    first = store.claim(connector)
    first.write({TP0: 10})
    second = store.claim(connector)  # another worker took the connector over
    try:
        second.write({TP0: 20})
        with pytest.raises(OffsetsFenced):
            first.write({TP0: 15})  # the zombie: refused by the broker, not by a local check
        assert first.fenced
        with pytest.raises(OffsetsFenced):
            first.write({TP1: 3})
        second.write({TP0: 25})
    finally:
        first.release()
        second.release()
    assert store.read(connector) == {TP0: 25}


def test_a_zombie_resumed_inside_its_transaction_is_named_fenced_when_the_epoch_bump_answers_late(
        store, connector, monkeypatch):
    """A worker frozen inside a write, after its transaction reached the broker: once resumed, its next record is
    refused with INVALID_PRODUCER_EPOCH, on which kafka-python starts an epoch bump in the background. On a busy
    machine the bump's own refusal (PRODUCER_FENCED) comes after the commit was asked for, so the commit fails
    with an "invalid transition" that names no fence. The refused record must still tell the claim it is fenced."""
    from connect_spark.testing.kafka import answer_epoch_bumps_late

    first = store.claim(connector)
    first.write({TP0: 10})
    producer = first._producer  # frozen inside a write: its transaction began and holds a record
    producer.begin_transaction()
    producer.send(store.topic, key=encode_key(connector, TP0), value=encode_value(12))
    producer.flush()
    second = store.claim(connector)  # another worker took the connector over meanwhile
    answer_epoch_bumps_late(monkeypatch)
    monkeypatch.setattr(producer, "begin_transaction", lambda: None)  # resumed: the write goes on where it was
    try:
        with pytest.raises(OffsetsFenced, match="were claimed by another worker"):
            first.write({TP0: 15})
        assert first.fenced
        second.write({TP0: 20})
    finally:
        first.release()
        second.release()
    assert store.read(connector) == {TP0: 20}


def test_a_claim_aborts_the_transaction_an_earlier_holder_left_open(store, connector):
    """A worker frozen in the middle of a commit: its records never become readable, and readers are not held up
    once the next owner claimed the offsets."""
    first = store.claim(connector)
    first.write({TP0: 10})
    producer = first._producer  # the test freezes the commit between its send and its commit
    producer.begin_transaction()
    producer.send(store.topic, key=encode_key(connector, TP0), value=encode_value(5))
    producer.flush()
    second = store.claim(connector)
    try:
        assert store.read(connector) == {TP0: 10}
        with pytest.raises(KafkaError) as woken:
            producer.commit_transaction()  # waking up: the commit it was in the middle of is refused
        assert "ProducerFenced" in repr(woken.value)
        second.write({TP0: 12})
        assert store.read(connector) == {TP0: 12}
    finally:
        first.release()
        second.release()


def test_a_one_off_write_of_the_owner_fences_a_claim_and_reads_are_read_committed(bootstrap_servers, offsets_topic,
                                                                                    connector):
    owner = OffsetOwner(KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, partitions=5))
    with owner:
        held = owner.claim(connector)
        held.write({TP0: 7})
        held.release()
        zombie = owner.store.claim(connector)  # what a frozen worker still holds
        owner.write(connector, {TP0: 9})  # PATCH .../offsets: a claim of its own
        with pytest.raises(OffsetsFenced):
            zombie.write({TP0: 1})
        zombie.release()
        assert owner.read(connector) == {TP0: 9}
