"""What a drain must leave in the offset store, for sinks that keep their own offsets."""

from connect_spark.api.records import TopicPartition
from connect_spark.testing.harness import offsets_after_drain

A, B, C = (TopicPartition("t", p) for p in range(3))


def test_every_partition_reaches_the_end_unless_the_sink_already_held_it():
    ends = {A: 10, B: 20, C: 30}
    committed_before = {A: 4, B: 15, C: 30}
    sink_held_before = {A: 7, B: 20, C: 30}  # B: a crash between the sink's commit and the store's
    assert offsets_after_drain(ends, committed_before, sink_held_before) == {A: 10, B: 15, C: 30}


def test_a_partition_the_store_never_held_stays_absent_when_the_sink_held_its_end():
    assert offsets_after_drain({A: 5, B: 6}, {}, {A: 5}) == {B: 6}
