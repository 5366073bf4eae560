"""reused_columns: built once per key (and JVM), the least recently used entries dropped past the bound."""

from connect_spark.columnar.reused_columns import MAX_ENTRIES, reused_columns


def test_built_once_per_key_then_returned_as_is():
    built = []

    def build(name):
        def make():
            built.append(name)
            return [name]
        return make

    first = reused_columns(("test", "a"), build("a"))
    assert reused_columns(("test", "a"), build("a")) is first
    assert reused_columns(("test", "b"), build("b")) == ["b"]
    assert built == ["a", "b"]


def test_a_failed_build_is_not_kept():
    tries = []

    def fail():
        tries.append(1)
        raise ValueError("clash")

    for _ in range(2):
        try:
            reused_columns(("test", "fails"), fail)
        except ValueError:
            pass
    assert len(tries) == 2


def test_bounded_least_recently_used_first():
    keep = reused_columns(("test", "kept"), lambda: "kept")
    for i in range(MAX_ENTRIES):
        reused_columns(("test", "filler", i), lambda: i)
        if i % 10 == 0:
            assert reused_columns(("test", "kept"), lambda: "rebuilt") is keep  # used: moves to the back
    assert reused_columns(("test", "filler", 0), lambda: "rebuilt") == "rebuilt"  # the oldest was dropped
