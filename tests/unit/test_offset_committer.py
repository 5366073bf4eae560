"""The in-order background offset committer: order, merging, failures surfacing on the next commit, flush."""

from __future__ import annotations

import threading

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.storage.committer import OffsetCommitter
from connect_spark.storage.offsets import OffsetStoreError

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
WAIT = 10.0  # seconds: only ever reached when something is broken


class Store:
    """Records every write; a write can be held (to queue commits behind it) or made to fail."""

    def __init__(self) -> None:
        self.writes: list[dict] = []
        self.held: threading.Event | None = None
        self.entered = threading.Event()
        self.failures = 0  # how many of the next writes fail

    def write(self, offsets: dict) -> None:
        self.entered.set()
        if self.held is not None:
            assert self.held.wait(WAIT)
            self.held = None
        if self.failures:
            self.failures -= 1
            raise OSError("broker unreachable")
        self.writes.append(dict(offsets))


def test_commits_are_written_in_order_and_flush_waits_for_them():
    store, written = Store(), []
    committer = OffsetCommitter("c", store.write, written.append)
    committer.submit({A: 10})
    committer.flush(WAIT)
    committer.submit({A: 20, B: 5})
    committer.flush(WAIT)
    assert store.writes == [{A: 10}, {A: 20, B: 5}]
    assert written == store.writes
    committer.close(WAIT)


def test_commits_made_during_a_write_are_merged_into_the_next_one_later_offsets_winning():
    store = Store()
    store.held = threading.Event()
    committer = OffsetCommitter("c", store.write)
    committer.submit({A: 10})
    assert store.entered.wait(WAIT)  # the first write is in flight (held)
    committer.submit({A: 20, B: 5})
    committer.submit({B: 7, C: None})
    committer.submit({A: 15})  # a rewind: lower than before, still the latest word for A
    store.held.set()
    committer.flush(WAIT)
    assert store.writes == [{A: 10}, {A: 15, B: 7, C: None}]
    committer.close(WAIT)


def test_a_failed_write_surfaces_on_the_next_commit_and_is_retried_merged_with_it():
    store = Store()
    store.failures = 1
    committer = OffsetCommitter("c", store.write)
    committer.submit({A: 10, B: 3})
    assert committer.wait_settled(WAIT) and committer.failed
    assert store.writes == []
    with pytest.raises(OffsetStoreError, match="failed, retried with this one"):
        committer.submit({A: 20})
    committer.flush(WAIT)
    assert store.writes == [{A: 20, B: 3}]  # B's failed offset was not lost; A's newer one won
    committer.close(WAIT)


def test_flush_retries_a_failed_write_once_and_raises_when_it_fails_again():
    store = Store()
    store.failures = 1
    committer = OffsetCommitter("c", store.write)
    committer.submit({A: 10})
    assert committer.wait_settled(WAIT)
    committer.flush(WAIT)  # the retry succeeds
    assert store.writes == [{A: 10}]

    store.failures = 2
    committer.submit({A: 11})
    assert committer.wait_settled(WAIT)
    with pytest.raises(OffsetStoreError, match="Committing offsets of c failed"):
        committer.close(WAIT)
    assert store.writes == [{A: 10}]
    with pytest.raises(OffsetStoreError, match="closed"):
        committer.submit({A: 12})


def test_close_without_any_commit_returns_at_once():
    OffsetCommitter("c", Store().write).close(WAIT)



def test_committed_is_logged_when_the_write_is_acknowledged_not_when_handed_over(caplog):
    store = Store()
    store.held = threading.Event()
    committer = OffsetCommitter("c", store.write)
    caplog.set_level("INFO", logger="connect_spark.storage.committer")
    committer.submit({A: 10})
    assert store.entered.wait(WAIT)
    assert "committed offsets" not in caplog.text  # handed over, the write not yet acknowledged
    store.held.set()
    committer.flush(WAIT)
    assert "c: committed offsets t[0]@10" in caplog.text


def test_a_failed_write_is_not_logged_as_committed(caplog):
    store = Store()
    store.failures = 1
    committer = OffsetCommitter("c", store.write)
    caplog.set_level("INFO", logger="connect_spark.storage.committer")
    committer.submit({A: 10})
    assert committer.wait_settled(WAIT)
    assert "committed offsets" not in caplog.text
    committer.close(WAIT)  # the retry succeeds
    assert "c: committed offsets t[0]@10" in caplog.text
