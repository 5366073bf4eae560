"""The Iceberg sink against real Spark and real Iceberg tables (a Hadoop catalog in a temporary warehouse).

Frames are built with the record-frame columns the runtime hands to ``put_dataframe``; the task context is
the runtime's own ``WorkerSinkTaskContext``. Tables are read back with Spark and, independently of Spark,
with pyiceberg from their metadata files; the snapshot summaries are checked for the stored offsets.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import functions as F
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

from connect_spark.api.errors import DataException
from connect_spark.config.definition import ConfigValidationError
from connect_spark.api.records import TopicPartition
from connect_spark.connectors.iceberg import IcebergSinkTask
from connect_spark.connectors.iceberg.catalog import register_catalog
from connect_spark.connectors.iceberg.config import IcebergSinkConfig
from connect_spark.connectors.iceberg.target import TableTarget
from connect_spark.connectors.iceberg.writer import SchemaMismatch, TableMissing, table_schema
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext
from tests.integration.frame_batches import deliver_clean_then_mixed, deliver_frame, order_json, plan_frames, raw_row

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
ORDER = StructType([StructField("id", LongType()), StructField("amount", LongType())])


def frame(spark, records, value_type, key_type=StringType()):
    """A record frame: ``records`` are (topic, partition, offset, key, value)."""
    schema = StructType([
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestamp_type", IntegerType()), StructField("key", key_type),
        StructField("value", value_type), StructField("headers", HEADERS),
        StructField("original_topic", StringType()), StructField("original_partition", IntegerType()),
        StructField("original_offset", LongType()),
    ])
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(t, p, o, base + dt.timedelta(seconds=o), 0, k, v, [], t, p, o) for t, p, o, k, v in records]
    return spark.createDataFrame(rows, schema)


def catalog_props(work_dir: Path, **more) -> dict[str, str]:
    """A Hadoop catalog in ``work_dir`` under a name of its own (catalogs are session-wide)."""
    props = {"name": f"ice-{uuid.uuid4().hex[:6]}", "iceberg.catalog": f"ice_{uuid.uuid4().hex[:8]}",
             "iceberg.catalog.type": "hadoop", "iceberg.catalog.warehouse": str(work_dir / "warehouse")}
    props.update(more)
    return props


def start_task(props, partitions):
    task = IcebergSinkTask()
    context = WorkerSinkTaskContext(props)
    task.initialize(context)
    task.start(props)
    context.set_assignment(set(partitions))
    task.open(partitions)
    return task, context


def table_of(props, name):
    return f"{props['iceberg.catalog']}.{name}"


def stored(spark, props, name):
    """The connector's offsets property of each snapshot, oldest first (None where absent)."""
    key = f"connect-spark.offsets.{props['name']}"
    rows = spark.sql(f"SELECT summary FROM {table_of(props, name)}.snapshots ORDER BY committed_at").collect()
    return [json.loads(r.summary[key]) if key in r.summary else None for r in rows]


def pyiceberg_rows(work_dir: Path, name: str) -> list[dict]:
    """The table read without Spark: pyiceberg from the newest metadata file of the Hadoop table."""
    namespace, table = name.split(".")
    metadata = sorted((work_dir / "warehouse" / namespace / table / "metadata").glob("v*.metadata.json"),
                      key=lambda p: int(p.name[1:].split(".")[0]))[-1]
    return StaticTable.from_metadata(str(metadata)).scan().to_arrow().to_pylist()


def test_append_auto_create_partitioned_offsets_in_snapshot_and_pyiceberg_reads_it(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables": "db.orders", "iceberg.tables.auto-create-enabled": "true",
                                       "iceberg.tables.default-partition-by": "bucket(4, id)",
                                       "iceberg.tables.auto-create-props.format-version": "2"})
    tps = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task, context = start_task(props, tps)
    assert context.take_pending_offsets() == {}  # no table yet: nothing to rewind
    task.put_dataframe(frame(spark, [("orders", 0, 0, "a", (1, 10)), ("orders", 0, 1, "b", (2, 20)),
                                     ("orders", 1, 5, "c", (3, 30)), ("orders", 1, 6, "t", None)], ORDER), 0)
    assert task.pre_commit({tps[0]: 2, tps[1]: 7}) == {tps[0]: 2, tps[1]: 7}
    got = spark.table(table_of(props, "db.orders")).orderBy("id").collect()
    assert [(r.id, r.amount) for r in got] == [(1, 10), (2, 20), (3, 30)]  # the tombstone: no id columns, skipped
    assert stored(spark, props, "db.orders")[-1] == {"v": 1, "sequence": 1,
                                                      "offsets": {"orders": {"0": 2, "1": 7}}}
    spec = spark.sql(f"SELECT * FROM {table_of(props, 'db.orders')}.partitions").columns
    assert "partition" in spec
    # Independently of Spark: pyiceberg reads the same rows and the same snapshot property.
    assert sorted((r["id"], r["amount"]) for r in pyiceberg_rows(work_dir, "db.orders")) == [(1, 10), (2, 20), (3, 30)]
    task.stop()


