"""A worker that lost its group membership commits no offsets: FencedOffsetStore over a real file store."""

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.herder.fencing import FencedOffsetStore
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.storage.offsets import OffsetStoreError


def test_commits_pass_while_a_member_and_are_refused_once_fenced(tmp_path):
    inner = FileOffsetStore(str(tmp_path / "offsets.json"))
    inner.start()
    fenced = [False]
    store = FencedOffsetStore(inner, lambda: fenced[0], "127.0.0.1:8083")
    tp = TopicPartition("t", 0)
    store.write("c", {tp: 5})
    fenced[0] = True
    with pytest.raises(OffsetStoreError, match="lost its group membership"):
        store.write("c", {tp: 3})
    assert inner.read("c") == {tp: 5} and store.read("c") == {tp: 5}
    assert store.refused == 1
    inner.stop()
