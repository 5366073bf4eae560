"""Debezium's transforms give, record for record, what Debezium 3.6.1's own give in Apache Kafka Connect.

One topic holds hand-made Debezium change events (JSON with schemas, key and value) of every kind a sink
sees: snapshot reads, inserts with and without a transaction, updates with and without ``before``, deletes
with a key-only ``before`` and with none, tombstones, a primary key change (delete, tombstone, insert), a
truncate (null key), a heartbeat, a schema change event, a schemaless value and an unnamed struct. Kafka
Connect's standalone worker (the kafka-connect jars, ``plugin.path`` holding Debezium's plugin folder) runs
one FileStreamSink connector per transform configuration below; connect_spark converts the same bytes and
applies the same configurations through its task plugins (converters, transformation chain, ``errors.*``),
and its FileStreamSinkTask prints them. Both files must be equal byte for byte.

FileStreamSink prints only the value, so every chain ends with probes that carry the rest into the value:
the topic (InsertField ``topic.field``), the key (HoistField + HeaderFrom on the key, then HeaderToValue)
and the headers the transforms under test add (HeaderToValue). Records whose transform fails are skipped on
both sides (``errors.tolerance=all``), so a failure in one and not the other shows as a missing line.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid

from connect_spark.api.data import Schema, SchemaBuilder, Struct
from connect_spark.config.properties import format_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.transforms.debezium.envelope import TRANSACTION_BLOCK_SCHEMA, Envelope

DBZ = "io.debezium.transforms."
KAFKA = "org.apache.kafka.connect.transforms."
JSON = "org.apache.kafka.connect.json.JsonConverter"
SENTINEL = "sentinel"

CONVERTERS = {
    "key.converter": JSON, "key.converter.schemas.enable": "true", "key.converter.replace.null.with.default": "false",
    "value.converter": JSON, "value.converter.schemas.enable": "true",
    "value.converter.replace.null.with.default": "false",
    "errors.tolerance": "all", "errors.log.enable": "true", "errors.log.include.messages": "true",
}


def _unwrap(**keys: str) -> dict[str, str]:
    return {"type": DBZ + "ExtractNewRecordState", **keys}


#: name → (the transforms under test in order, as {alias: {key: value}}, headers to carry into the value).
#: The key and header probe ends with HeaderToValue, which gives null fields their defaults: the configurations
#: in RAW go without it, so that a null field with a default shows as null (left out of the line).
CONFIGURATIONS: dict[str, tuple[dict[str, dict[str, str]], list[str]]] = {
    "unwrap_default": ({"u": _unwrap()}, []),
    "unwrap_fields": ({"u": _unwrap(**{
        "add.fields": "op,table,lsn,source.ts_ms,ts_ms,id:txid,xmin,nope,transaction.total_order,snapshot",
        "add.headers": "op,source.lsn:lsn_h,db,ts_ms"})}, ["__op", "__lsn_h", "__db", "__ts_ms"]),
    "unwrap_drop": ({"u": _unwrap(**{"delete.tombstone.handling.mode": "drop", "add.headers": "op"})}, ["__op"]),
    "unwrap_rewrite": ({"u": _unwrap(**{"delete.tombstone.handling.mode": "rewrite", "add.fields": "op,source.ts_ms",
                                        "add.fields.prefix": "meta_", "replace.null.with.default": "false"})}, []),
    "unwrap_rewrite_tombstone": ({"u": _unwrap(**{"delete.tombstone.handling.mode": "rewrite-with-tombstone",
                                                  "add.headers": "op,name:who", "route.by.field": "region"})},
                                 ["__op", "__who"]),
    "unwrap_delete_to_tombstone": ({"u": _unwrap(**{"delete.tombstone.handling.mode": "delete-to-tombstone",
                                                    "route.by.field": "region", "add.fields": "op"})}, []),
    "unwrap_drop_fields": ({"u": _unwrap(**{"drop.fields.header.name": "dropped", "drop.fields.from.key": "true",
                                            "add.fields": "op"})}, []),
    "unwrap_drop_fields_all": ({"u": _unwrap(**{"drop.fields.header.name": "dropped", "drop.fields.from.key": "true",
                                                "drop.fields.keep.schema.compatible": "false",
                                                "delete.tombstone.handling.mode": "rewrite"})}, []),
    "router_unwrap": ({"r": {"type": DBZ + "ByLogicalTableRouter", "topic.regex": r"(.*)\.inventory\.customers",
                             "topic.replacement": "$1.all_shards", "key.field.regex": r"([^.]*)\.([^.]*)\.(.*)",
                             "key.field.replacement": "$3_of_$2", "key.field.name": "shard",
                             "schema.name.adjustment.mode": "avro"},
                       "u": _unwrap(**{"add.fields": "op,table"})}, []),
    "router_envelope": ({"r": {"type": DBZ + "ByLogicalTableRouter", "topic.regex": ".*",
                               "topic.replacement": "routed", "key.enforce.uniqueness": "false",
                               "schema.name.adjustment.mode": "avro_unicode"}}, []),
    "changes_moved": ({"c": {"type": DBZ + "ExtractChangedRecordState", "header.changed.name": "chg",
                             "header.unchanged.name": "unchg"},
                       "h": {"type": DBZ + "HeaderToValue", "headers": "chg,unchg", "fields": "changed,unchanged",
                             "operation": "move"},
                       "u": _unwrap(**{"add.fields": "changed,unchanged,op"})}, []),
    "changes_nested": ({"c": {"type": DBZ + "ExtractChangedRecordState", "header.changed.name": "chg",
                              "header.unchanged.name": "unchg"},
                        "h": {"type": DBZ + "HeaderToValue", "headers": "chg,unchg", "fields": "after.chg,meta.unchg",
                              "operation": "copy"},
                        "u": _unwrap()}, ["chg"]),
}
RAW = {"unwrap_default", "unwrap_rewrite"}


def _connector(name: str, topic: str) -> dict[str, str]:
    """The connector configuration of one transform configuration, probes appended."""
    transforms, headers = CONFIGURATIONS[name]
    probe_headers = ["probe.key", *headers]
    probe_fields = ["__key", *(f"h{i}_{h.strip('_')}" for i, h in enumerate(headers))]
    props = {"name": f"{name}-{topic}", "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
             "tasks.max": "1", "topics": topic, **CONVERTERS,
             "predicates": "nokey,nostruct",
             "predicates.nokey.type": KAFKA + "predicates.HasHeaderKey", "predicates.nokey.name": "probe.nokey",
             "predicates.nostruct.type": KAFKA + "predicates.HasHeaderKey", "predicates.nostruct.name": "probe.map"}
    probes = {
        "ptopic": {"type": KAFKA + "InsertField$Value", "topic.field": "__topic", "replace.null.with.default": "false"},
        "pkey": {"type": KAFKA + "HoistField$Key", "field": "k", "predicate": "nokey", "negate": "true"},
        "pkeyh": {"type": KAFKA + "HeaderFrom$Key", "fields": "k", "headers": "probe.key", "operation": "copy",
                  "predicate": "nokey", "negate": "true"},
        "pvalue": {"type": DBZ + "HeaderToValue", "headers": ",".join(probe_headers), "fields": ",".join(probe_fields),
                   "operation": "copy", "predicate": "nostruct", "negate": "true"},
    }
    if name in RAW:
        probes = {"ptopic": probes["ptopic"]}
    props["transforms"] = ",".join([*transforms, *probes])
    for alias, keys in {**transforms, **probes}.items():
        for key, value in keys.items():
            props[f"transforms.{alias}.{key}"] = value
    return props


# --- the change events --------------------------------------------------------------------------


def _records(topic: str) -> list[tuple]:
    """``(partition, key bytes, value bytes, headers)`` of every test record, in order."""
    from connect_spark.converters.json import JsonConverter

    converter = JsonConverter()
    converter.configure({"schemas.enable": "true", "replace.null.with.default": "false"}, False)  # nulls stay null

    def encode(schema: Schema | None, value) -> bytes | None:
        return converter.from_connect_data(topic, schema, value)

    key_schema = SchemaBuilder.struct().name(f"{topic}.Key").field("id", Schema.INT32_SCHEMA).build()
    row_schema = (SchemaBuilder.struct().name(f"{topic}.Value").optional()
                  .field("id", SchemaBuilder.int32().default_value(0).build())
                  .field("name", Schema.OPTIONAL_STRING_SCHEMA)
                  .field("email", Schema.OPTIONAL_STRING_SCHEMA)
                  .field("tier", SchemaBuilder.string().optional().default_value("basic").build())
                  .field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
                  .field("region", Schema.OPTIONAL_STRING_SCHEMA)
                  .build())
    source_schema = (SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
                     .field("version", Schema.STRING_SCHEMA).field("connector", Schema.STRING_SCHEMA)
                     .field("name", Schema.STRING_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
                     .field("snapshot", SchemaBuilder.string().optional().default_value("false").build())
                     .field("db", Schema.STRING_SCHEMA).field("schema", Schema.STRING_SCHEMA)
                     .field("table", Schema.STRING_SCHEMA).field("txId", Schema.OPTIONAL_INT64_SCHEMA)
                     .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
                     .build())
    events = Envelope.define(topic, row_schema, source_schema)

    def key(id_: int) -> bytes:
        return encode(key_schema, Struct(key_schema).put("id", id_))

    def row(id_: int, name: str | None = None, email: str | None = None, tier: str | None = None,
            score: float | None = None, region: str | None = None) -> Struct:
        return (Struct(row_schema).put("id", id_).put("name", name).put("email", email).put("tier", tier)
                .put("score", score).put("region", region))

    def source(ts_ms: int, lsn: int | None, snapshot: str | None = None) -> Struct:
        return (Struct(source_schema).put("version", "3.6.1.Final").put("connector", "postgresql")
                .put("name", "dbserver1").put("ts_ms", ts_ms).put("snapshot", snapshot).put("db", "inventory")
                .put("schema", "public").put("table", "customers").put("txId", 571).put("lsn", lsn))

    transaction = Struct(TRANSACTION_BLOCK_SCHEMA).put("id", "571:24023128").put("total_order", 1).put(
        "data_collection_order", 1)

    def event(value: Struct) -> bytes:
        return encode(events.schema, value)

    alice = row(1, "alice", "a@example.com", "gold", 1.5, "eu")
    bob = row(2, "bob", "b@example.com", None, 0.1, "  ")
    bob2 = row(2, "robert", "b@example.com", None, 0.30000000000000004, "us")
    dropped = [("dropped", b'["email","id","score"]')]
    heartbeat_key = SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey").version(1).field(
        "serverName", Schema.STRING_SCHEMA).build()
    heartbeat = SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").version(1).field(
        "ts_ms", Schema.INT64_SCHEMA).build()
    change_key = SchemaBuilder.struct().name("io.debezium.connector.mysql.SchemaChangeKey").version(1).field(
        "databaseName", Schema.STRING_SCHEMA).build()
    change = (SchemaBuilder.struct().name("io.debezium.connector.mysql.SchemaChangeValue").version(1)
              .field("databaseName", Schema.OPTIONAL_STRING_SCHEMA).field("ddl", Schema.OPTIONAL_STRING_SCHEMA)
              .field("ts_ms", Schema.INT64_SCHEMA).build())
    unnamed = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("op", Schema.STRING_SCHEMA).build()
    return [
        (0, key(1), event(events.read(alice, source(1000, None, "true"), 1001)), []),
        (0, key(2), event(events.create(bob, source(2000, 100), 2001, transaction)), []),
        (0, key(2), event(events.update(bob, bob2, source(3000, 110), 3001, transaction)), dropped),
        (0, key(2), event(events.update(None, row(2, "bobby", None, "silver", None, "eu"), source(3100, 111), 3101)),
         []),
        (0, key(1), event(events.update(alice, row(1, "alice", "a@example.com", "gold", 1.5, "eu"), source(3200, 112),
                                        3201)), []),
        (0, key(2), event(events.delete(row(2), source(4000, 120), 4001)), dropped),
        (0, key(2), None, []),
        # a primary key change: delete the old key, its tombstone, insert the new key
        (0, key(1), event(events.delete(alice, source(5000, 130), 5001)), []),
        (0, key(1), None, []),
        (0, key(10), event(events.create(row(10, "alice", "a@example.com", "gold", 1.5, None), source(5000, 130),
                                         5002)), []),
        # a delete that carries no before (REPLICA IDENTITY NOTHING)
        (0, key(10), event(events.delete(None, source(6000, 140), 6001)), []),
        (0, None, event(events.truncate(source(7000, 150), 7001)), [("probe.nokey", b"1")]),
        (0, encode(heartbeat_key, Struct(heartbeat_key).put("serverName", "dbserver1")),
         encode(heartbeat, Struct(heartbeat).put("ts_ms", 8000)), []),
        (0, encode(change_key, Struct(change_key).put("databaseName", "inventory")),
         encode(change, Struct(change).put("databaseName", "inventory").put("ddl", "ALTER TABLE t").put("ts_ms", 8100)),
         []),
        (0, key(11), json.dumps({"schema": None, "payload": {"op": "c", "after": {"id": 11}}}).encode(),
         [("probe.map", b"1")]),
        (0, key(12), encode(unnamed, Struct(unnamed).put("id", 12).put("op", "c")), []),
        (0, key(3), event(events.create(row(3, SENTINEL), source(9000, 160), 9001)), []),
    ]


# --- the two sides ------------------------------------------------------------------------------


def _kafka_connect_lines(bootstrap_servers: str, connectors: dict[str, dict[str, str]], work) -> dict[str, list[str]]:
    """Run every connector in one ConnectStandalone; each file's lines once it printed the sentinel."""
    from connect_spark.jvm import DEBEZIUM_POSTGRES, KAFKA_CONNECT
    from connect_spark.jvm.java import find_java
    from connect_spark.localkafka import free_port

    work.mkdir()
    worker = {"bootstrap.servers": bootstrap_servers, "key.converter": JSON, "value.converter": JSON,
              "offset.storage.file.filename": str(work / "offsets"), "offset.flush.interval.ms": "500",
              "plugin.path": str(DEBEZIUM_POSTGRES.folder().parent),
              "listeners": f"http://127.0.0.1:{free_port()}"}
    (work / "worker.properties").write_text(format_properties(worker))
    files, command_files = {}, []
    for name, props in connectors.items():
        files[name] = work / f"{name}.txt"
        path = work / f"{name}.properties"
        path.write_text(format_properties({**props, "file": str(files[name])}))
        command_files.append(str(path))
    log4j = work / "log4j2.properties"
    log4j.write_text("status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
                     "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = %p %m (%c)%n\n"
                     "rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = STDOUT\n")
    command = [find_java(17, "Kafka Connect"), "-Xmx512m", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j2.configurationFile={log4j}", "-cp", str(KAFKA_CONNECT.folder() / "*"),
               "org.apache.kafka.connect.cli.ConnectStandalone", str(work / "worker.properties"), *command_files]

    def done() -> bool:
        return all(f.exists() and SENTINEL in f.read_text() for f in files.values())

    with open(work / "connect.log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and process.poll() is None and not done():
                time.sleep(0.5)
        finally:
            process.terminate()
            process.wait(30)
    assert done(), (work / "connect.log").read_text()[-5000:]
    return {name: f.read_text().splitlines() for name, f in files.items()}


def _connect_spark_lines(bootstrap_servers: str, connectors: dict[str, dict[str, str]], topic: str,
                         records: list[tuple], work) -> dict[str, list[str]]:
    """The same records through connect_spark's converters, transformation chain and error handling, printed
    by its FileStreamSinkTask."""
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.connectors.file import FileStreamSinkTask
    from connect_spark.runtime.errors.context import RawRecord
    from connect_spark.runtime.tasks.builder import build_task_plugins
    from connect_spark.testing.harness import worker_properties

    raws = [RawRecord(topic, 0, offset, 1700000000000 + offset, 0, key, value, tuple(headers))
            for offset, (_, key, value, headers) in enumerate(records)]
    worker = WorkerConfig(worker_properties(bootstrap_servers, work))
    lines = {}
    for name, props in connectors.items():
        plugins = build_task_plugins(ConnectorConfig(props), worker, 0)
        task = FileStreamSinkTask()
        path = work / f"cs-{name}.txt"
        task.start({"file": str(path)})
        try:
            task.put(plugins.converter.convert(raws).records)
            task.flush({})
        finally:
            task.stop()
            plugins.close()
        lines[name] = path.read_text().splitlines()
    return lines


def test_debezium_transforms_match_debezium_in_kafka_connect(jars, bootstrap_servers, work_dir):
    topic = f"dbserver-{uuid.uuid4().hex[:6]}.inventory.customers"
    create_topic(bootstrap_servers, topic, partitions=1)
    records = _records(topic)
    produce(bootstrap_servers, topic, [(p, k, v, h, 1700000000000 + i) for i, (p, k, v, h) in enumerate(records)])
    connectors = {name: _connector(name, topic) for name in CONFIGURATIONS}

    ours = _connect_spark_lines(bootstrap_servers, connectors, topic, records, work_dir)
    theirs = _kafka_connect_lines(bootstrap_servers, connectors, work_dir / "kafka-connect")

    for name in CONFIGURATIONS:
        assert ours[name] == theirs[name], name
    # the probes see what they should: keys, topics and added headers reach the printed values
    assert any("__key=Struct{id=2}" in line for line in ours["unwrap_drop"])
    assert any("tier" not in line and "name=bob," in line for line in ours["unwrap_default"])  # null, not its default
    assert any("h0_op=u" in line for line in ours["unwrap_fields"])
    assert any("shard=customers_of_inventory" in line for line in ours["router_unwrap"])
    assert any("changed=[name, score, region]" in line for line in ours["changes_moved"])