def test_crash_before_offset_commit_rewinds_and_writes_nothing_twice(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables": "db.eo", "iceberg.tables.auto-create-enabled": "true"})
    tps = [TopicPartition("eo", 0), TopicPartition("eo", 1)]
    first = frame(spark, [("eo", 0, 0, "a", (1, 1)), ("eo", 0, 1, "b", (2, 2)), ("eo", 1, 0, "c", (3, 3))], ORDER)
    task, _ = start_task(props, tps)
    task.put_dataframe(first, 0)
    # "crash": no pre_commit, no offset commit. A fresh task opens and must resume from the table.
    fresh, context = start_task(props, tps)
    assert context.take_pending_offsets() == {tps[0]: 2, tps[1]: 1}
    fresh.put_dataframe(first, 0)  # the runtime re-delivers the same records (batch ids restart)
    assert spark.table(table_of(props, "db.eo")).count() == 3
    assert len([s for s in stored(spark, props, "db.eo") if s]) == 1  # the re-delivery made no commit
    overlapping = frame(spark, [("eo", 0, 1, "b", (2, 2)), ("eo", 0, 2, "d", (4, 4)), ("eo", 1, 0, "c", (3, 3))],
                        ORDER)
    fresh.put_dataframe(overlapping, 1)
    assert sorted(r.id for r in spark.table(table_of(props, "db.eo")).collect()) == [1, 2, 3, 4]
    assert stored(spark, props, "db.eo")[-1]["offsets"] == {"eo": {"0": 3, "1": 1}}


def test_upsert_on_id_columns_last_record_wins_and_tombstones_delete(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables": "db.customers", "iceberg.tables.auto-create-enabled": "true",
                                       "iceberg.tables.default-id-columns": "cid"})
    tp = TopicPartition("customers", 0)
    value = StructType([StructField("cid", StringType()), StructField("name", StringType()),
                        StructField("amount", LongType())])
    task, _ = start_task(props, [tp])
    task.put_dataframe(frame(spark, [("customers", 0, 0, "k1", ("k1", "ann", 1)),
                                     ("customers", 0, 1, "k2", ("k2", "bob", 2)),
                                     ("customers", 0, 2, "k1", ("k1", "ann", 3)),
                                     ("customers", 0, 3, "k3", ("k3", "cy", 4))], value), 0)
    got = {r.cid: (r.name, r.amount) for r in spark.table(table_of(props, "db.customers")).collect()}
    assert got == {"k1": ("ann", 3), "k2": ("bob", 2), "k3": ("cy", 4)}
    # Tombstones carry the id in the key (a primitive key, one id column). The runtime's frames carry a
    # non-deterministic barrier (spark_partition_id), which MERGE refuses unless the sink materialises its source.
    second = frame(spark, [("customers", 0, 4, "k2", ("k2", "bob", 20)), ("customers", 0, 5, "k2", None),
                           ("customers", 0, 6, "k3", None), ("customers", 0, 7, "k3", ("k3", "cy", 40)),
                           ("customers", 0, 8, "k1", None)], value)
    task.put_dataframe(second.where(F.spark_partition_id() >= 0), 1)
    got = {r.cid: (r.name, r.amount) for r in spark.table(table_of(props, "db.customers")).collect()}
    assert got == {"k3": ("cy", 40)}  # k2: update then tombstone; k3: tombstone then re-insert; k1 deleted
    assert stored(spark, props, "db.customers")[-1]["offsets"] == {"customers": {"0": 9}}
    assert [(r["cid"], r["amount"]) for r in pyiceberg_rows(work_dir, "db.customers")] == [("k3", 40)]


