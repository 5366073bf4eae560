"""DLQ replay bookkeeping without a JVM: the Delta ledger's replay positions, the letters a table holds,
and which dead letters a run chooses."""

import json

from connect_spark.api.records import TopicPartition
from connect_spark.api.replay import DeadLetterBatch
from connect_spark.connectors.delta.ledger import StoredOffsets, replay_ledger_name
from connect_spark.connectors.delta.replay import held_records
from connect_spark.dlq_replay.letters import DeadLetter, LetterFilter
from connect_spark.dlq_replay.replay import choose_letters


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
    result, chosen = choose_letters(letters, LetterFilter(topic="a"), max_replays=3)
    assert [(x.dlq_offset, x.offset) for x in chosen] == [(2, 10), (3, 11)]
    assert (result.superseded, result.filtered_out, result.over_limit, result.unrestorable) == (2, 1, 1, 1)
    assert result.groups == {("connect_spark.api.errors.DataException", "TRANSFORMATION"): 2}
    # the newest wins whatever the reading order (several dead letter partitions)
    _, chosen = choose_letters([_letter(2, 10, replays=1), _letter(0, 10)], LetterFilter(), max_replays=3)
    assert [x.dlq_offset for x in chosen] == [2]
