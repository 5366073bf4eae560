"""Real-time mode's commits from the executor, against a real broker (no Spark): one transaction per commit to
connect-offsets and the consumer group, a newer attempt fencing the older one, re-reads of a partition."""

from __future__ import annotations

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.realtime.commits import CommitFenced, FencedCommitter, group_offset, transactional_ids
from connect_spark.runtime.realtime.rows import read_range
from connect_spark.storage.kafka_offsets import KafkaOffsetStore
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.waiting import wait_for


@pytest.fixture
def store(bootstrap_servers):
    offsets = KafkaOffsetStore(bootstrap_servers, "connect-offsets", 5, 1)
    offsets.start()
    yield offsets
    offsets.stop()


def _committer(bootstrap_servers, connector, tp):
    return FencedCommitter(connector, tp, "connect-offsets", f"connect-{connector}",
                           {"bootstrap_servers": bootstrap_servers})


def test_a_commit_writes_the_offset_store_and_the_group_together(bootstrap_servers, topic_name, store):
    create_topic(bootstrap_servers, topic_name, 2)
    tp = TopicPartition(topic_name, 1)
    connector = f"c-{topic_name}"
    committer = _committer(bootstrap_servers, connector, tp)
    try:
        committer.commit({tp: 17})
        committer.commit({tp: 42})
    finally:
        committer.close()
    wait_for(lambda: store.read(connector) == {tp: 42}, timeout=10, what="the offset store's commit")
    assert group_offset({"bootstrap_servers": bootstrap_servers}, f"connect-{connector}", tp) == 42


def test_a_newer_attempt_fences_the_older_one_which_commits_nothing_more(bootstrap_servers, topic_name, store):
    create_topic(bootstrap_servers, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    connector = f"c-{topic_name}"
    older = _committer(bootstrap_servers, connector, tp)
    older.commit({tp: 10})
    newer = _committer(bootstrap_servers, connector, tp)
    try:
        newer.commit({tp: 20})
        with pytest.raises(CommitFenced):
            older.commit({tp: 15})  # an attempt Spark gave up on, still running
        assert older.fenced
        with pytest.raises(CommitFenced):
            older.commit({tp: 16})
        newer.commit({tp: 25})
    finally:
        older.close()
        newer.close()
    wait_for(lambda: store.read(connector) == {tp: 25}, timeout=10, what="the newer attempt's commit")
    assert group_offset({"bootstrap_servers": bootstrap_servers}, f"connect-{connector}", tp) == 25



def test_an_older_attempt_resumed_inside_its_commit_is_fenced_when_the_epoch_bump_answers_late(
        bootstrap_servers, topic_name, store, monkeypatch):
    """An attempt paused inside a commit, after its transaction reached the broker, while a newer attempt started:
    once resumed, its record is refused with INVALID_PRODUCER_EPOCH and kafka-python starts an epoch bump in the
    background. Even when the bump's own refusal comes late (a busy executor), the commit's request to add the
    group's offsets is refused as fenced first: the attempt is told it is fenced, not a plain failure it would
    retry with its next commit (the offset store's claim, which adds no group offsets, checks its records)."""
    from connect_spark.storage.offsets import encode_key, encode_value
    from connect_spark.testing.kafka import answer_epoch_bumps_late

    create_topic(bootstrap_servers, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    connector = f"c-{topic_name}"
    older = _committer(bootstrap_servers, connector, tp)
    older.commit({tp: 10})
    producer = older._producer  # paused inside a commit: its transaction began and holds a record
    producer.begin_transaction()
    producer.send("connect-offsets", key=encode_key(connector, tp), value=encode_value(12))
    producer.flush()
    newer = _committer(bootstrap_servers, connector, tp)
    try:
        newer.commit({tp: 20})
        answer_epoch_bumps_late(monkeypatch)
        monkeypatch.setattr(producer, "begin_transaction", lambda: None)  # resumed where it was
        with pytest.raises(CommitFenced):
            older.commit({tp: 15})
        assert older.fenced
        newer.commit({tp: 25})
    finally:
        older.close()
        newer.close()
    wait_for(lambda: store.read(connector) == {tp: 25}, timeout=10, what="the newer attempt's commit")

def test_a_group_without_offsets_reads_as_none(bootstrap_servers, topic_name):
    assert group_offset({"bootstrap_servers": bootstrap_servers}, f"connect-none-{topic_name}",
                        TopicPartition(topic_name, 0)) is None


def test_read_range_returns_the_partitions_records_between_two_offsets(bootstrap_servers, topic_name):
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, [(i % 2, f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")], None)
                                            for i in range(20)])
    rows = read_range({"bootstrap_servers": bootstrap_servers}, TopicPartition(topic_name, 1), 3, 7)
    assert [(r[1], r[2], r[6]) for r in rows] == [(1, o, f"v{2 * o + 1}".encode()) for o in range(3, 7)]
    assert rows[0][7] == [("h", b"x")]


def test_the_next_owner_of_the_connector_fences_the_partitions_commits_when_it_claims_the_offsets(
        bootstrap_servers, topic_name, store):
    """Executors still running real-time tasks for a worker that lost the connector: the worker given the
    connector fences every partition's transactional id before its query starts, so they commit nothing more."""
    create_topic(bootstrap_servers, topic_name, 2)
    tps = [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
    connector = f"c-{topic_name}"
    stale = _committer(bootstrap_servers, connector, tps[0])
    try:
        stale.commit({tps[0]: 10})
        claim = store.claim(connector, transactional_ids(connector, tps))  # the next owner starts the connector
        try:
            with pytest.raises(CommitFenced):
                stale.commit({tps[0]: 12})
            claim.write({tps[0]: 11})
        finally:
            claim.release()
    finally:
        stale.close()
    wait_for(lambda: store.read(connector) == {tps[0]: 11}, timeout=10, what="the next owner's commit")
