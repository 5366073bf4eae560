"""Confluent's AvroConverter through the real runtime: records produced with confluent-kafka's
AvroSerializer against a real registry (Apicurio, Confluent's API), read by a recording task and by
FileStreamSink."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from connect_spark.api.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connect_spark.api.records import TopicPartition
from connect_spark.converters.json import JsonConverter
from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_connect_data

ORDER_SCHEMA = {
    "type": "record", "name": "Order", "namespace": "shop", "doc": "An order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ]}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "sku", "type": "string"},
            {"name": "qty", "type": "int", "default": 1},
        ]}}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def _expected_schema() -> Schema:
    """What Confluent's AvroData makes of ORDER_SCHEMA (version 1 under <topic>-value), rule by rule."""
    customer = (SchemaBuilder.struct().name("shop.Customer")
                .field("name", Schema.STRING_SCHEMA)
                .field("email", SchemaBuilder.string().optional().build())  # ["null", T]: optional, default dropped
                .build())
    status = (SchemaBuilder.string().name("shop.Status")  # enum: string named by its full name
              .parameter("io.confluent.connect.avro.Enum", "shop.Status")
              .parameter("io.confluent.connect.avro.Enum.NEW", "NEW")
              .parameter("io.confluent.connect.avro.Enum.PAID", "PAID")
              .parameter("io.confluent.connect.avro.Enum.SHIPPED", "SHIPPED").build())
    amount = Decimal.builder(2).parameter("connect.decimal.precision", "12").build()
    item = (SchemaBuilder.struct().name("shop.Item")
            .field("sku", Schema.STRING_SCHEMA)
            .field("qty", SchemaBuilder.int32().parameter("io.confluent.connect.avro.field.default", "true")
                   .default_value(1).build())
            .build())
    return (SchemaBuilder.struct().name("shop.Order").version(1)
            .parameter("io.confluent.connect.avro.record.doc", "An order")
            .field("id", Schema.INT64_SCHEMA)
            .field("customer", customer)
            .field("status", status)
            .field("amount", amount)
            .field("created", Timestamp.SCHEMA)
            .field("items", SchemaBuilder.array(item).build())
            .field("note", SchemaBuilder.string().optional().build())
            .build())


def _orders(count: int) -> list[dict]:
    base = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
    return [{
        "id": i,
        "customer": {"name": f"c{i}", "email": None if i % 2 else f"c{i}@example.com"},
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "amount": decimal.Decimal(f"{i * 3}.{i % 100:02d}"),
        "created": base + datetime.timedelta(milliseconds=1234 * i),
        "items": [{"sku": f"s{j}", "qty": j + 1} for j in range(i % 3)],
        "note": None if i % 4 else f"note {i}",
    } for i in range(count)]


def _expected_struct(schema: Schema, order: dict) -> Struct:
    customer_schema = schema.field("customer").schema
    item_schema = schema.field("items").schema.value_schema
    customer = Struct(customer_schema).put("name", order["customer"]["name"]).put("email", order["customer"]["email"])
    items = [Struct(item_schema).put("sku", it["sku"]).put("qty", it["qty"]) for it in order["items"]]
    return (Struct(schema).put("id", order["id"]).put("customer", customer).put("status", order["status"])
            .put("amount", order["amount"]).put("created", order["created"]).put("items", items)
            .put("note", order["note"]))


def avro_serializer(registry_url: str, schema: dict):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

    return AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(schema))


def produce_avro(bootstrap_servers: str, registry_url: str, topic: str, schema: dict, values: list[dict]) -> list[bytes]:
    """Serialize with confluent-kafka's AvroSerializer (registering the schema) and produce; returns the bytes."""
    from confluent_kafka.serialization import MessageField, SerializationContext

    serialize = avro_serializer(registry_url, schema)
    payloads = [serialize(v, SerializationContext(topic, MessageField.VALUE)) for v in values]
    produce(bootstrap_servers, topic, [(0, None, p, []) for p in payloads])
    return payloads


def _avro_connector(name: str, topic: str, registry_url: str, **extra: str) -> dict[str, str]:
    return {"name": name, "topics": topic, "tasks.max": "1",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry_url, **extra}


@pytest.fixture
def orders_topic(bootstrap_servers, schema_registry_url, topic_name):
    create_topic(bootstrap_servers, topic_name, partitions=1)
    orders = _orders(12)
    produce_avro(bootstrap_servers, schema_registry_url, topic_name, ORDER_SCHEMA, orders)
    return topic_name, orders