def test_cdc_field_deletes_and_rewrite_mode_markers_delete_without_becoming_columns(spark, work_dir):
    """Iceberg's iceberg.tables.cdc-field (here ExtractNewRecordState's add.fields=op) and the rewrite-mode
    delete marker: the shared change rules, with a key moved from 3 to 3003."""
    props = catalog_props(work_dir, **{"iceberg.tables": "db.cdc", "iceberg.tables.auto-create-enabled": "true",
                                       "iceberg.tables.default-id-columns": "id", "iceberg.tables.cdc-field": "__op",
                                       "iceberg.tables.upsert-mode-enabled": "true"})
    value = StructType([StructField("id", LongType()), StructField("name", StringType()),
                        StructField("__op", StringType()), StructField("__deleted", StringType())])
    task, _ = start_task(props, [TopicPartition("cdc", 0)])
    task.put_dataframe(frame(spark, [("cdc", 0, 0, "1", (1, "a", "r", "false")), ("cdc", 0, 1, "2", (2, "b", "r", "false")),
                                     ("cdc", 0, 2, "3", (3, "c", "c", "false"))], value), 0)
    changes = frame(spark, [("cdc", 0, 3, "1", (1, "a2", "u", "false")), ("cdc", 0, 4, "2", (2, "b", "d", "false")),
                            ("cdc", 0, 5, "3", (3, "c", "u", "true")), ("cdc", 0, 6, "3003", (3003, "c", "c", "false"))],
                    value)
    task.put_dataframe(changes.where(F.spark_partition_id() >= 0), 1)
    table = spark.table(table_of(props, "db.cdc"))
    assert table.columns == ["id", "name", "__op"]  # Iceberg's cdc field stays a column, the marker does not
    assert sorted((r.id, r.name) for r in table.collect()) == [(1, "a2"), (3003, "c")]


def test_cdc_field_without_id_columns_is_refused_naming_the_key():
    with pytest.raises(ConfigValidationError, match="iceberg.tables.cdc-field"):
        IcebergSinkConfig.parse({"iceberg.tables": "db.t", "iceberg.tables.cdc-field": "__op"})


def test_static_routing_by_field_regex_and_unroutable_records_fail_without_a_reporter(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables": "db.eu,db.us", "iceberg.tables.auto-create-enabled": "true",
                                       "iceberg.tables.route-field": "region",
                                       "iceberg.table.db.eu.route-regex": "eu-.*",
                                       "iceberg.table.db.us.route-regex": "us-.*|na"})
    tp = TopicPartition("sales", 0)
    value = StructType([StructField("id", LongType()), StructField("region", StringType())])
    task, _ = start_task(props, [tp])
    task.put_dataframe(frame(spark, [("sales", 0, 0, None, (1, "eu-west")), ("sales", 0, 1, None, (2, "us-east")),
                                     ("sales", 0, 2, None, (3, "na")), ("sales", 0, 3, None, (4, "eu-north"))],
                             value), 0)
    assert sorted(r.id for r in spark.table(table_of(props, "db.eu")).collect()) == [1, 4]
    assert sorted(r.id for r in spark.table(table_of(props, "db.us")).collect()) == [2, 3]
    assert stored(spark, props, "db.eu")[-1]["offsets"] == {"sales": {"0": 4}}
    assert stored(spark, props, "db.us")[-1]["offsets"] == {"sales": {"0": 3}}
    with pytest.raises(DataException, match=r"sales\[0\]@4.*errors.tolerance"):
        task.put_dataframe(frame(spark, [("sales", 0, 4, None, (5, "apac"))], value), 1)


def test_dynamic_routing_reports_unroutable_records_to_the_errant_reporter(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "dest",
                                       "iceberg.tables.auto-create-enabled": "true"})
    tp = TopicPartition("events", 0)
    value = StructType([StructField("id", LongType()), StructField("dest", StringType())])
    reported = []

    class Reporter:
        def report(self, record, error):
            reported.append((record.kafka_offset, record.value, str(error)))

    task = IcebergSinkTask()
    context = WorkerSinkTaskContext(props, Reporter())
    task.initialize(context)
    task.start(props)
    context.set_assignment({tp})
    task.open([tp])
    task.put_dataframe(frame(spark, [("events", 0, 0, None, (1, "db.Clicks")), ("events", 0, 1, None, (2, "db.views")),
                                     ("events", 0, 2, None, (3, None)), ("events", 0, 3, None, (4, "db.clicks")),
                                     ("events", 0, 4, None, (5, "bad name!"))], value), 0)
    assert sorted(r.id for r in spark.table(table_of(props, "db.clicks")).collect()) == [1, 4]
    assert sorted(r.id for r in spark.table(table_of(props, "db.views")).collect()) == [2]
    assert sorted(o for o, _, _ in reported) == [2, 4]
    assert all("cannot be routed" in e for _, _, e in reported)


