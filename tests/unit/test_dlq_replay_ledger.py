"""DLQ replay bookkeeping without a JVM: the Delta ledger's replay positions, the letters a table holds,
which dead letters a run delivers, keeps or drops, the stored progress and the replay lease."""

import json

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.api.replay import DeadLetterBatch
from connect_spark.connectors.delta.ledger import StoredOffsets, replay_ledger_name
from connect_spark.connectors.delta.replay import held_records
from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.dlq_replay.letters import DeadLetter, LetterFilter, superseded_letters
from connect_spark.dlq_replay.progress import ReplayProgress
from connect_spark.dlq_replay.replay import (
    SKIP_NO_CONTEXT,
    SKIP_OVER_LIMIT,
    ReplayResult,
    check_options,
    plan_chunk,
)
from connect_spark.dlq_replay.replay_log import LeaseState, ReplayInProgressError, ReplayLog, fold_lease, lease_key
from connect_spark.status.log import MemoryLog


def test_replay_positions_round_trip_and_leave_the_kafka_offsets_alone():
    ledger = StoredOffsets(replay_ledger_name("c", "a-dlq"), {TopicPartition("a", 0): 7}, 3)
    after = ledger.replayed_to("a-dlq", {0: 12, 1: 4}).replayed_to("a-dlq", {0: 10, 1: 9})
    assert (after.offsets, after.replayed) == ({TopicPartition("a", 0): 7}, {"a-dlq": {0: 12, 1: 9}})
    assert after.app_id == "connect-spark:c.dlq-replay.a-dlq" and ledger.replayed == {}  # the earlier state stays
    parsed = StoredOffsets.from_metadata(after.to_metadata(), "c.dlq-replay.a-dlq")
    assert parsed == after
    assert StoredOffsets.from_metadata(after.to_metadata(), "c") is None  # the connector's own document is apart
    kept = after.advanced({TopicPartition("a", 0): 9})  # a later commit of the same ledger keeps the positions
    assert kept.replayed == {"a-dlq": {0: 12, 1: 9}} and kept.offsets == {TopicPartition("a", 0): 9}


def test_a_replay_commit_version_grows_with_new_letters_also_without_the_earlier_document():
    first = StoredOffsets("r").replayed_to("d", {0: 4, 1: 2})
    assert first.sequence == 6
    assert first.replayed_to("d", {0: 5, 1: 2}).sequence == 7  # a new letter: a version Delta accepts
    assert first.replayed_to("d", {0: 3, 1: 2}).sequence == 6  # nothing new: the same version, Delta skips it
    # built without reading the earlier document (a finished run before): still above the earlier version
    assert StoredOffsets("r").replayed_to("d", {0: 5, 1: 2}).sequence > first.sequence


def test_documents_without_replay_positions_parse_and_ordinary_commits_write_none():
    old = json.dumps({"connect_spark": {"v": 1, "connector": "c", "sequence": 2, "offsets": {"a": {"0": 5}}}})
    parsed = StoredOffsets.from_metadata(old, "c")
    assert parsed == StoredOffsets("c", {TopicPartition("a", 0): 5}, 2) and parsed.replayed == {}
    assert "replayed" not in json.loads(parsed.advanced({TopicPartition("a", 0): 6}).to_metadata())["connect_spark"]


def test_a_table_holds_the_letters_below_its_position_per_dead_letter_partition():
    batch = DeadLetterBatch("a-dlq", {0: 9, 1: 3}, {("a", 0, 7): (0, 2), ("a", 1, 4): (1, 2), ("b", 0, 1): (0, 8)})
    assert held_records(batch, {}) == []
    assert held_records(batch, {0: 3}) == [("a", 0, 7)]
    assert held_records(batch, {0: 9, 1: 3}) == [("a", 0, 7), ("a", 1, 4), ("b", 0, 1)]


def _letter(dlq_offset, offset, replays=0, topic="a", stage="TRANSFORMATION"):
    return DeadLetter(0, dlq_offset, b"k", b"v", 0, [], topic, 0, offset, stage,
                      "connect_spark.api.errors.DataException", replays)


def test_the_newest_letter_of_a_record_counts_then_the_filter_and_the_limit():
    letters = [_letter(0, 10), _letter(1, 11), _letter(2, 10, replays=1),  # record 10 failed again when replayed
               _letter(3, 11),  # record 11 written twice to the dead letter queue
               _letter(4, 12, topic="b"), _letter(5, 13, replays=3),
               DeadLetter(0, 6, None, None, 0, [], None, None, None, "UNKNOWN", "unknown")]
    superseded = superseded_letters([letters[:3], letters[3:]])
    assert superseded == {(0, 0), (0, 1)}
    result = ReplayResult()
    plan = plan_chunk(letters, ReplayProgress("d"), superseded, LetterFilter(topic="a"), 3, frozenset(), result)
    assert [(x.dlq_offset, x.offset) for x in plan.deliver] == [(2, 10), (3, 11)]
    assert [x.dlq_offset for x in plan.drop] == [0, 1]  # superseded: dealt with through the newer letter
    assert (result.superseded, result.filtered_out, result.over_limit, result.unrestorable) == (2, 1, 1, 1)
    # the newest wins whatever the reading order (several dead letter partitions)
    older, newer = _letter(0, 10), _letter(2, 10, replays=1)
    newer.dlq_partition = 1
    assert superseded_letters([[newer, older]]) == {(0, 0)}


