"""Debezium's ExtractNewRecordState in the vectorized plan gives the records the per-record transform gives.

Change events built with the data API (:class:`~connect_spark.transforms.debezium.envelope.Envelope`) and
written by Kafka's JsonConverter with schemas, as Debezium's connectors write them: snapshot reads, inserts,
updates (with and without ``before``), deletes followed by their tombstones, truncates, a heartbeat-like
record of another schema, rows with NULLs and with a column that has a default. Each delete handling mode
and ``add.fields`` run through ``ColumnarPlan.apply`` and through the per-record converter alone
(:func:`tests.integration.test_columnar_equivalence.run_both`), record by record, schemas included.
"""

from __future__ import annotations

import json
import random

import pytest

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.columnar.plan import compile_plan
from connect_spark.converters.json import JsonConverter
from connect_spark.transforms.debezium.envelope import TRANSACTION_BLOCK_SCHEMA, Envelope
from tests.integration.frame_batches import plan_connector, raw_row
from tests.integration.test_columnar_equivalence import run_both

TOPIC = "orders"
KEY = SchemaBuilder.struct().name("dbserver1.public.orders.Key").field("id", Schema.INT32_SCHEMA).build()
ROW = (SchemaBuilder.struct().name("dbserver1.public.orders.Value").optional()
       .field("id", Schema.INT32_SCHEMA)
       .field("name", Schema.OPTIONAL_STRING_SCHEMA)
       .field("qty", Schema.OPTIONAL_INT64_SCHEMA)
       .field("tier", SchemaBuilder.string().optional().default_value("basic").build())
       .build())
SOURCE = (SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
          .field("db", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
          .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).build())
EVENTS = Envelope.define("dbserver1.public.orders", ROW, SOURCE)
HEARTBEAT = SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field("ts_ms", Schema.INT64_SCHEMA).build()

BASE = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"}


def _json() -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true", "converter.type": "value"}, False)
    return converter


def _row(rnd: random.Random, id_: int) -> Struct:
    return (Struct(ROW).put("id", id_).put("name", rnd.choice(["a", "β", None, ""]))
            .put("qty", rnd.choice([None, 0, rnd.randint(-2**40, 2**40)]))
            .put("tier", rnd.choice(["gold", "basic"] * 5 + [None])))


def _change_events(seed: int) -> list[tuple]:
    """Raw rows of a stream of change events: every kind, in a random order, tombstones after deletes."""
    rnd = random.Random(seed)
    converter = _json()
    rows: list[tuple] = []
    live: dict[int, Struct] = {}

    def add(key_id: int | None, schema: Schema | None, value: Struct | None) -> None:
        key = None if key_id is None else converter.from_connect_data(TOPIC, KEY, Struct(KEY).put("id", key_id))
        data = None if value is None else converter.from_connect_data(TOPIC, schema, value)
        rows.append(raw_row(len(rows), data, key=key))

    for n in range(60):
        source = (Struct(SOURCE).put("db", "shop").put("table", "orders").put("ts_ms", 1_700_000_000_000 + n)
                  .put("lsn", rnd.choice([None, 1000 + n])))
        transaction = rnd.choice([None, Struct(TRANSACTION_BLOCK_SCHEMA).put("id", f"t{n}").put("total_order", n)
                                  .put("data_collection_order", 1)])
        roll = rnd.random()
        if roll < 0.25 or not live:
            id_ = rnd.randint(1, 40)
            live[id_] = _row(rnd, id_)
            kind = rnd.choice(["read", "create"])
            event = (EVENTS.read(live[id_], source, 5) if kind == "read"
                     else EVENTS.create(live[id_], source, 5, transaction))
            add(id_, EVENTS.schema, event)
        elif roll < 0.6:
            id_ = rnd.choice(sorted(live))
            after = _row(rnd, id_)
            add(id_, EVENTS.schema, EVENTS.update(rnd.choice([None, live[id_]]), after, source, 6, transaction))
            live[id_] = after
        elif roll < 0.85:
            id_ = rnd.choice(sorted(live))
            add(id_, EVENTS.schema, EVENTS.delete(live.pop(id_), source, 7, transaction))
            add(id_, None, None)  # the tombstone
        elif roll < 0.92:
            add(None, EVENTS.schema, EVENTS.truncate(source, 8))
        else:
            add(None, HEARTBEAT, Struct(HEARTBEAT).put("ts_ms", n))
    return rows


