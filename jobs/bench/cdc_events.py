"""The change-data-capture benchmark's records: Debezium 3.6.1's PostgreSQL change events, as Kafka holds them.

Used by ``jobs/bench_cdc.py``. The source is a PostgreSQL table ``public.<table>`` of the database ``shop``,
captured by Debezium's PostgreSQL connector with ``topic.prefix=shop`` and ``REPLICA IDENTITY FULL`` (so the
``before`` of an update or a delete is the whole old row)::

    CREATE TABLE public.orders (id bigint PRIMARY KEY, customer text, status text, quantity integer,
                                unit_price double precision, total numeric(12,2), note text, updated_at timestamp)

Its key and value go through Kafka's JsonConverter with schemas (Debezium's usual JSON setup), so a value is
the schema (the envelope: ``before``/``after`` of ``shop.public.<table>.Value``, ``source`` of
``io.debezium.connector.postgresql.Source``, ``transaction``, ``op``, ``ts_ms``/``ts_us``/``ts_ns``; as
Debezium's ``TableSchemaBuilder``, ``SchemaFactory`` and ``PostgresSourceInfoStructMaker`` build it) and the
payload. ``numeric(12,2)`` is an ``org.apache.kafka.connect.data.Decimal`` of scale 2 with
``connect.decimal.precision=12`` (``decimal.handling.mode=precise``), written as base64 bytes; ``timestamp``
an ``io.debezium.time.MicroTimestamp`` (``time.precision.mode=adaptive``). Every change is a transaction of
its own (autocommit); a delete is followed by its tombstone; records are partitioned by key as Kafka's
producer does (murmur2 of the key bytes).

The stream (:class:`ChangeStream`): the table starts with ``rows`` rows (ids ``0 .. rows-1``, each at version
0); its ``hot_keys`` newest rows are the live hot set. Each block of ten changes holds eight updates, one
delete and one insert in a shuffled order: an update and a delete pick a random key of the hot set (a deleted
key leaves it), an insert adds the next new id to it. A row's columns are a function of its id and version
(:func:`row_values`, and :func:`spark_row_columns` for Spark), so the initial table, the events and the table
expected at the end (:meth:`ChangeStream.expected_versions`) agree by construction.

Two renderings of one change: :func:`render` (byte templates, fast enough for millions of records) and
:func:`reference_render` (Connect structs through connect_spark's JsonConverter, a port of Kafka's). The
benchmark checks that they agree byte for byte (:func:`check_rendering`) before producing anything.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from connect_spark.api.data import Decimal, Schema, SchemaBuilder, Struct
from connect_spark.api.data.logical import decimal_from_unscaled, unscaled_to_bytes

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["TOPIC_PREFIX", "DATABASE", "DEBEZIUM_VERSION", "Change", "ChangeStream", "ChangeTable",
           "row_values", "spark_row_columns", "render", "reference_render", "check_rendering", "key_partition",
           "TABLE_COLUMNS", "ROW_DDL", "SOURCE_DDL"]

TOPIC_PREFIX = "shop"
DATABASE = "shop"
SCHEMA = "public"
DEBEZIUM_VERSION = "3.6.1.Final"

#: The table's columns as Spark types, in the source table's order.
TABLE_COLUMNS = (("id", "bigint"), ("customer", "string"), ("status", "string"), ("quantity", "int"),
                 ("unit_price", "double"), ("total", "decimal(12,2)"), ("note", "string"),
                 ("updated_at", "timestamp_ntz"))
#: A row of the envelope's ``before``/``after`` as its JSON holds it (``from_json`` DDL): the Decimal is base64
#: text, the MicroTimestamp a number.
ROW_DDL = ("id BIGINT, customer STRING, status STRING, quantity INT, unit_price DOUBLE, total STRING, note STRING, "
           "updated_at BIGINT")
#: The envelope's ``source`` (``from_json`` DDL).
SOURCE_DDL = ("version STRING, connector STRING, name STRING, ts_ms BIGINT, snapshot STRING, db STRING, "
              "sequence STRING, ts_us BIGINT, ts_ns BIGINT, schema STRING, table STRING, txId BIGINT, lsn BIGINT, "
              "xmin BIGINT, origin STRING, origin_lsn BIGINT")

_STATUSES = ("pending", "paid", "shipped", "delivered", "cancelled")
_SNAPSHOT_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
#: 2026-01-05T00:00:00 (a local date-time, as Debezium writes a ``timestamp`` column: µs since the epoch)
_BASE_MICROS = 1_767_571_200_000_000
#: The first change's commit, µs since the epoch; changes are committed 40 µs apart.
_FIRST_COMMIT_MICROS = 1_767_657_600_000_000
_FIRST_TXID = 5_000
_FIRST_LSN = 40_000_000


def row_values(key: int, version: int) -> tuple[int, str, str, int, int, int, str, int]:
    """Row ``key`` at ``version``: ``(id, customer, status, quantity, unit_price in cents, total in cents, note,
    updated_at in µs)``. ``unit_price`` is the double ``cents / 100``; ``total`` the exact ``quantity × price``."""
    quantity = 1 + (key * 7 + version) % 20
    cents = 99 + (key * 13 + version * 7) % 99_900
    return (key, "customer-%05d" % (key % 20_000), _STATUSES[(key + version) % 5], quantity, cents,
            quantity * cents, "ref %07d/%d leave at the door" % (key, version),
            _BASE_MICROS + key * 1_000 + version * 60_000_000)


def spark_row_columns(key: "Column", version: "Column") -> list["Column"]:
    """:func:`row_values` as Spark columns named and typed as :data:`TABLE_COLUMNS` (``updated_at`` through
    ``timestamp_micros``: the session's time zone must be UTC)."""
    from decimal import Decimal as D

    from pyspark.sql import functions as F

    quantity = F.lit(1) + (key * 7 + version) % 20
    cents = F.lit(99) + (key * 13 + version * 7) % 99_900
    status = F.element_at(F.array(*map(F.lit, _STATUSES)), ((key + version) % 5 + 1).cast("int"))
    return [key.cast("bigint").alias("id"),
            F.format_string("customer-%05d", key % 20_000).alias("customer"),
            status.alias("status"),
            quantity.cast("int").alias("quantity"),
            (cents.cast("double") / F.lit(100.0)).alias("unit_price"),
            ((quantity * cents).cast("decimal(12,0)") * F.lit(D("0.01"))).cast("decimal(12,2)").alias("total"),
            F.format_string("ref %07d/%d leave at the door", key, version).alias("note"),
            F.timestamp_micros(F.lit(_BASE_MICROS) + key * 1_000 + version * 60_000_000)
            .cast("timestamp_ntz").alias("updated_at")]


@dataclass(frozen=True)
class Change:
    """One change event: ``op`` ``c``/``u``/``d``; the row's version before and after (``None``: no row)."""

    index: int
    op: str
    key: int
    before: int | None
    after: int | None

    @property
    def txid(self) -> int:
        return _FIRST_TXID + self.index

    @property
    def lsn(self) -> int:
        return _FIRST_LSN + 232 * self.index

    @property
    def last_commit_lsn(self) -> int:
        """The first half of ``source.sequence``: for a transaction of one change, Debezium's pgoutput stream
        reports the change's own LSN there."""
        return self.lsn

    @property
    def commit_micros(self) -> int:
        return _FIRST_COMMIT_MICROS + 40 * self.index

    @property
    def emitted_micros(self) -> int:
        """When Debezium processed the change (the envelope's ``ts_*``): 1.5 ms after its commit."""
        return self.commit_micros + 1_500


class ChangeStream:
    """The benchmark's changes (see the module docstring); iterate once, then read the expected end state.

    Args:
        rows: rows of the initial table (ids ``0 .. rows-1``, version 0).
        events: change events to generate (tombstones not counted).
        hot_keys: size of the hot set (the newest rows of the initial table).
        seed: the random generator's seed.
    """

    def __init__(self, rows: int, events: int, hot_keys: int, seed: int = 20_260_106) -> None:
        if not 0 < hot_keys <= rows:
            raise ValueError(f"hot_keys must be in 1..rows ({rows}), not {hot_keys}")
        self.rows, self.events, self.hot_keys = rows, events, hot_keys
        self._rng = random.Random(seed)
        self._hot: list[int] = list(range(rows - hot_keys, rows))
        self._slot: dict[int, int] = {k: i for i, k in enumerate(self._hot)}
        self._versions: dict[int, int] = {}  # rows changed so far (absent: version 0 or deleted)
        self._deleted: set[int] = set()
        self._next_id = rows
        self.counts = {"c": 0, "u": 0, "d": 0}
        self._done = False

    def __iter__(self) -> Iterator[Change]:
        if self._done:
            raise RuntimeError("a ChangeStream is iterated once")
        block: list[str] = []
        for index in range(self.events):
            if not block:
                block = list("uuuuuuuudc")
                self._rng.shuffle(block)
            op = block.pop()
            if op != "c" and not self._hot:  # everything hot was deleted: insert instead
                op = "c"
            yield self._apply(index, op)
        self._done = True

    def _apply(self, index: int, op: str) -> Change:
        self.counts[op] += 1
        if op == "c":
            key = self._next_id
            self._next_id += 1
            self._slot[key] = len(self._hot)
            self._hot.append(key)
            self._versions[key] = 0
            return Change(index, "c", key, None, 0)
        key = self._hot[self._rng.randrange(len(self._hot))]
        version = self._versions.get(key, 0)
        if op == "u":
            self._versions[key] = version + 1
            return Change(index, "u", key, version, version + 1)
        last = self._hot.pop()  # delete: swap the last hot key into the deleted key's slot
        slot = self._slot.pop(key)
        if last != key:
            self._hot[slot] = last
            self._slot[last] = slot
        self._versions.pop(key, None)
        self._deleted.add(key)
        return Change(index, "d", key, version, None)

    def expected_versions(self) -> tuple[list[int], list[int]]:
        """The table expected at the end, as ``(ids, versions)`` of its changed and inserted rows; every other
        initial row is there at version 0 unless deleted (:attr:`deleted`)."""
        if not self._done:
            raise RuntimeError("the stream has not been iterated yet")
        keys = sorted(self._versions)
        return keys, [self._versions[k] for k in keys]

    @property
    def deleted(self) -> frozenset[int]:
        return frozenset(self._deleted)


@dataclass(frozen=True)
class ChangeTable:
    """The Connect schemas of one captured table, as Debezium builds them, and their JSON forms."""

    name: str

    @property
    def topic(self) -> str:
        return f"{TOPIC_PREFIX}.{SCHEMA}.{self.name}"

    @property
    def key_schema(self) -> Schema:
        return SchemaBuilder.struct().name(f"{self.topic}.Key").field("id", Schema.INT64_SCHEMA).build()

    @property
    def row_schema(self) -> Schema:
        """``shop.public.<table>.Value``: the row, optional (a ``before`` or ``after`` may be null)."""
        return (SchemaBuilder.struct().name(f"{self.topic}.Value")
                .field("id", Schema.INT64_SCHEMA)
                .field("customer", Schema.OPTIONAL_STRING_SCHEMA)
                .field("status", Schema.OPTIONAL_STRING_SCHEMA)
                .field("quantity", Schema.OPTIONAL_INT32_SCHEMA)
                .field("unit_price", Schema.OPTIONAL_FLOAT64_SCHEMA)
                .field("total", Decimal.builder(2).parameter("connect.decimal.precision", "12").optional())
                .field("note", Schema.OPTIONAL_STRING_SCHEMA)
                .field("updated_at", SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1)
                       .optional())
                .optional().build())

    @property
    def source_schema(self) -> Schema:
        snapshot = (SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
                    .parameter("allowed", _SNAPSHOT_VALUES).default_value("false").optional())
        return (SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").version(1)
                .field("version", Schema.STRING_SCHEMA)
                .field("connector", Schema.STRING_SCHEMA)
                .field("name", Schema.STRING_SCHEMA)
                .field("ts_ms", Schema.INT64_SCHEMA)
                .field("snapshot", snapshot)
                .field("db", Schema.STRING_SCHEMA)
                .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
                .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
                .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
                .field("schema", Schema.STRING_SCHEMA)
                .field("table", Schema.STRING_SCHEMA)
                .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
                .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
                .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
                .field("origin", Schema.OPTIONAL_STRING_SCHEMA)
                .field("origin_lsn", Schema.OPTIONAL_INT64_SCHEMA)
                .build())

    @property
    def envelope_schema(self) -> Schema:
        transaction = (SchemaBuilder.struct().optional().name("event.block").version(1)
                       .field("id", Schema.STRING_SCHEMA)
                       .field("total_order", Schema.INT64_SCHEMA)
                       .field("data_collection_order", Schema.INT64_SCHEMA)
                       .build())
        row = self.row_schema
        return (SchemaBuilder.struct().version(2).name(f"{self.topic}.Envelope")
                .field("before", row).field("after", row)
                .field("source", self.source_schema)
                .field("transaction", transaction)
                .field("op", Schema.STRING_SCHEMA)
                .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
                .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
                .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
                .build())

    def templates(self) -> "_Templates":
        return _Templates.of(self)


