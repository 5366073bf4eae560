"""The Delta sink against real Spark and real Delta tables, driven through its task lifecycle.

Frames are built with the record-frame columns the runtime hands to ``put_dataframe``; the task context
is the runtime's own ``WorkerSinkTaskContext``. Tables are read back with ``spark.read.format("delta")``
and their commit history is checked for the stored offsets.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from delta.tables import DeltaTable
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from connect_spark.api.records import TopicPartition
from connect_spark.connectors.delta import DeltaSinkTask
from connect_spark.connectors.delta.writer import SchemaMismatch
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def frame(spark, records, value_type, key_type=StringType()):
    """A record frame: ``records`` are (topic, partition, offset, key, value[, original_topic])."""
    schema = StructType([
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestamp_type", IntegerType()), StructField("key", key_type),
        StructField("value", value_type), StructField("headers", HEADERS),
        StructField("original_topic", StringType()), StructField("original_partition", IntegerType()),
        StructField("original_offset", LongType()),
    ])
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for record in records:
        topic, partition, offset, key, value = record[:5]
        original = record[5] if len(record) > 5 else topic
        rows.append((topic, partition, offset, base + dt.timedelta(seconds=offset), 0, key, value, [],
                     original, partition, offset))
    return spark.createDataFrame(rows, schema)


ORDER = StructType([StructField("id", LongType()), StructField("amount", LongType())])


def start_task(props, partitions):
    task = DeltaSinkTask()
    context = WorkerSinkTaskContext(props)
    task.initialize(context)
    task.start(props)
    context.set_assignment(set(partitions))
    task.open(partitions)
    return task, context


def stored_metadata(spark, path):
    rows = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return [json.loads(r["userMetadata"])["connect_spark"] if r["userMetadata"] else None for r in rows]


def test_append_with_coordinates_stores_offsets_in_the_commit(spark, work_dir):
    path = str(work_dir / "orders")
    props = {"name": "orders-sink", "delta.table.path": path, "delta.column.topic": "kafka_topic",
             "delta.column.offset": "kafka_offset", "delta.column.partition": "kafka_partition",
             "delta.column.timestamp": "kafka_ts"}
    tps = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task, context = start_task(props, tps)
    assert context.take_pending_offsets() == {}  # no table yet: nothing to rewind
    batch = frame(spark, [("orders", 0, 0, "a", (1, 10)), ("orders", 0, 1, "b", (2, 20)),
                          ("orders", 1, 5, "c", (3, 30))], ORDER)
    task.put_dataframe(batch, 0)
    assert task.pre_commit({tps[0]: 2, tps[1]: 6}) == {tps[0]: 2, tps[1]: 6}

    got = spark.read.format("delta").load(path).orderBy("id").collect()
    assert [(r.id, r.amount, r.kafka_topic, r.kafka_partition, r.kafka_offset) for r in got] == [
        (1, 10, "orders", 0, 0), (2, 20, "orders", 0, 1), (3, 30, "orders", 1, 5)]
    assert got[0].kafka_ts == dt.datetime(2024, 1, 1)
    (meta,) = stored_metadata(spark, path)
    assert meta == {"v": 1, "connector": "orders-sink", "sequence": 1, "offsets": {"orders": {"0": 2, "1": 6}}}
    txn = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("operation").collect()
    assert txn[0].operation == "WRITE"
    task.close(tps)
    task.stop()


def test_crash_before_offset_commit_rewinds_and_writes_nothing_twice(spark, work_dir):
    path = str(work_dir / "eo")
    props = {"name": "eo-sink", "delta.table.path": path}
    tps = [TopicPartition("eo", 0), TopicPartition("eo", 1)]
    first = frame(spark, [("eo", 0, 0, "a", (1, 1)), ("eo", 0, 1, "b", (2, 2)), ("eo", 1, 0, "c", (3, 3))], ORDER)
    task, _ = start_task(props, tps)
    task.put_dataframe(first, 0)
    # "crash": no pre_commit, no offset commit. A fresh task opens and must resume from the table.
    fresh, context = start_task(props, tps)
    assert context.take_pending_offsets() == {tps[0]: 2, tps[1]: 1}
    fresh.put_dataframe(first, 0)  # the runtime re-delivers the same records (batch ids restart)
    assert spark.read.format("delta").load(path).count() == 3
    assert len(stored_metadata(spark, path)) == 1  # the re-delivery made no commit at all
    overlapping = frame(spark, [("eo", 0, 1, "b", (2, 2)), ("eo", 0, 2, "d", (4, 4)), ("eo", 1, 0, "c", (3, 3))],
                        ORDER)
    fresh.put_dataframe(overlapping, 1)
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [1, 2, 3, 4]
    assert stored_metadata(spark, path)[-1]["offsets"] == {"eo": {"0": 3, "1": 1}}
    # with the batch's ranges given, only a partition whose range starts before what the table holds is filtered
    redelivered = frame(spark, [("eo", 0, 2, "d", (4, 4)), ("eo", 0, 3, "e", (5, 5)), ("eo", 1, 1, "f", (6, 6))],
                        ORDER)
    fresh.put_dataframe_batch(redelivered, 2, {tps[0]: (2, 4), tps[1]: (1, 2)})
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [1, 2, 3, 4, 5, 6]
    assert stored_metadata(spark, path)[-1]["offsets"] == {"eo": {"0": 4, "1": 2}}


def test_upsert_last_record_wins_and_tombstones_delete(spark, work_dir):
    path = str(work_dir / "customers")
    props = {"name": "upserts", "delta.table.path": path, "insert.mode": "upsert", "pk.mode": "record_key",
             "pk.fields": "cid", "delete.enabled": "true"}
    tp = TopicPartition("customers", 0)
    task, _ = start_task(props, [tp])
    value = StructType([StructField("name", StringType()), StructField("amount", LongType())])
    task.put_dataframe(frame(spark, [("customers", 0, 0, "k1", ("ann", 1)), ("customers", 0, 1, "k2", ("bob", 2)),
                                     ("customers", 0, 2, "k1", ("ann", 3)), ("customers", 0, 3, "k3", ("cy", 4))],
                             value), 0)
    got = {r.cid: (r.name, r.amount) for r in spark.read.format("delta").load(path).collect()}
    assert got == {"k1": ("ann", 3), "k2": ("bob", 2), "k3": ("cy", 4)}
    task.put_dataframe(frame(spark, [("customers", 0, 4, "k2", ("bob", 20)), ("customers", 0, 5, "k2", None),
                                     ("customers", 0, 6, "k3", None), ("customers", 0, 7, "k3", ("cy", 40)),
                                     ("customers", 0, 8, "k1", None)], value), 1)
    got = {r.cid: (r.name, r.amount) for r in spark.read.format("delta").load(path).collect()}
    assert got == {"k3": ("cy", 40)}  # k2: update then tombstone; k3: tombstone then re-insert; k1 deleted
    ops = [r.operation for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert ops == ["WRITE", "MERGE"]
    assert stored_metadata(spark, path)[-1]["offsets"] == {"customers": {"0": 9}}


REWRITTEN = StructType([StructField("id", LongType()), StructField("name", StringType()),
                        StructField("__deleted", StringType())])
ID_KEY = StructType([StructField("id", LongType())])


def _rewrite_mode_changes(spark, topic):
    """Debezium changes after ExtractNewRecordState in rewrite mode: creates, an update, a delete marker, a key
    moved from 3 to 3003 (delete marker, tombstone, create), a row created and deleted in one batch."""
    return frame(spark, [(topic, 0, 3, (1,), (1, "a2", "false")), (topic, 0, 4, (2,), (2, "b", "true")),
                         (topic, 0, 5, (3,), (3, "c", "true")), (topic, 0, 6, (3,), None),
                         (topic, 0, 7, (3003,), (3003, "c", "false")), (topic, 0, 8, (4,), (4, "d", "false")),
                         (topic, 0, 9, (4,), (4, "d", "true")), (topic, 0, 10, (5,), (5, "e", "true"))],
                 REWRITTEN, ID_KEY)


def test_rewrite_mode_delete_markers_delete_and_key_changes_move_the_row(spark, work_dir):
    path = str(work_dir / "cdc")
    props = {"name": "cdc", "delta.table.path": path, "insert.mode": "upsert", "pk.mode": "record_key",
             "delete.enabled": "true"}
    tp = TopicPartition("cdc", 0)
    task, _ = start_task(props, [tp])
    task.put_dataframe(frame(spark, [("cdc", 0, 0, (1,), (1, "a", "false")), ("cdc", 0, 1, (2,), (2, "b", "false")),
                                     ("cdc", 0, 2, (3,), (3, "c", "false"))], REWRITTEN, ID_KEY), 0)
    task.put_dataframe(_rewrite_mode_changes(spark, "cdc"), 1)
    table = spark.read.format("delta").load(path)
    assert table.columns == ["id", "name"]  # the marker steers the change and is not a column
    assert sorted((r.id, r.name) for r in table.collect()) == [(1, "a2"), (3003, "c")]
    ops = [r.operation for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert ops == ["WRITE", "MERGE"]


def test_without_delete_enabled_the_delete_marker_is_a_column_and_tombstones_are_skipped(spark, work_dir):
    path = str(work_dir / "soft")
    props = {"name": "soft", "delta.table.path": path, "insert.mode": "upsert", "pk.mode": "record_key"}
    task, _ = start_task(props, [TopicPartition("soft", 0)])
    task.put_dataframe(_rewrite_mode_changes(spark, "soft"), 0)
    got = sorted((r.id, r.name, r["__deleted"]) for r in spark.read.format("delta").load(path).collect())
    assert got == [(1, "a2", "false"), (2, "b", "true"), (3, "c", "true"), (4, "d", "true"), (5, "e", "true"),
                   (3003, "c", "false")]


def test_auto_evolve_off_names_the_field_and_on_adds_the_column(spark, work_dir):
    path = str(work_dir / "evolving")
    tp = TopicPartition("ev", 0)
    wider = StructType(ORDER.fields + [StructField("note", StringType())])
    strict, _ = start_task({"name": "ev", "delta.table.path": path}, [tp])
    strict.put_dataframe(frame(spark, [("ev", 0, 0, None, (1, 1))], ORDER), 0)
    with pytest.raises(SchemaMismatch, match="note.*auto.evolve=true"):
        strict.put_dataframe(frame(spark, [("ev", 0, 1, None, (2, 2, "hi"))], wider), 1)
    evolving, context = start_task({"name": "ev", "delta.table.path": path, "auto.evolve": "true"}, [tp])
    assert context.take_pending_offsets() == {tp: 1}
    evolving.put_dataframe(frame(spark, [("ev", 0, 1, None, (2, 2, "hi"))], wider), 1)
    got = sorted((r.id, r.note) for r in spark.read.format("delta").load(path).collect())
    assert got == [(1, None), (2, "hi")]


def test_topic_template_routes_by_transformed_topic_with_upsert_and_partitioning(spark, work_dir):
    template = str(work_dir / "tables" / "${topic}")
    props = {"name": "routed", "delta.table.path": template, "partition.by": "region",
             "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"}
    tps = [TopicPartition("raw.a", 0), TopicPartition("raw.b", 0)]
    value = StructType([StructField("id", LongType()), StructField("region", StringType())])
    task, _ = start_task(props, tps)
    # As after a RegexRouter raw.(.*) -> $1: the frame's topic is the routed one, original_topic the source.
    task.put_dataframe(frame(spark, [("a", 0, 0, None, (1, "eu"), "raw.a"), ("a", 0, 1, None, (1, "us"), "raw.a"),
                                     ("b", 0, 0, None, (7, "eu"), "raw.b")], value), 0)
    a = spark.read.format("delta").load(str(work_dir / "tables" / "a")).collect()
    b = spark.read.format("delta").load(str(work_dir / "tables" / "b")).collect()
    assert [(r.id, r.region) for r in a] == [(1, "us")]
    assert [(r.id, r.region) for r in b] == [(7, "eu")]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{work_dir / 'tables' / 'a'}`").collect()[0]
    assert detail.partitionColumns == ["region"]
    assert stored_metadata(spark, str(work_dir / "tables" / "b"))[-1]["offsets"] == {"raw.b": {"0": 1}}
    # A fresh task learns routed tables at their first write and still drops what they hold.
    fresh, _ = start_task(props, tps)
    fresh.put_dataframe(frame(spark, [("b", 0, 0, None, (7, "xx"), "raw.b")], value), 0)
    assert [(r.id, r.region) for r in spark.read.format("delta").load(str(work_dir / "tables" / "b")).collect()] \
        == [(7, "eu")]


def test_primitive_values_catalog_table_and_optimize(spark, work_dir):
    props = {"name": "prims", "delta.table.name": "prims_${topic}", "delta.optimize.every.commits": "2",
             "delta.column.offset": "off"}
    tp = TopicPartition("p-1", 0)
    task, _ = start_task(props, [tp])
    task.put_dataframe(frame(spark, [("p-1", 0, 0, None, "x")], StringType()), 0)
    task.put_dataframe(frame(spark, [("p-1", 0, 1, None, "y")], StringType()), 1)
    assert sorted((r.value, r.off) for r in spark.table("prims_p_1").collect()) == [("x", 0), ("y", 1)]
    ops = [r.operation for r in DeltaTable.forName(spark, "prims_p_1").history().orderBy("version").collect()]
    assert ops[-1] == "OPTIMIZE"
    fresh, context = start_task(props, [tp])
    assert context.take_pending_offsets() == {tp: 2}  # found past the OPTIMIZE commit
    spark.sql("DROP TABLE prims_p_1")
