"""The S3 sink task against a real S3-compatible server (moto's, no JVM): Confluent's names, rotation rules
and contents, whole-group uploads and the resume point read back by listing."""

from __future__ import annotations

import io
import json
import uuid

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3_faults import S3Faults

from connect_spark import plugins
from connect_spark.api.data import Schema, SchemaBuilder, Timestamp
from connect_spark.api.errors import ConfigException, DataException, RetriableException
from connect_spark.api.records import TopicPartition
from connect_spark.columnar.records import with_connect_schemas
from connect_spark.connectors.s3 import S3SinkConnector, S3SinkTask
from connect_spark.connectors.s3.avro_schema import avro_schema
from connect_spark.connectors.s3.config import S3SinkConfig
from connect_spark.connectors.s3.partitioner import strftime_pattern
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

TP = TopicPartition("orders", 0)
VALUE = pa.struct([("id", pa.int64()), ("name", pa.string()), ("region", pa.string())])
VALUE_SCHEMA = (SchemaBuilder.struct().name("shop.Order").field("id", Schema.INT64_SCHEMA)
                .field("name", Schema.STRING_SCHEMA).field("region", Schema.OPTIONAL_STRING_SCHEMA).build())
AVRO = "io.confluent.connect.s3.format.avro.AvroFormat"
JSON = "io.confluent.connect.s3.format.json.JsonFormat"
PARQUET = "io.confluent.connect.s3.format.parquet.ParquetFormat"
FIELD = "io.confluent.connect.storage.partitioner.FieldPartitioner"