def _converter(is_key: bool):
    from connect_spark.converters.json import JsonConverter

    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=is_key)
    return converter


@dataclass(frozen=True)
class _Templates:
    key_prefix: bytes
    value_prefix: bytes
    source_prefix: bytes

    @classmethod
    def of(cls, table: ChangeTable) -> "_Templates":
        import orjson

        key_schema = orjson.dumps(_converter(True).as_json_schema(table.key_schema))
        value_schema = orjson.dumps(_converter(False).as_json_schema(table.envelope_schema))
        source = (b'{"version":"%s","connector":"postgresql","name":"%s",'
                  % (DEBEZIUM_VERSION.encode(), TOPIC_PREFIX.encode()))
        return cls(b'{"schema":' + key_schema + b',"payload":{"id":',
                   b'{"schema":' + value_schema + b',"payload":{"before":', source)


def _row_json(key: int, version: int | None) -> bytes:
    if version is None:
        return b"null"
    _, customer, status, quantity, cents, total, note, micros = row_values(key, version)
    return (b'{"id":%d,"customer":"%s","status":"%s","quantity":%d,"unit_price":%s,"total":"%s","note":"%s",'
            b'"updated_at":%d}' % (key, customer.encode(), status.encode(), quantity, repr(cents / 100).encode(),
                                   base64.b64encode(unscaled_to_bytes(total)), note.encode(), micros))