def test_schema_evolution_off_names_the_field_on_adds_it_and_missing_table_is_named(spark, work_dir):
    props = catalog_props(work_dir, **{"iceberg.tables": "db.ev"})
    tp = TopicPartition("ev", 0)
    with pytest.raises(TableMissing, match="db.ev.*auto-create-enabled=true"):
        start_task(props, [tp])
    props["iceberg.tables.auto-create-enabled"] = "true"
    strict, _ = start_task(props, [tp])
    strict.put_dataframe(frame(spark, [("ev", 0, 0, None, (1, 1))], ORDER), 0)
    wider = StructType(ORDER.fields + [StructField("note", StringType())])
    with pytest.raises(SchemaMismatch, match="note.*evolve-schema-enabled=true"):
        strict.put_dataframe(frame(spark, [("ev", 0, 1, None, (2, 2, "hi"))], wider), 1)
    props["iceberg.tables.evolve-schema-enabled"] = "true"
    evolving, context = start_task(props, [tp])
    assert context.take_pending_offsets() == {tp: 1}
    evolving.put_dataframe(frame(spark, [("ev", 0, 1, None, (2, 2, "hi"))], wider), 1)
    narrower = StructType([StructField("id", LongType())])  # a record without the later columns
    evolving.put_dataframe(frame(spark, [("ev", 0, 2, None, (3,))], narrower), 2)
    got = sorted((r.id, r.amount, r.note) for r in spark.table(table_of(props, "db.ev")).collect())
    assert got == [(1, 1, None), (2, 2, "hi"), (3, None, None)]
    assert sorted((r["id"], r["note"]) for r in pyiceberg_rows(work_dir, "db.ev")) == [(1, None), (2, "hi"), (3, None)]


def test_a_table_without_offsets_keeps_the_partition_unrewound(spark, work_dir):
    # As after a kill between the commits of two tables: db.a holds offsets, db.b none yet.
    props = catalog_props(work_dir, **{"iceberg.tables": "db.a", "iceberg.tables.auto-create-enabled": "true"})
    tp = TopicPartition("fan", 0)
    batch = frame(spark, [("fan", 0, 0, None, (1, 1)), ("fan", 0, 1, None, (2, 2))], ORDER)
    first, _ = start_task(props, [tp])
    first.put_dataframe(batch, 0)
    props["iceberg.tables"] = "db.a,db.b"
    fresh, context = start_task(props, [tp])
    assert context.take_pending_offsets() == {}  # a seek to 2 would lose db.b's records
    fresh.put_dataframe(batch, 0)  # re-delivered from the worker's committed offsets
    assert sorted(r.id for r in spark.table(table_of(props, "db.a")).collect()) == [1, 2]
    assert sorted(r.id for r in spark.table(table_of(props, "db.b")).collect()) == [1, 2]
    again, context = start_task(props, [tp])
    assert context.take_pending_offsets() == {tp: 2}


def test_rejected_rows_name_null_ids_only_for_tables_upserted_on_them(spark, work_dir):
    value = StructType([StructField("id", LongType()), StructField("dest", StringType())])
    records = [("t", 0, 0, None, (None, "db.orders")), ("t", 0, 1, None, (None, "db.logs")),
               ("t", 0, 2, None, (1, "db.orders")), ("t", 0, 3, None, (None, "DB.Orders"))]
    dynamic = catalog_props(work_dir, **{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "dest",
                                         "iceberg.tables.default-id-columns": "id",
                                         "iceberg.table.db.logs.id-columns": ""})
    static = catalog_props(work_dir, **{"iceberg.tables": "db.orders,db.logs", "iceberg.tables.route-field": "dest",
                                        "iceberg.table.db.orders.route-regex": "(?i)db\\.orders",
                                        "iceberg.table.db.orders.id-columns": "id",
                                        "iceberg.table.db.logs.route-regex": "db\\.logs"})
    for props in (dynamic, static):
        task = IcebergSinkTask()
        task.start(props)
        rows = frame(spark, records, value)
        reasons = {r.offset: r.reason for r in rows.select("offset", task.rejected_rows(rows).alias("reason")).collect()}
        assert reasons == {0: "the id column 'id' is null", 1: None, 2: None, 3: "the id column 'id' is null"}, props


