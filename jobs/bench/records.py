"""The benchmark's record: ~215 bytes of JSON with 11 fields, keyed by user.

The same shape feeds every arm; :data:`SPARK_SCHEMA_DDL` is its schema for ``from_json`` (arm a),
:data:`FIELD_NAMES` its fields in order (arm rj's column list) and ``ID_FIELD`` is the unique field the health checks count rows and duplicates by.
"""

from __future__ import annotations

import json

__all__ = ["SPARK_SCHEMA_DDL", "ID_FIELD", "FIELD_NAMES", "FIELD_COUNT", "record_key", "record_value"]

ID_FIELD = "id"

SPARK_SCHEMA_DDL = (
    "id BIGINT, user STRING, amount DOUBLE, currency STRING, status STRING, country STRING, "
    "device STRING, ts BIGINT, campaign STRING, score DOUBLE, note STRING"
)
FIELD_NAMES = tuple(column.split()[0] for column in SPARK_SCHEMA_DDL.split(","))
FIELD_COUNT = len(FIELD_NAMES)

_STATUSES = ("paid", "pending", "refunded", "failed")
_COUNTRIES = ("DE", "FR", "NL", "ES", "IT", "PL", "SE", "US")
_DEVICES = ("mobile", "desktop", "tablet")
_TEMPLATE = (
    '{{"id":{id},"user":"user-{user:05d}","amount":{amount:.2f},"currency":"EUR","status":"{status}",'
    '"country":"{country}","device":"{device}","ts":{ts},"campaign":"autumn-sale-2026",'
    '"score":{score:.6f},"note":"{note}"}}'
)
_NOTE = "benchmark-payload-" + "x" * 2


def record_key(i: int) -> bytes:
    """The record key: its user, so keys repeat (10,000 distinct)."""
    return b"user-%05d" % (i % 10_000)


def record_value(i: int, ts_ms: int = 1_700_000_000_000, odd_every: int = 0, odd_mix: bool = False) -> bytes:
    """The JSON value of record ``i`` (unique ``id`` = ``i``).

    ``odd_every`` > 0: every ``odd_every``-th record is written as another producer's serializer writes it:
    its keys in alphabetical order and ``amount`` a whole number written as an integer (``"amount":12``). Valid
    data that connect_spark's vectorized plan cannot prove (the keys' order refuses the text proof, and by its
    parsed shape ``amount`` is an integer where the batch's is a fraction), so those records are converted
    per record (``amount`` is a double in the table). With ``odd_mix``, half of them write ``amount`` as a
    string instead (``"amount":"12.5"``: a record of another type, for the dead letter queue, see
    :func:`dead_letter_ids`).
    """
    if odd_every and i % odd_every == 0:
        text = record_value(i, ts_ms)
        if odd_mix and (i // odd_every) % 2 == 0:
            start = text.index(b'"amount":') + len(b'"amount":')
            end = text.index(b",", start)
            return text[:start] + b'"12.5"' + text[end:]
        fields = json.loads(text)
        fields["amount"] = int(fields["amount"])
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
    return _TEMPLATE.format(
        id=i, user=i % 10_000, amount=(i % 100_000) * 0.37, status=_STATUSES[i % 4],
        country=_COUNTRIES[i % 8], device=_DEVICES[i % 3], ts=ts_ms + i, score=(i % 997) / 997,
        note=_NOTE,
    ).encode()


def dead_letter_ids(ids: range, odd_every: int) -> list[int]:
    """The ids among ``ids`` whose ``amount`` :func:`record_value` writes as a string with ``odd_mix``."""
    return [i for i in ids if i % odd_every == 0 and (i // odd_every) % 2 == 0]