def frame(records, partition=0, schema=VALUE_SCHEMA, value_type=VALUE, keys=None):
    """A record frame from (offset, timestamp ms, value dict or None), the value's Connect schema attached;
    ``keys``: string keys (default none)."""
    n = len(records)
    table = pa.table({
        "topic": pa.array(["orders"] * n), "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array([r[0] for r in records], pa.int64()),
        "timestamp": pa.array([r[1] for r in records], pa.timestamp("ms", tz="UTC")),
        "timestamp_type": pa.array([0] * n, pa.int32()),
        "key": pa.array(keys if keys is not None else [None] * n, pa.string()),
        "value": pa.array([r[2] for r in records], value_type),
        "headers": pa.array([[]] * n, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "original_topic": pa.array(["orders"] * n), "original_partition": pa.array([partition] * n, pa.int32()),
        "original_offset": pa.array([r[0] for r in records], pa.int64()),
    })
    return with_connect_schemas(table, Schema.OPTIONAL_STRING_SCHEMA if keys is not None else None, schema)


def rows(offsets, t0=0, step=10, region="eu"):
    return [(o, t0 + o * step, {"id": o, "name": f"n{o}", "region": region}) for o in offsets]


@pytest.fixture
def bucket(local_s3):
    name = f"b-{uuid.uuid4().hex[:12]}"
    local_s3.create_bucket(name)
    return name


@pytest.fixture
def faults(local_s3):
    """A front for the local server that refuses the uploads a test names (``s3_faults.py``)."""
    with S3Faults(local_s3.url) as front:
        yield front


def props(local_s3, bucket, **keys):
    return {**local_s3.connector_keys(bucket), "name": "s3-sink", **{k.replace("_", "."): v for k, v in keys.items()}}


def start(config, partitions=(TP,)):
    task = S3SinkTask()
    context = WorkerSinkTaskContext(config)
    task.initialize(context)
    task.start(config)
    context.set_assignment(set(partitions))
    task.open(list(partitions))
    return task, context


def test_default_partitioner_avro_names_contents_and_commits(local_s3, bucket):
    task, _ = start(props(local_s3, bucket, flush_size="3", format_class=AVRO))
    task.put_arrow(frame(rows(range(7))))
    objects = local_s3.objects(bucket)
    assert sorted(objects) == ["topics/orders/partition=0/orders+0+0000000000.avro",
                               "topics/orders/partition=0/orders+0+0000000003.avro"]
    reader = fastavro.reader(io.BytesIO(objects["topics/orders/partition=0/orders+0+0000000003.avro"]))
    assert [r["id"] for r in reader] == [3, 4, 5]
    assert reader.writer_schema["name"] == "shop.Order"
    assert task.pre_commit({TP: 7}) == {TP: 6}  # offset 6 is in an open object
    task.close([TP])
    # A new task lists the bucket and resumes after the last complete group.
    _, context = start(props(local_s3, bucket, flush_size="3", format_class=AVRO))
    assert context.pending_offsets == {TP: 6}
    # The same instance in its next generation lists only the keys after those it has seen.
    task.context.pending_offsets.clear()
    task.open([TP])
    task.put_arrow(frame(rows(range(6, 9))))
    task.close([TP])
    task.open([TP])
    assert task.context.pending_offsets == {TP: 9}


def test_same_records_give_the_same_bytes(local_s3, bucket):
    config = props(local_s3, bucket, flush_size="2", format_class=AVRO, avro_codec="deflate")
    task, _ = start(config)
    task.put_arrow(frame(rows(range(2))))
    first = local_s3.objects(bucket)
    task.close([TP])
    task, _ = start(config)
    task.put_arrow(frame(rows(range(2))))  # re-delivered: dropped below the resume point
    task.close([TP])
    again = S3SinkTask()
    again.initialize(WorkerSinkTaskContext(config))
    again.start(config)
    again.open([])
    again.put_arrow(frame(rows(range(2))))  # written again from scratch: identical object
    assert local_s3.objects(bucket) == first


def test_field_partitioner_groups_objects_and_an_incomplete_group_is_rewritten(local_s3, bucket, faults):
    config = props(local_s3, bucket, flush_size="4", format_class=JSON, store_url=faults.url,
                   s3_retry_max_attempts="1", partitioner_class=FIELD, partition_field_name="region")
    task, _ = start(config)
    records = [(0, 0, {"id": 0, "name": "a", "region": "eu"}), (1, 0, {"id": 1, "name": "b", "region": "us"}),
               (2, 0, {"id": 2, "name": "c", "region": "eu"}), (3, 0, {"id": 3, "name": "d", "region": "us"})]
    task.put_arrow(frame(records))
    objects = local_s3.objects(bucket)
    assert sorted(objects) == ["topics/orders/region=eu/orders+0+0000000000.json",
                               "topics/orders/region=us/orders+0+0000000001.json"]
    assert [json.loads(line) for line in objects["topics/orders/region=us/orders+0+0000000001.json"].splitlines()] \
        == [{"id": 1, "name": "b", "region": "us"}, {"id": 3, "name": "d", "region": "us"}]
    _, context = start(config)
    assert context.pending_offsets == {TP: 4}
    # The server refuses the second object of the next group (one attempt a request): the task fails between
    # the two uploads, and the task started again rewrites the group from its first offset.
    faults.refuse("PUT", "region=us/orders+0+0000000005.json")
    group = [(4, 0, {"id": 4, "name": "e", "region": "eu"}), (5, 0, {"id": 5, "name": "f", "region": "us"}),
             (6, 0, {"id": 6, "name": "g", "region": "eu"}), (7, 0, {"id": 7, "name": "h", "region": "eu"})]
    with pytest.raises(RetriableException):
        task.put_arrow(frame(group))
    assert "topics/orders/region=eu/orders+0+0000000004.json" in local_s3.objects(bucket)
    assert "topics/orders/region=us/orders+0+0000000005.json" not in local_s3.objects(bucket)
    task, context = start(config)
    assert context.pending_offsets == {TP: 4}
    task.put_arrow(frame(group))
    objects = local_s3.objects(bucket)
    assert [json.loads(line)["id"] for line in objects["topics/orders/region=eu/orders+0+0000000004.json"].splitlines()] \
        == [4, 6, 7]
    assert objects["topics/orders/region=us/orders+0+0000000005.json"] == b'{"id":5,"name":"f","region":"us"}\n'
    _, context = start(config)
    assert context.pending_offsets == {TP: 8}


def test_hourly_partitioner_rotates_on_record_time_and_new_hours(local_s3, bucket):
    hour = 3_600_000
    config = props(local_s3, bucket, flush_size="100", format_class=PARQUET, rotate_interval_ms=str(10 * 60_000),
                   partitioner_class="io.confluent.connect.storage.partitioner.HourlyPartitioner",
                   locale="en-US", timezone="UTC", timestamp_extractor="Record")
    task, _ = start(config)
    t0 = 1_700_000_000_000 // hour * hour  # 2023-11-14T22:00Z
    task.put_arrow(frame([(0, t0, {"id": 0, "name": "a", "region": None}),
                          (1, t0 + 60_000, {"id": 1, "name": "b", "region": None}),
                          (2, t0 + 11 * 60_000, {"id": 2, "name": "c", "region": None}),  # 10 min past: rotate
                          (3, t0 + hour, {"id": 3, "name": "d", "region": None}),  # a new hour: rotate
                          (4, t0 + hour + 1, {"id": 4, "name": "e", "region": None})]))
    objects = local_s3.objects(bucket)
    assert sorted(objects) == [
        "topics/orders/year=2023/month=11/day=14/hour=22/orders+0+0000000000.snappy.parquet",
        "topics/orders/year=2023/month=11/day=14/hour=22/orders+0+0000000002.snappy.parquet"]
    table = pq.read_table(pa.BufferReader(objects[
        "topics/orders/year=2023/month=11/day=14/hour=22/orders+0+0000000000.snappy.parquet"]))
    assert table.column("id").to_pylist() == [0, 1]
    assert task.pre_commit({TP: 5}) == {TP: 3}


def test_tombstones_fail_or_are_ignored(local_s3, bucket):
    task, _ = start(props(local_s3, bucket, flush_size="2", format_class=JSON))
    with pytest.raises(DataException, match="behavior.on.null.values"):
        task.put_arrow(frame([(0, 0, None)]))
    task, _ = start(props(local_s3, bucket, flush_size="2", format_class=JSON, behavior_on_null_values="ignore"))
    task.put_arrow(frame([(0, 0, None), (1, 0, {"id": 1, "name": "x", "region": None}),
                          (2, 0, {"id": 2, "name": "y", "region": None})]))
    assert list(local_s3.objects(bucket)) == ["topics/orders/partition=0/orders+0+0000000001.json"]


def test_unwritable_values_without_a_reporter_fail_the_task(local_s3, bucket):
    task, _ = start(props(local_s3, bucket, flush_size="2", format_class=AVRO))
    with pytest.raises(DataException, match="AvroFormat needs values with a Connect schema"):
        task.put_arrow(frame(rows([0]), schema=None))


def test_config_errors_name_the_key_and_the_secret_is_a_password():
    with pytest.raises(ConfigException) as raised:
        S3SinkConfig.parse({"s3.bucket.name": "b", "flush.size": "0", "format.class": "CsvFormat",
                            "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner"})
    text = str(raised.value)
    for key in ("flush.size", "format.class", "partition.field.name"):
        assert key in text
    assert S3SinkConnector().config().keys["aws.secret.access.key"].type.value == "password"
    assert plugins.resolve("connector", "io.confluent.connect.s3.S3SinkConnector") is S3SinkConnector
    assert plugins.resolve("connector", "S3Sink") is S3SinkConnector


def test_joda_path_formats_and_wall_clock_warnings(caplog):
    assert strftime_pattern("'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH") == "year=%Y/month=%m/day=%d/hour=%H"
    with pytest.raises(ConfigException, match="path.format"):
        strftime_pattern("EEE")
    connector = S3SinkConnector()
    connector.start({"s3.bucket.name": "b", "flush.size": "3", "format.class": JSON, "rotate.schedule.interval.ms":
                     "60000"})
    assert "wall clock" in caplog.text


def test_avro_schema_is_named_as_confluents_avro_data():
    nested = SchemaBuilder.struct().field("when", Timestamp.SCHEMA).field("n", Schema.INT16_SCHEMA).build()
    schema = SchemaBuilder.struct().field("inner", nested).field("tags", SchemaBuilder.map(
        Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).optional().build()).build()
    assert avro_schema(schema) == {
        "type": "record", "name": "ConnectDefault", "namespace": "io.confluent.connect.avro", "fields": [
            {"name": "inner", "type": {"type": "record", "name": "ConnectDefault2",
                                       "namespace": "io.confluent.connect.avro", "fields": [
                {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis", "connect.version": 1,
                                          "connect.name": "org.apache.kafka.connect.data.Timestamp"}},
                {"name": "n", "type": {"type": "int", "connect.type": "int16"}}]}},
            {"name": "tags", "type": ["null", {"type": "map", "values": "int"}], "default": None}]}
    fastavro.parse_schema(avro_schema(schema))