def test_recording_task_receives_the_structs_avro_data_gives(spark, bootstrap_servers, schema_registry_url,
                                                             orders_topic, work_dir):
    topic, orders = orders_topic
    connector = _avro_connector("avro-recording", topic, schema_registry_url, **{
        "connector.class": "RecordingSink", "recording.dir": str(work_dir / "rec"), "recording.pickles": "true"})
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    assert result.committed == {TopicPartition(topic, 0): len(orders)}

    expected_schema = _expected_schema()
    received = read_recorded_connect_data(work_dir / "rec")
    assert len(received) == len(orders)
    for (_, _, value_schema, value), order in zip(received, orders):
        # field by field first, so a difference names the rule that broke
        for field in expected_schema.fields:
            got = value_schema.field(field.name)
            assert got is not None and got.schema == field.schema, field.name
        assert value_schema == expected_schema
        assert value == _expected_struct(expected_schema, order)


def test_file_sink_writes_the_same_lines_as_for_json_with_schemas(spark, bootstrap_servers, schema_registry_url,
                                                                  orders_topic, work_dir):
    topic, orders = orders_topic
    avro_file = work_dir / "avro.txt"
    connector = _avro_connector("avro-file", topic, schema_registry_url,
                                **{"connector.class": "FileStreamSink", "file": str(avro_file)})
    assert run_connector(connector, bootstrap_servers, work_dir / "a", spark=spark).exit_code == 0

    json_topic = topic + "-json"
    create_topic(bootstrap_servers, json_topic, partitions=1)
    envelope = JsonConverter()
    envelope.configure({"schemas.enable": "true"}, is_key=False)
    schema = _expected_schema()
    produce(bootstrap_servers, json_topic,
            [(0, None, envelope.from_connect_data(json_topic, schema, _expected_struct(schema, o)), []) for o in orders])
    json_file = work_dir / "json.txt"
    json_connector = {"name": "json-file", "connector.class": "FileStreamSink", "tasks.max": "1", "topics": json_topic,
                      "file": str(json_file), "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter.schemas.enable": "true"}
    assert run_connector(json_connector, bootstrap_servers, work_dir / "j", spark=spark).exit_code == 0

    avro_lines = avro_file.read_text().splitlines()
    assert len(avro_lines) == len(orders)
    assert avro_lines == json_file.read_text().splitlines()
    assert avro_lines[1].startswith("Struct{id=1,customer=Struct{name=c1},status=PAID,amount=3.01,")


def _read_topic(bootstrap_servers: str, topic: str, expected: int, timeout: float = 30.0) -> list:
    import time

    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records: list = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def test_delta_sink_with_one_percent_corrupted_records(spark, bootstrap_servers, schema_registry_url, topic_name,
                                                       work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=1)
    from confluent_kafka.serialization import MessageField, SerializationContext

    serialize = avro_serializer(schema_registry_url, ORDER_SCHEMA)
    orders = _orders(300)
    payloads = [serialize(o, SerializationContext(topic_name, MessageField.VALUE)) for o in orders]
    good = payloads[0]
    corrupted = {
        50: b"\x01" + good[1:],  # wrong magic byte
        150: b"\x00" + (987654).to_bytes(4, "big") + good[5:],  # an id the registry does not know
        250: good[:8],  # truncated payload
    }
    for offset, data in corrupted.items():
        payloads[offset] = data
    produce(bootstrap_servers, topic_name, [(0, None, p, []) for p in payloads])

    dlq = topic_name + "-dlq"
    table = work_dir / "orders"
    connector = _avro_connector("avro-delta", topic_name, schema_registry_url, **{
        "connector.class": "DeltaSink", "delta.table.path": str(table), "insert.mode": "append",
        "delta.column.offset": "kafka_offset",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"})
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark)
    assert result.exit_code == 0
    assert result.committed == {TopicPartition(topic_name, 0): 300}

    rows = spark.read.format("delta").load(str(table)).collect()
    assert sorted(r.kafka_offset for r in rows) == [i for i in range(300) if i not in corrupted]
    by_id = {r.id: r for r in rows}
    sample = by_id[4]
    assert (sample.customer.name, sample.status, sample.amount) == ("c4", "PAID", decimal.Decimal("12.04"))
    assert [item.sku for item in sample.items] == ["s0"]

    dead = _read_topic(bootstrap_servers, dlq, expected=3)
    assert sorted((r.value for r in dead), key=payloads.index) == [corrupted[o] for o in sorted(corrupted)]
    headers = [{k: v for k, v in r.headers} for r in dead]
    assert sorted(int(h["__connect.errors.offset"]) for h in headers) == sorted(corrupted)
    assert {h["__connect.errors.stage"] for h in headers} == {b"VALUE_CONVERTER"}
    assert {h["__connect.errors.class.name"] for h in headers} == {b"io.confluent.connect.avro.AvroConverter"}


V1 = {"type": "record", "name": "Customer", "namespace": "crm", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "legacy_code", "type": ["null", "string"], "default": None}]}
V2 = {"type": "record", "name": "Customer", "namespace": "crm", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "tier", "type": "string", "default": "basic"}]}  # legacy_code removed, tier added with a default


