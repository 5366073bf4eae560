"""A seeded generator of ill-shaped Kafka records, the kind real topics hold, for testing sinks.

``ill_shaped_records(seed, count)`` gives ``(key bytes, value bytes)`` pairs of schemaless JSON: mostly
objects ``{"id", "amount", "name", "tags", "meta"}``, with, at random (but the same for one seed):
fields whose type changes (a string, a boolean or an object where a number is usual), values that are
not objects (a bare number, a string, an array), null fields, tombstones, deep nesting, a field that
appears half-way (a schema upgrade), huge values (a 100 kB string, an integer beyond 64 bits), empty
values (``{}``, an empty string, no bytes at all), bytes that are not UTF-8 or not JSON, lone surrogates,
duplicate JSON keys, and keys that repeat, are null, or are not objects.

Used by ``tests/integration/test_bulk_corpus.py`` to check that every record ends up in exactly one place
(the sink or the dead letter queue) on every built-in bulk sink.
"""

from __future__ import annotations

import json
import random
from typing import Any, Iterator

__all__ = ["ill_shaped_records"]


def _deep(levels: int) -> Any:
    value: Any = {"leaf": 1}
    for _ in range(levels):
        value = {"n": value}
    return value


def _object(rng: random.Random, i: int, count: int) -> dict[str, Any]:
    value: dict[str, Any] = {"id": i, "amount": round(rng.uniform(0, 100), 2), "name": f"n{i}",
                             "tags": [f"t{rng.randrange(5)}"], "meta": {"a": rng.randrange(10)}}
    if i > count // 2:
        value["extra"] = rng.randrange(100)  # the schema upgrade: a field that appears half-way
    roll = rng.random()
    if roll < 0.05:
        value["amount"] = str(value["amount"])
    elif roll < 0.08:
        value["amount"] = rng.random() < 0.5
    elif roll < 0.10:
        value["amount"] = {"value": value["amount"]}
    elif roll < 0.12:
        value["amount"] = rng.randrange(1000)  # an integer among fractions: widens
    elif roll < 0.14:
        value["meta"] = [1, 2]
    elif roll < 0.16:
        value["meta"] = _deep(rng.choice((5, 80)))
    elif roll < 0.18:
        value["name"] = "x" * 100_000
    elif roll < 0.20:
        value["amount"] = 10 ** 30
    elif roll < 0.23:
        value["name"] = None
    elif roll < 0.25:
        value["tags"] = []
    elif roll < 0.27:
        value["tags"] = [1, "a"]
    elif roll < 0.29:
        value["meta"] = {}
    return value


def _value(rng: random.Random, i: int, count: int) -> bytes | None:
    roll = rng.random()
    if roll < 0.03:
        return None  # a tombstone
    if roll < 0.05:
        return b""
    if roll < 0.07:
        return b"\xff\xfe{\"id\": 1}"  # not UTF-8
    if roll < 0.09:
        return b"{oops"  # not JSON
    if roll < 0.11:
        return json.dumps(rng.randrange(100)).encode()  # a bare number
    if roll < 0.12:
        return b'"just a string"'
    if roll < 0.14:
        return json.dumps([1, 2, 3]).encode()
    if roll < 0.15:
        return b"{}"
    if roll < 0.16:
        return f'{{"id": {i}, "name": "\\ud800"}}'.encode()  # a lone surrogate, escaped
    if roll < 0.18:
        return f'{{"id": {i}, "id": {i + 1}, "amount": 1.5}}'.encode()  # duplicate JSON keys
    return json.dumps(_object(rng, i, count)).encode()


def _key(rng: random.Random) -> bytes | None:
    roll = rng.random()
    if roll < 0.03:
        return None
    if roll < 0.05:
        return b'{"id": null}'
    if roll < 0.07:
        return b"42"
    return json.dumps({"id": rng.randrange(15)}).encode()  # few ids: keys repeat


def ill_shaped_records(seed: int, count: int) -> Iterator[tuple[bytes | None, bytes | None]]:
    """``count`` (key, value) pairs; the same seed always gives the same records."""
    rng = random.Random(seed)
    for i in range(count):
        key, value = _key(rng), _value(rng, i, count)
        if key is None and value is None:
            key = b"null"  # Kafka clients refuse a record with neither
        yield key, value