def test_the_secret_key_stays_out_of_errors_logs_and_masked_configs(caplog):
    from connect_spark.config.secrets import masked

    secret = "s3-secret-marker-4f9a"
    config = {"s3.bucket.name": "b", "flush.size": "x", "format.class": JSON, "aws.access.key.id": "AKIA",
              "aws.secret.access.key": secret, "rotate.schedule.interval.ms": "1000"}
    with pytest.raises(ConfigException) as raised:
        S3SinkConnector().start(config)
    assert secret not in str(raised.value)
    config["flush.size"] = "3"
    S3SinkConnector().start(config)
    assert secret not in caplog.text
    assert secret not in str(masked(config))
    assert secret not in repr(S3SinkConfig.parse(config))


def test_the_key_table_in_the_docs_is_generated_from_the_declarations():
    from pathlib import Path

    from connect_spark.config.docs import render_config_def
    from connect_spark.connectors.s3.config import S3_SINK_CONFIG_DEF

    docs = Path(__file__).resolve().parents[2] / "docs" / "connectors" / "s3.md"
    assert render_config_def(S3_SINK_CONFIG_DEF, heading_level=3).strip() in docs.read_text(), (
        "docs/connectors/s3.md's key table is stale: paste render_config_def(S3_SINK_CONFIG_DEF) under '## Keys'")