def render(table: ChangeTable, templates: _Templates, change: Change) -> tuple[bytes, bytes]:
    """The key and value bytes of ``change`` (the tombstone after a delete is ``(key, None)``)."""
    commit, emitted = change.commit_micros, change.emitted_micros
    key = templates.key_prefix + b"%d}}" % change.key
    value = b"".join((
        templates.value_prefix, _row_json(change.key, change.before), b',"after":', _row_json(change.key, change.after),
        b',"source":', templates.source_prefix,
        b'"ts_ms":%d,"snapshot":"false","db":"%s","sequence":"[\\"%d\\",\\"%d\\"]","ts_us":%d,"ts_ns":%d,'
        b'"schema":"%s","table":"%s","txId":%d,"lsn":%d,"xmin":null,"origin":null,"origin_lsn":null}'
        % (commit // 1000, DATABASE.encode(), change.last_commit_lsn, change.lsn, commit, commit * 1000,
           SCHEMA.encode(), table.name.encode(), change.txid, change.lsn),
        b',"transaction":null,"op":"%s","ts_ms":%d,"ts_us":%d,"ts_ns":%d}}'
        % (change.op.encode(), emitted // 1000, emitted, emitted * 1000)))
    return key, value


def reference_render(table: ChangeTable, change: Change) -> tuple[bytes, bytes]:
    """:func:`render` built the way Debezium builds an event (Connect structs) and serialized by connect_spark's
    JsonConverter: the reference :func:`render` must equal."""
    envelope = table.envelope_schema
    row_schema = envelope.field("before").schema

    def row(version: int | None) -> Struct | None:
        if version is None:
            return None
        key, customer, status, quantity, cents, total, note, micros = row_values(change.key, version)
        return (Struct(row_schema).put("id", key).put("customer", customer).put("status", status)
                .put("quantity", quantity).put("unit_price", cents / 100)
                .put("total", decimal_from_unscaled(total, 2)).put("note", note).put("updated_at", micros))

    commit, emitted = change.commit_micros, change.emitted_micros
    source = (Struct(envelope.field("source").schema).put("version", DEBEZIUM_VERSION).put("connector", "postgresql")
              .put("name", TOPIC_PREFIX).put("ts_ms", commit // 1000).put("db", DATABASE)
              .put("sequence", '["%d","%d"]' % (change.last_commit_lsn, change.lsn))
              .put("ts_us", commit).put("ts_ns", commit * 1000).put("schema", SCHEMA).put("table", table.name)
              .put("txId", change.txid).put("lsn", change.lsn))  # snapshot: not set while streaming
    value = (Struct(envelope).put("before", row(change.before)).put("after", row(change.after)).put("source", source)
             .put("op", change.op).put("ts_ms", emitted // 1000).put("ts_us", emitted).put("ts_ns", emitted * 1000))
    key = Struct(table.key_schema).put("id", change.key)
    return (_converter(True).from_connect_data(table.topic, table.key_schema, key),
            _converter(False).from_connect_data(table.topic, envelope, value))


def check_rendering(table: ChangeTable, changes: list[Change]) -> None:
    """Raise ``AssertionError`` naming the first change whose :func:`render` differs from
    :func:`reference_render`."""
    templates = table.templates()
    for change in changes:
        fast, reference = render(table, templates, change), reference_render(table, change)
        if fast != reference:
            which = "key" if fast[0] != reference[0] else "value"
            a, b = (fast[0], reference[0]) if which == "key" else (fast[1], reference[1])
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            raise AssertionError(f"change {change} renders a {which} that is not the JsonConverter's at byte {at}: "
                                 f"...{a[max(0, at - 60):at + 60]!r} vs ...{b[max(0, at - 60):at + 60]!r}")


def key_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's producer picks for ``key`` (murmur2 of the key bytes, as Kafka Connect's
    producer partitions Debezium's records)."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions
