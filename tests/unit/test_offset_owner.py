"""Every offset write of a worker goes through its OffsetOwner: a runner's claim, one-off writes, the fence check."""

import pytest

from connect_spark.api.records import TopicPartition
from connect_spark.storage.file_offsets import FileOffsetStore
from connect_spark.storage.offsets import OffsetClaim, OffsetsFenced
from connect_spark.storage.owner import OffsetOwner

TP = TopicPartition("t", 0)


class _CountingStore(FileOffsetStore):
    """A file store that counts the claims made of it (a Kafka store's claim fences the ones before)."""

    def __init__(self, path):
        super().__init__(path)
        self.claims: list[OffsetClaim] = []

    def claim(self, connector, also_fence=()):
        claim = super().claim(connector, also_fence)
        self.claims.append(claim)
        return claim


def test_commits_pass_while_a_member_and_are_refused_once_fenced(tmp_path):
    fenced = [False]
    owner = OffsetOwner(_CountingStore(tmp_path / "offsets.json"), lambda: fenced[0], "127.0.0.1:8083")
    with owner:
        held = owner.claim("c")
        held.write({TP: 5})
        fenced[0] = True
        with pytest.raises(OffsetsFenced, match="lost its group membership"):
            held.write({TP: 3})
        with pytest.raises(OffsetsFenced):
            owner.write("c", {TP: 2})
        with pytest.raises(OffsetsFenced):
            owner.claim("c")
        assert owner.read("c") == {TP: 5}
        assert owner.refused == 3


def test_a_write_goes_through_the_claim_held_for_the_connector_or_a_claim_of_its_own(tmp_path):
    store = _CountingStore(tmp_path / "offsets.json")
    with OffsetOwner(store) as owner:
        held = owner.claim("c")
        owner.write("c", {TP: 1})  # while a runner holds the claim: through it, no new claim (which would fence it)
        assert len(store.claims) == 1
        held.release()
        owner.write("c", {TP: 2})  # a stopped connector (PATCH .../offsets): a claim for this write alone
        assert len(store.claims) == 2
        assert owner.read("c") == {TP: 2}


def test_a_second_claim_in_the_same_process_releases_the_first(tmp_path):
    store = _CountingStore(tmp_path / "offsets.json")
    with OffsetOwner(store) as owner:
        first = owner.claim("c")
        second = owner.claim("c")
        first.release()  # the late release of the first start does not drop the second start's claim
        owner.write("c", {TP: 4})
        assert len(store.claims) == 2
        second.release()