def test_schema_evolution_each_record_its_own_schema_and_delta_adds_the_column(
        spark, bootstrap_servers, schema_registry_url, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=1)
    produce_avro(bootstrap_servers, schema_registry_url, topic_name, V1,
                 [{"id": i, "name": f"n{i}", "legacy_code": f"L{i}"} for i in range(3)])
    produce_avro(bootstrap_servers, schema_registry_url, topic_name, V2,
                 [{"id": i, "name": f"n{i}", "tier": "gold"} for i in range(3, 6)])

    recording = _avro_connector("avro-evolution-rec", topic_name, schema_registry_url, **{
        "connector.class": "RecordingSink", "recording.dir": str(work_dir / "rec"), "recording.pickles": "true"})
    assert run_connector(recording, bootstrap_servers, work_dir / "r", spark=spark).exit_code == 0
    received = read_recorded_connect_data(work_dir / "rec")
    assert [schema.version for _, _, schema, _ in received] == [1, 1, 1, 2, 2, 2]
    assert [f.name for f in received[0][2].fields] == ["id", "name", "legacy_code"]
    assert [f.name for f in received[5][2].fields] == ["id", "name", "tier"]
    assert received[5][2].field("tier").schema.default_value == "basic"

    table = work_dir / "customers"
    delta = _avro_connector("avro-evolution-delta", topic_name, schema_registry_url, **{
        "connector.class": "DeltaSink", "delta.table.path": str(table), "insert.mode": "append",
        "auto.evolve": "true"})
    # v1 and v2 records in one micro-batch: the bulk path merges the two schemas of the frame
    assert run_connector(delta, bootstrap_servers, work_dir / "d", spark=spark).exit_code == 0
    got = spark.read.format("delta").load(str(table))
    assert {"id", "name", "legacy_code", "tier"} <= set(got.columns)
    rows = sorted((r.id, r.name, r.legacy_code, r.tier) for r in got.collect())
    assert [row[:3] for row in rows] == [(0, "n0", "L0"), (1, "n1", "L1"), (2, "n2", "L2"),
                                         (3, "n3", None), (4, "n4", None), (5, "n5", None)]
    assert [row[3] for row in rows[3:]] == ["gold"] * 3
    # a v1 record has no tier: in a frame merged with v2 it takes the field's default (as a column added with
    # that default would give it), written before v2 arrived it stays null
    assert {row[3] for row in rows[:3]} <= {None, "basic"}


class _RegistryGate:
    """A TCP forwarder in front of the registry that can be closed: while closed it accepts connections and
    drops them at once (counting them), so clients see the registry as unreachable."""

    def __init__(self, target_port: int) -> None:
        import socket
        import threading

        self.target_port = target_port
        self._open = True
        self.refused = 0
        self._connections: list = []
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port = self._server.getsockname()[1]
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._open:
                self.refused += 1
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.close()
                except OSError:
                    pass

    @property
    def open(self) -> bool:
        return self._open

    @open.setter
    def open(self, value: bool) -> None:
        """Closing also cuts the connections already made (clients keep them alive between requests)."""
        self._open = value
        if not value:
            connections, self._connections = self._connections, []
            for sock in connections:
                try:
                    sock.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._stopped = True
        self._server.close()


