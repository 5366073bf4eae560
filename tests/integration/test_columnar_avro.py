"""The vectorized Avro step gives the records the per-record AvroConverter gives, on the same raw rows
(produced with confluent-kafka's AvroSerializer against the real registry), bad rows included."""

from __future__ import annotations

import datetime
import decimal
import json

from tests.integration.frame_batches import raw_row
from tests.integration.test_columnar_equivalence import run_both

SCHEMA = {
    "type": "record", "name": "Event", "namespace": "vec", "fields": [
        {"name": "id", "type": "long"},
        {"name": "small", "type": {"type": "int", "connect.type": "int16"}},
        {"name": "ratio", "type": "float"},
        {"name": "who", "type": {"type": "record", "name": "Who", "fields": [
            {"name": "name", "type": "string"}, {"name": "email", "type": ["null", "string"], "default": None}]}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "blob", "type": ["null", "bytes"], "default": None},
    ]}


def _event(i: int) -> dict:
    return {"id": i * 1_000_003, "small": i - 50, "ratio": i / 8, "who": {"name": f"w{i}", "email": None if i % 3 else "e"},
            "kind": "AB"[i % 2], "amount": decimal.Decimal(i * 7) / 1000,
            "at": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=i * 37),
            "at_us": 1_700_000_000_000_000 + i, "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
            "tags": [f"t{j}" for j in range(i % 4)], "attrs": {"x": i * 0.5, "n": None} if i % 2 else {},
            "blob": bytes([i % 256]) * (i % 3) if i % 5 else None}


def test_vectorized_avro_matches_the_per_record_converter(spark, schema_registry_url, work_dir):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": schema_registry_url})
    context = SerializationContext("orders", MessageField.VALUE)
    serialize = AvroSerializer(client, json.dumps(SCHEMA))
    other = AvroSerializer(client, json.dumps({"type": "record", "name": "Other", "fields": [
        {"name": "n", "type": "int"}]}))
    values: list[bytes | None] = [serialize(_event(i), context) for i in range(60)]
    good = values[1]
    values += [
        b"\x01" + good[1:],                         # wrong magic byte
        b"\x00" + (424242).to_bytes(4, "big") + good[5:],  # unknown id
        good[:9],                                   # truncated
        good + b"\x00",                             # a trailing byte: the per-record reader ignores it
        None,                                       # tombstone
        b"\x00\x00",                                # shorter than the header
        other({"n": 5}, context),                   # another writer schema: per record
        good.replace(b"w1", b"w\xff"),             # malformed UTF-8 in a string: U+FFFD per record, as Java
    ]
    rows = [raw_row(i, v) for i, v in enumerate(values)]
    counts = run_both(spark, work_dir, rows, **{"value.converter": "io.confluent.connect.avro.AvroConverter",
                                                "value.converter.schema.registry.url": schema_registry_url})
    assert counts["good"] >= 61  # the 60 events and the tombstone
    assert counts["fallback"] == len(rows) - counts["good"]