def test_records_a_format_cannot_hold_go_to_the_error_reporter(local_s3, bucket):
    from concurrent.futures import Future

    from connect_spark.api.task import ErrantRecordReporter

    class Collecting(ErrantRecordReporter):
        def __init__(self):
            self.reported = []

        def report(self, record, error):
            self.reported.append((record.kafka_offset, str(error)))
            done = Future()
            done.set_result(None)
            return done

    reporter = Collecting()
    config = props(local_s3, bucket, flush_size="2", format_class=JSON,
                   partitioner_class="FieldPartitioner", partition_field_name="region")
    task = S3SinkTask()
    context = WorkerSinkTaskContext(config, errant_reporter=reporter)
    task.initialize(context)
    task.start(config)
    context.set_assignment({TP})
    task.open([TP])
    task.put_arrow(frame([(0, 0, {"id": 0, "name": "a", "region": None}), (1, 0, {"id": 1, "name": "b", "region": "eu"}),
                          (2, 0, {"id": 2, "name": "c", "region": "eu"})]))
    assert [offset for offset, _ in reporter.reported] == [0]
    assert "partition field" in reporter.reported[0][1]
    assert list(local_s3.objects(bucket)) == ["topics/orders/region=eu/orders+0+0000000001.json"]
    assert task.pre_commit({TP: 3}) == {TP: 3}


def test_throttling_and_server_errors_are_retriable_a_missing_bucket_is_not(local_s3):
    from botocore.exceptions import ClientError

    from connect_spark.api.errors import ConnectException
    from connect_spark.connectors.s3.store import Bucket, GroupMark, translated

    def client_error(code, status):
        return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                           "PutObject")

    assert isinstance(translated(client_error("SlowDown", 503), "x"), RetriableException)
    assert isinstance(translated(client_error("InternalError", 500), "x"), RetriableException)
    assert not isinstance(translated(client_error("AccessDenied", 403), "x"), RetriableException)
    config = S3SinkConfig.parse(props(local_s3, "no-such-bucket-here", flush_size="1", format_class=JSON))
    with pytest.raises(ConnectException, match="NoSuchBucket") as raised:
        Bucket(config).put("k", b"x", GroupMark(0, 1, 1))
    assert not isinstance(raised.value, RetriableException)


def test_store_kafka_keys_writes_a_keys_object_beside_each_value_object(local_s3, bucket):
    config = props(local_s3, bucket, flush_size="2", format_class=AVRO, store_kafka_keys="true",
                   keys_format_class=JSON)
    task, _ = start(config)
    task.put_arrow(frame(rows(range(3)), keys=["k0", "k1", "k2"]))
    objects = local_s3.objects(bucket)
    assert sorted(objects) == ["topics/orders/partition=0/orders+0+0000000000.avro",
                               "topics/orders/partition=0/orders+0+0000000000.keys.json"]
    assert objects["topics/orders/partition=0/orders+0+0000000000.keys.json"] == b'"k0"\n"k1"\n'
    _, context = start(config)
    assert context.pending_offsets == {TP: 2}
    with pytest.raises(DataException, match="needs a key"):
        task.put_arrow(frame(rows([3]), keys=[None]))


