"""The group leader's assignment: sticky, balanced, incremental, with connectors held for a departed worker."""

from connect_spark.herder.assignor import MemberState, assign


def members(*owned_sets):
    return [MemberState(f"m{i}", f"w{i}", f"http://w{i}", frozenset(o)) for i, o in enumerate(owned_sets)]


def test_new_connectors_spread_over_members_by_count():
    result = assign(members(set(), set(), set()), {f"c{i}": 1 for i in range(6)}, {})
    assert sorted(len(v) for v in result.connectors.values()) == [2, 2, 2]
    assert sorted(c for v in result.connectors.values() for c in v) == [f"c{i}" for i in range(6)]
    assert not any(result.revoked.values())


def test_owned_connectors_stay_and_a_new_one_goes_to_the_least_loaded():
    group = members({"a", "b"}, {"c"})
    result = assign(group, {"a": 1, "b": 1, "c": 1, "d": 1}, {})
    assert result.connectors == {"m0": ["a", "b"], "m1": ["c", "d"]}
    assert result.moved(group) == {"d": "m1"}


def test_a_joining_member_gets_the_surplus_in_two_rounds():
    names = {f"c{i}": 1 for i in range(6)}
    first = assign(members({"c0", "c1", "c2"}, {"c3", "c4", "c5"}, set()), names, {})
    revoked = [c for v in first.revoked.values() for c in v]
    assert len(revoked) == 2 and first.connectors["m2"] == []  # nobody runs a connector twice
    kept = [set(first.connectors["m0"]), set(first.connectors["m1"]), set()]
    second = assign(members(*kept), names, {})
    assert sorted(second.connectors["m2"]) == sorted(revoked)
    assert second.connectors["m0"] == sorted(kept[0]) and second.connectors["m1"] == sorted(kept[1])


def test_deleted_connectors_are_dropped_and_duplicates_revoked():
    result = assign(members({"a", "gone"}, {"a"}), {"a": 1}, {})
    assert result.connectors == {"m0": ["a"], "m1": []}
    assert result.revoked["m1"] == ["a"]


def test_held_connectors_wait_for_their_worker_or_go_back_to_it():
    group = members({"a"}, set())
    waiting = assign(group, {"a": 1, "b": 1}, {"b": "w9"})
    assert waiting.held == ["b"] and "b" not in sum(waiting.connectors.values(), [])
    back = assign(group, {"a": 1, "b": 1}, {"b": "w1"})
    assert back.connectors["m1"] == ["b"]


def test_weight_breaks_ties_between_members_with_as_many_connectors():
    result = assign(members({"heavy"}, {"light"}), {"heavy": 8, "light": 1, "new": 1}, {})
    assert result.connectors["m1"] == ["light", "new"]