def test_registry_unreachable_mid_run_is_retried_nothing_lost_nothing_in_the_dlq(
        spark, bootstrap_servers, schema_registry, topic_name, work_dir):
    import threading
    import time

    from connect_spark.testing.recording import read_recorded_records

    create_topic(bootstrap_servers, topic_name, partitions=1)
    first = {"type": "record", "name": "A", "fields": [{"name": "n", "type": "int"}]}
    second = {"type": "record", "name": "A", "fields": [{"name": "n", "type": "int"},
                                                         {"name": "s", "type": "string", "default": ""}]}
    produce_avro(bootstrap_servers, schema_registry.url, topic_name, first, [{"n": i} for i in range(10)])
    produce_avro(bootstrap_servers, schema_registry.url, topic_name, second, [{"n": i, "s": "x"} for i in range(10, 20)])

    gate = _RegistryGate(schema_registry.port)
    gated_url = f"http://127.0.0.1:{gate.port}/apis/ccompat/v7"
    dlq = topic_name + "-dlq"
    out = work_dir / "rec"
    connector = _avro_connector("avro-outage", topic_name, gated_url, **{
        "connector.class": "RecordingSink", "recording.dir": str(out),
        "errors.tolerance": "all", "errors.retry.timeout": "120000", "errors.retry.delay.max.ms": "1000",
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1"})
    worker = worker_properties(bootstrap_servers, work_dir, max_offsets_per_trigger=5, trigger="300ms")

    def outage() -> None:
        deadline = time.monotonic() + 300
        while not read_recorded_records(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        gate.open = False  # schema A is known by now; schema B (from offset 10 on) is not
        while gate.refused < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        gate.open = True

    watcher = threading.Thread(target=outage, daemon=True)
    watcher.start()
    try:
        result = run_connector(connector, bootstrap_servers, work_dir, spark=spark, worker=worker)
    finally:
        watcher.join(30)
        gate.close()
    assert gate.refused >= 3, "the registry was never asked while unreachable"
    assert result.exit_code == 0
    assert result.committed == {TopicPartition(topic_name, 0): 20}
    assert sorted(r["offset"] for r in read_recorded_records(out)) == list(range(20))
    from connect_spark.testing.kafka import end_offsets

    assert sum(end_offsets(bootstrap_servers, dlq).values()) == 0


def test_json_schema_converter_reads_what_json_serializer_wrote(spark, bootstrap_servers, schema_registry_url,
                                                               topic_name, work_dir):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    json_schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "shop.Payment", "type": "object",
                   "properties": {"id": {"type": "integer"}, "method": {"type": "string", "enum": ["card", "cash"]},
                                  "amount": {"type": "number"},
                                  "card": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                                  "tags": {"type": "array", "items": {"type": "string"}}},
                   "required": ["id", "method", "amount"]}
    create_topic(bootstrap_servers, topic_name, partitions=1)
    serialize = JSONSerializer(json.dumps(json_schema), SchemaRegistryClient({"url": schema_registry_url}))
    payments = [{"id": i, "method": "card" if i % 2 else "cash", "amount": i * 1.5,
                 "card": f"c{i}" if i % 2 else None, "tags": ["t"] * (i % 3)} for i in range(6)]
    produce(bootstrap_servers, topic_name,
            [(0, None, serialize(p, SerializationContext(topic_name, MessageField.VALUE)), []) for p in payments])
    connector = {"name": "json-schema-rec", "topics": topic_name, "tasks.max": "1", "connector.class": "RecordingSink",
                 "recording.dir": str(work_dir / "rec"), "recording.pickles": "true",
                 "value.converter": "JsonSchemaConverter", "value.converter.schema.registry.url": schema_registry_url}
    assert run_connector(connector, bootstrap_servers, work_dir, spark=spark).exit_code == 0

    method = SchemaBuilder.string().parameter("io.confluent.connect.json.Enum", "")
    method = method.parameter("io.confluent.connect.json.Enum.card", "card").parameter(
        "io.confluent.connect.json.Enum.cash", "cash").build()
    expected_schema = (SchemaBuilder.struct().name("shop.Payment").version(1)
                       .field("id", Schema.INT64_SCHEMA).field("method", method).field("amount", Schema.FLOAT64_SCHEMA)
                       .field("card", SchemaBuilder.string().optional().build())
                       .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build()).build())
    received = read_recorded_connect_data(work_dir / "rec")
    assert [schema for _, _, schema, _ in received] == [expected_schema] * len(payments)
    for (_, _, _, value), p in zip(received, payments):
        assert value == (Struct(expected_schema).put("id", p["id"]).put("method", p["method"])
                         .put("amount", p["amount"]).put("card", p["card"]).put("tags", p["tags"]))