def test_a_group_is_complete_only_when_its_own_objects_hold_all_its_records(local_s3, bucket):
    """Completeness is judged by the records each object's metadata says it holds, not by counting names: an
    object of the group replaced by another upload of its offsets (here a zombie task still running with an
    older ``flush.size=1``) leaves the name in place but not the group's records, and the group is written
    again whole."""
    config = props(local_s3, bucket, flush_size="4", format_class=JSON, partitioner_class=FIELD,
                   partition_field_name="region")
    task, _ = start(config)
    zombie, _ = start({**config, "flush.size": "1"})  # opened before the group is uploaded, as the old owner was
    group = [(0, 0, {"id": 0, "name": "a", "region": "eu"}), (1, 0, {"id": 1, "name": "b", "region": "us"}),
             (2, 0, {"id": 2, "name": "c", "region": "eu"}), (3, 0, {"id": 3, "name": "d", "region": "eu"})]
    task.put_arrow(frame(group))
    eu, us = "topics/orders/region=eu/orders+0+0000000000.json", "topics/orders/region=us/orders+0+0000000001.json"
    head = local_s3.client().head_object(Bucket=bucket, Key=eu)["Metadata"]
    assert (head["connect-group-start"], head["connect-group-next"], head["connect-group-objects"],
            head["connect-group-records"], head["connect-object-records"]) == ("0", "4", "2", "4", "3")
    zombie.put_arrow(frame(group[:1]))
    assert [json.loads(line)["id"] for line in local_s3.objects(bucket)[eu].splitlines()] == [0]

    task, context = start(config)
    assert context.pending_offsets == {TP: 0}  # 2 names of 2, but 2 of the group's 4 records: written again
    task.put_arrow(frame(group))
    objects = local_s3.objects(bucket)
    assert sorted(objects) == [eu, us]
    assert [json.loads(line)["id"] for line in objects[eu].splitlines()] == [0, 2, 3]
    assert [json.loads(line)["id"] for line in objects[us].splitlines()] == [1]
    _, context = start(config)
    assert context.pending_offsets == {TP: 4}


def test_a_replayed_batch_is_one_group_of_its_own_and_a_second_hand_over_writes_nothing(local_s3, bucket, faults):
    """Dead letters lie below the resume point: replayed, they go into objects tagged with the batch's end in the
    dead letter topic, uploaded at ``close`` as one group; the same batch handed over again after its objects are
    all in is reported held; one cut short is written again under the same names."""
    from connect_spark.api.replay import DeadLetterBatch

    config = props(local_s3, bucket, flush_size="2", format_class=JSON, store_url=faults.url,
                   s3_retry_max_attempts="1", partitioner_class=FIELD, partition_field_name="region")
    task, _ = start(config)
    task.put_arrow(frame([(0, 0, {"id": 0, "name": "a", "region": "eu"}), (2, 0, {"id": 2, "name": "c", "region": "eu"}),
                          (3, 0, {"id": 3, "name": "d", "region": "eu"}), (4, 0, {"id": 4, "name": "e", "region": "us"})]))
    ordinary = sorted(local_s3.objects(bucket))
    letters = [(1, 0, {"id": 1, "name": "b", "region": "us"}), (5, 0, {"id": 5, "name": "f", "region": "eu"})]
    batch = DeadLetterBatch("orders-dlq", {0: 7}, {("orders", 0, 1): (0, 4), ("orders", 0, 5): (0, 6)})
    tagged = ["topics/orders/region=eu/orders+0+0000000005+dlq+0-7.json",
              "topics/orders/region=us/orders+0+0000000001+dlq+0-7.json"]

    def replay(expect_held):
        replaying = S3SinkTask()
        replaying.begin_replay(batch)
        replaying.initialize(WorkerSinkTaskContext(config))
        replaying.start(config)
        replaying.open([TP])
        held = replaying.replay_position()
        assert held == ({0: 7} if expect_held else {})
        try:
            if not held:
                replaying.put_arrow(frame(letters))
            replaying.close([TP])
        finally:
            replaying.end_replay()

    faults.refuse("PUT", "region=eu/orders+0+0000000005+dlq+0-7.json")  # the second object of the batch
    with pytest.raises(RetriableException):
        replay(expect_held=False)
    assert sorted(local_s3.objects(bucket)) == sorted(ordinary + tagged[1:])
    replay(expect_held=False)  # cut short: written again, under the same names
    objects = local_s3.objects(bucket)
    assert sorted(objects) == sorted(ordinary + tagged)
    assert objects[tagged[0]] == b'{"id":5,"name":"f","region":"eu"}\n'
    assert objects[tagged[1]] == b'{"id":1,"name":"b","region":"us"}\n'
    replay(expect_held=True)  # handed over again: held, nothing written
    assert local_s3.objects(bucket) == objects
    _, context = start(config)  # ordinary resumes ignore the replayed objects: after the group [3, 5)
    assert context.pending_offsets == {TP: 5}