@pytest.mark.parametrize("mode", ["tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"])
def test_every_delete_handling_mode_matches_per_record(spark, tmp_path, mode):
    counts = run_both(spark, tmp_path, _change_events(7),
                      **BASE, **{"transforms.unwrap.delete.tombstone.handling.mode": mode})
    assert counts["expected"] > 0
    # the heartbeats' other schema and, when rewriting, rows whose null tier takes its default fall back
    assert counts["good"] >= counts["expected"] // 2, counts


@pytest.mark.parametrize("seed", [1, 2])
def test_added_fields_match_per_record(spark, tmp_path, seed):
    counts = run_both(spark, tmp_path, _change_events(seed), **BASE, **{
        "transforms.unwrap.add.fields": "op,table,lsn,source.ts_ms,ts_ms,transaction.id,missing",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite", "transforms.unwrap.replace.null.with.default": "false"})
    assert counts["good"] >= counts["expected"] // 2, counts


def test_legacy_keys_keeping_tombstones_match_per_record(spark, tmp_path):
    counts = run_both(spark, tmp_path, _change_events(3), **BASE, **{
        "transforms.unwrap.delete.handling.mode": "none", "transforms.unwrap.drop.tombstones": "false"})
    assert counts["expected"] > 0


def test_change_events_stay_in_the_plan(spark, tmp_path):
    """Only the rows the plan cannot hold fall back: here the heartbeats, of another schema than the batch's."""
    rows = _change_events(11)
    heartbeats = sum(1 for r in rows if r[6] is not None and b"Heartbeat" in r[6])
    counts = run_both(spark, tmp_path, rows, **BASE)
    assert counts["fallback"] == heartbeats, counts


@pytest.mark.parametrize("key", ["add.headers", "route.by.field", "drop.fields.header.name"])
def test_keys_without_a_column_form_run_the_chain_per_record(tmp_path, key):
    connector, worker = plan_connector(tmp_path, **BASE, **{f"transforms.unwrap.{key}": "op"})
    assert compile_plan(connector, worker) is None


DECIMAL_UNSCALED = [0, 1, -1, 127, 128, -128, -129, 255, 256, 12_345, -12_345, 2**31, -2**31, 2**63 - 1, -2**63,
                    2**63, 2**64, -2**64 - 1, 10**18, -(10**18), 10**37, -(10**37), 10**38 - 1, 10**38, -(10**38),
                    2**127 - 1, -2**127, 2**128]


@pytest.mark.parametrize("scale, precision", [(2, "12"), (0, None), (5, None), (-2, None)])
def test_decimal_payloads_match_per_record(spark, tmp_path, scale, precision):
    """Connect Decimals as Kafka's JsonConverter writes them (base64 two's complement), of every byte length up to
    17, in and out of the column's range, and texts the converter reads otherwise (a number, a padded or
    non-canonical base64, empty bytes): every row as per record, the in-range ones vectorized."""
    import base64

    from connect_spark.api.data.logical import unscaled_to_bytes

    amount = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "optional": True,
              "parameters": {"scale": str(scale), **({"connect.decimal.precision": precision} if precision else {})}}
    schema = {"type": "struct", "name": "shop.Row", "optional": False,
              "fields": [{"field": "id", "type": "int32", "optional": False}, {"field": "amount", **amount}]}
    texts = [f'"{base64.b64encode(unscaled_to_bytes(u)).decode()}"' for u in DECIMAL_UNSCALED]
    texts += ["null", "12.5", "7", '" AQ=="', '"AQ"', '""', '"!!"', '"AAE="', '"/w=="']
    rows = [raw_row(i, ('{"schema":' + json.dumps(schema, separators=(",", ":")) +
                        f',"payload":{{"id":{i},"amount":{text}}}}}').encode())
            for i, text in enumerate(texts)]
    counts = run_both(spark, tmp_path, rows, **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                                "key.converter": "org.apache.kafka.connect.json.JsonConverter"})
    limit = 10 ** (int(precision) if precision else 38) // 10 ** max(scale, 0) if scale >= 0 else 10 ** 38
    fits = sum(1 for u in DECIMAL_UNSCALED if abs(u) < limit * 10 ** max(scale, 0) and u.bit_length() < 128)
    assert counts["good"] >= fits, counts
