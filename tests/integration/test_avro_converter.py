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