def test_skip_drops_the_letters_over_the_limit_and_without_context_for_good_and_says_so():
    letters = [_letter(0, 10, replays=3), DeadLetter(0, 1, None, None, 0, [], None, None, None, "UNKNOWN", "x"),
               _letter(2, 11)]
    result = ReplayResult()
    plan = plan_chunk(letters, ReplayProgress("d"), set(), LetterFilter(), 3,
                      frozenset({SKIP_OVER_LIMIT, SKIP_NO_CONTEXT}), result)
    assert ([x.dlq_offset for x in plan.deliver], [x.dlq_offset for x in plan.drop]) == ([2], [0, 1])
    assert (result.dropped_over_limit, result.dropped_unrestorable) == (1, 1)
    assert (result.over_limit, result.unrestorable) == (0, 0)
    assert "dropped for good (--skip): 1 over the replay limit, 1 without context headers" in result.report(False)
    with pytest.raises(ConfigException, match="Invalid value 'everything' for configuration skip: allowed: over-limit"):
        check_options(3, ["everything"], 10)
    with pytest.raises(ConfigException, match="configuration chunk_size"):
        check_options(3, [], 0)


def test_letters_already_dealt_with_are_passed_over_and_kept_ones_hold_the_position():
    progress = ReplayProgress("d")
    # a first run keeps letters 0 and 3 (filtered out), delivers 1, 2, 4
    progress.handing_over({0: [1, 2, 4]})
    assert progress.maybe_in_sink(0, 2) and not progress.maybe_in_sink(0, 3)
    progress.dealt_with({0: [1, 2, 4]})
    assert (progress.position, progress.done, progress.in_flight) == ({}, {0: [(1, 3), (4, 5)]}, {})
    result = ReplayResult()
    plan = plan_chunk([_letter(o, 100 + o) for o in range(6)], progress, set(), LetterFilter(), 3, frozenset(), result)
    assert [x.dlq_offset for x in plan.deliver] == [0, 3, 5]  # the kept ones, and a new one; never 1, 2, 4 again
    progress.dealt_with({0: [0, 3, 5]})
    assert (progress.position, progress.done) == ({0: 6}, {})
    assert ReplayProgress.from_json(progress.to_json()) == progress


def test_in_flight_letters_stay_listed_until_dealt_with_and_survive_the_round_trip():
    progress = ReplayProgress("d", {0: 5})
    progress.handing_over({0: [5, 6, 9], 1: [0]})
    progress.dealt_with({0: [5]})
    assert progress.in_flight == {0: [(6, 7), (9, 10)], 1: [(0, 1)]} and progress.position == {0: 6}
    assert ReplayProgress.from_json(progress.to_json()) == progress
    with pytest.raises(ConnectException, match="unreadable"):
        ReplayProgress.from_json(b"{}")


def test_the_first_claim_written_holds_the_lease_until_released_or_expired():
    def claim(owner, at, ttl=100):
        return json.dumps({"owner": owner, "at_ms": at, "expires_ms": at + ttl}).encode()

    state = fold_lease(None, claim("a", 0))
    assert fold_lease(state, claim("b", 50)) == LeaseState("a", 100)  # held: b's claim loses
    assert fold_lease(state, claim("a", 50)) == LeaseState("a", 150)  # a renewal
    assert fold_lease(state, claim("b", 100)) == LeaseState("b", 200)  # expired: taken over
    assert fold_lease(state, json.dumps({"owner": "b", "released": True}).encode()) == state  # not b's to free
    assert fold_lease(state, json.dumps({"owner": "a", "released": True}).encode()) is None
    assert fold_lease(state, b"garbage") == state


def _claim(owner, at_ms, expires_ms):
    return lease_key("c"), json.dumps({"owner": owner, "at_ms": at_ms, "expires_ms": expires_ms}).encode()


def test_a_replay_log_refuses_a_held_lease_takes_an_expired_one_and_notices_when_it_loses_it():
    now = [10_000]
    log = MemoryLog()
    log.records.append(_claim("other", 9_000, 12_000))  # another replay holds the lease until 12 s
    replay_log = ReplayLog("c", log, ttl_ms=60_000, clock_ms=lambda: now[0])
    with replay_log:
        with pytest.raises(ReplayInProgressError, match=r"connector c is running \(other\)"):
            replay_log.claim()
        now[0] = 12_000  # it crashed: its lease expired
        replay_log.claim()
        assert replay_log.holder() == LeaseState(replay_log.owner, 72_000)
        replay_log.write_progress(ReplayProgress("d", {0: 3}))
        assert replay_log.progress() == ReplayProgress("d", {0: 3})
        now[0] = 72_000  # this one stalled past its lease, and another replay took it over
        log.send([_claim("third", 72_000, 132_000)])
        with pytest.raises(ReplayInProgressError, match="lost its lease"):
            replay_log.write_progress(ReplayProgress("d", {0: 5}))
        assert replay_log.progress() == ReplayProgress("d", {0: 3})
    assert replay_log.holder() == LeaseState("third", 132_000)  # its release did not free another's lease