def _one_pass_setup(spark, work_dir, tmp_path):
    """The runtime's frame path (a schemaless JSON plan) feeding an Iceberg task that writes one table."""
    frames = plan_frames(spark, tmp_path)
    props = catalog_props(work_dir, **{"iceberg.tables": "db.orders", "iceberg.tables.auto-create-enabled": "true"})
    task, _ = start_task(props, [TopicPartition("orders", 0), TopicPartition("orders", 1)])
    return frames, task, props


def _plain_iceberg_append_jobs(spark, work_dir) -> int:
    """Spark jobs of one plain ``writeTo(...).append()`` of a small frame to an existing Iceberg table."""
    props = catalog_props(work_dir)
    register_catalog(spark, IcebergSinkConfig.parse({**props, "iceberg.tables": "db.plain"}))
    table = table_of(props, "db.plain")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {props['iceberg.catalog']}.db")
    spark.sql(f"CREATE TABLE {table} (a int) USING iceberg")
    group = f"plain-iceberg-{uuid.uuid4().hex}"  # job groups outlive a test in the shared session
    spark.sparkContext.setJobGroup(group, "a plain append")
    try:
        spark.createDataFrame([(1,)], "a int").writeTo(table).append()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_a_batch_for_one_table_is_one_spark_job_and_stores_the_given_offsets(spark, work_dir, tmp_path):
    frames, task, props = _one_pass_setup(spark, work_dir, tmp_path)
    assert task.writes_atomically()
    # no table yet and nothing for it (every record of the batch dropped): nothing is created
    task.put_dataframe_batch(frame(spark, [], ORDER), 0, {TopicPartition("orders", 0): (0, 5)})
    assert table_schema(spark, TableTarget(props["iceberg.catalog"], "db.orders")) is None
    # the first batch with records creates the table, its offsets too as the runtime gives them
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0, extra_end=1)
    assert stored(spark, props, "db.orders")[-1] == {"v": 1, "sequence": 1, "offsets": {"orders": {"0": 20, "1": 21}}}
    # a range may end past its last row (a record a transform dropped): the snapshot stores it as given
    _, jobs = deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)], 1,
                            extra_end=3)
    assert len(jobs) == _plain_iceberg_append_jobs(spark, work_dir), f"more than the append's own jobs: {jobs}"
    assert (frames.one_pass_batches, frames.checked_batches) == (2, 0)
    assert stored(spark, props, "db.orders")[-1] == {"v": 1, "sequence": 2, "offsets": {"orders": {"0": 42, "1": 43}}}
    assert sorted(r.id for r in spark.table(table_of(props, "db.orders")).collect()) == list(range(40))
    # a batch routed to several tables spreads over several commits, and an upsert reads its batch several
    # times: both take the runtime's checked way (the batch cached) instead
    for other in ({"iceberg.tables": "db.a,db.b"}, {"iceberg.tables.default-id-columns": "id"}):
        other_task = IcebergSinkTask()
        other_task.start({**props, **other})
        assert not other_task.writes_atomically(), other


def test_rows_for_the_per_record_path_reach_the_table_in_one_snapshot(spark, work_dir, tmp_path):
    frames, task, props = _one_pass_setup(spark, work_dir, tmp_path)
    deliver_clean_then_mixed(spark, frames, task)  # order 23 survives the per-record path, 24 fails it
    assert (frames.one_pass_batches, frames.checked_batches, frames.fallback_rows) == (1, 1, 2)
    snapshots = [s for s in stored(spark, props, "db.orders") if s]  # the table's creation stores none
    assert len(snapshots) == 2, f"the abandoned one-pass write must not commit: {snapshots}"
    assert snapshots[-1]["offsets"] == {"orders": {"0": 39, "1": 40}}
    table = {r.id: r for r in spark.table(table_of(props, "db.orders")).collect()}
    assert sorted(table) == [i for i in range(40) if i != 24]
    assert table[23].price == 7.0
