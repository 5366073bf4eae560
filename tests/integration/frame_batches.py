"""Raw Kafka batches and the runtime's frame path, shared by the tests of the columnar plan and of the sinks
that take it (Delta, Iceberg).

A raw batch has the Kafka source's columns (:data:`~connect_spark.streaming.raw_batch.RAW_DDL`). :func:`plan_frames` builds the runtime's
:class:`~connect_spark.runtime.processors.dataframe_batches.FrameBatches` for a schemaless JSON connector, and
:func:`deliver_frame` hands a batch through it to a ``DataFrameSinkTask`` as the runner does.
"""

from __future__ import annotations

import uuid

from connect_spark.columnar.plan import batch_offset_ranges, compile_plan
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.conversion.sink_records import raw_records
from connect_spark.runtime.processors.dataframe_batches import FrameBatches
from connect_spark.runtime.processors.fallback_in_write import InWriteConversion
from connect_spark.runtime.tasks.builder import build_task_plugins
from connect_spark.streaming.raw_batch import RAW_ARROW_SCHEMA, RAW_COLUMNS, RAW_DDL
from connect_spark.testing.harness import worker_properties

__all__ = ["SCHEMALESS", "raw_row", "plan_connector", "plan_and_per_record", "order_json", "plan_frames",
           "open_delta_task", "delta_offsets_history", "deliver_frame", "deliver_clean_then_mixed",
           "plain_delta_write_jobs"]


SCHEMALESS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}


def raw_row(i: int, value: bytes | None, key: bytes | None = None, headers=None, ts: int | None = 1_700_000_000_000,
            topic: str = "orders") -> tuple:
    """Record ``i`` of a raw batch: partition ``i % 2``, offset ``i``."""
    return (topic, i % 2, i, ts, 0 if ts is not None else -1, key, value, headers or [])


def plan_connector(tmp_path, bootstrap: str = "127.0.0.1:9", **props: str) -> tuple[ConnectorConfig, WorkerConfig]:
    """A connector on ``orders`` that tolerates every error, and a worker on ``bootstrap`` (a broker that
    never answers unless a test needs one: a dead letter queue), for compiling a plan."""
    worker = WorkerConfig(worker_properties(bootstrap, tmp_path))
    connector = ConnectorConfig({"name": "vec", "connector.class": "connect_spark.testing.recording.RecordingSinkConnector",
                                 "topics": "orders", "errors.tolerance": "all", **props})
    return connector, worker


def plan_and_per_record(spark, tmp_path, rows: list[tuple], frame_task: bool, **props: str):
    """The raw ``rows`` (:func:`raw_row`) through a schemaless JSON connector's plan and through its per-record
    converter: the plan's good frame (an Arrow table), the offsets of the rows that fall back, and every
    row's record converted per record."""
    import pyarrow as pa

    connector, worker = plan_connector(tmp_path, **{**SCHEMALESS, **props})
    plan = compile_plan(connector, worker, frame_task=frame_task)
    assert plan is not None
    out = plan.apply(spark.createDataFrame(rows, RAW_DDL))
    good = out.good.toArrow()
    fallback = sorted(out.fallback.toArrow().column("offset").to_pylist())
    converter = build_task_plugins(connector, worker, 0).converter
    raw = pa.Table.from_pylist([dict(zip(RAW_COLUMNS, r)) for r in rows], RAW_ARROW_SCHEMA)
    return good, fallback, converter.convert(raw_records(raw)).records


def order_json(i: int, price: str = "%d.5") -> bytes:
    """An order's JSON value; ``price`` is its text (``%d`` takes ``i``)."""
    return ('{"id":%d,"user":"u-%d","price":%s,"tags":[1,2]}' % (i, i, price % i if "%" in price else price)).encode()


def plan_frames(spark, tmp_path, in_write: bool = False, frame_task: bool = False, bootstrap: str = "127.0.0.1:9",
                **props: str) -> FrameBatches:
    """The frame path of a schemaless JSON connector on ``orders`` (``props`` added to its configuration);
    ``in_write``: rows that fall back are converted inside the one-pass write, as the runtime does on a
    classic session of Spark 4.1 and later, instead of taking the checked way; ``frame_task``: the plan is
    compiled as the runtime's DataFrame processor compiles it (``compile_plan(..., frame_task=True)``);
    ``bootstrap``: the worker's brokers (see :func:`plan_connector`)."""
    connector, worker = plan_connector(tmp_path, bootstrap, **{**SCHEMALESS, **props})
    conversion = (InWriteConversion(spark, connector.resolved, worker.resolved, uuid.uuid4().hex) if in_write
                  else None)
    return FrameBatches(spark, compile_plan(connector, worker, frame_task=frame_task),
                        build_task_plugins(connector, worker, 0).converter, in_write=conversion)


def open_delta_task(path: str, name: str, **props: str):
    """A started Delta sink task writing ``path`` (offsets in ``kafka_offset``), open on ``orders`` 0 and 1."""
    from connect_spark.api.records import TopicPartition
    from connect_spark.connectors.delta import DeltaSinkTask
    from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

    task_props = {"name": name, "delta.table.path": path, "delta.column.offset": "kafka_offset", **props}
    task = DeltaSinkTask()
    task.initialize(WorkerSinkTaskContext(task_props))
    task.start(task_props)
    tps = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    task.context.set_assignment(set(tps))
    task.open(tps)
    return task


def delta_offsets_history(spark, path: str) -> list[dict]:
    """The offsets each commit of the Delta table at ``path`` stored, oldest first."""
    import json

    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    return [json.loads(r["userMetadata"])["connect_spark"]["offsets"] for r in rows]


def deliver_frame(spark, frames: FrameBatches, task, rows, batch_id: int, extra_end: int = 0,
                  spark_partitions: int | None = None):
    """One batch of raw ``rows`` through ``frames`` into ``task.put_dataframe_batch``; ranges may end
    ``extra_end`` past the last row; ``spark_partitions``: the batch's Spark partitions (one task each), as
    ``createDataFrame`` slices it by default. Returns the ranges and the ids of the Spark jobs the batch ran."""
    raw = spark.createDataFrame(rows, RAW_DDL)
    if spark_partitions is not None:
        raw = raw.coalesce(spark_partitions)
    ranges = {tp: (start, end + extra_end) for tp, (start, end) in batch_offset_ranges(raw).items()}
    group = f"one-pass-{batch_id}-{uuid.uuid4().hex}"  # job groups outlive a test in the shared session
    spark.sparkContext.setJobGroup(group, "a frame batch")
    try:
        frames.deliver(raw, ranges, lambda frame: task.put_dataframe_batch(frame, batch_id, ranges),
                       task.writes_atomically())
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return ranges, spark.sparkContext.statusTracker().getJobIdsForGroup(group)


def deliver_clean_then_mixed(spark, frames: FrameBatches, task) -> None:
    """Orders 0-19 (clean), then 20-39 where order 23's price is an integer (the plan cannot prove it, it
    survives the per-record path) and order 24's is ``NaN`` (fails per record: dropped under
    ``errors.tolerance=all``)."""
    deliver_frame(spark, frames, task, [raw_row(i, order_json(i), key=b"k") for i in range(20)], 0)
    rows = [raw_row(i, order_json(i), key=b"k") for i in range(20, 40)]
    rows[3] = raw_row(23, order_json(23, "7"), key=b"k")
    rows[4] = raw_row(24, order_json(24, "NaN"), key=b"k")
    deliver_frame(spark, frames, task, rows, 1)


def plain_delta_write_jobs(spark, tmp_path) -> int:
    """Spark jobs of one plain append (with a transaction id, as the sink) to an existing Delta table:
    the write itself plus Delta's own look-up of the table's transaction ids (3 small jobs in Delta 4.0)."""
    path = str(tmp_path / "plain")

    def append(version: int) -> None:
        (spark.createDataFrame([(version,)], "a int").write.format("delta").mode("append")
         .option("txnAppId", "plain").option("txnVersion", str(version)).save(path))

    append(1)
    group = f"plain-delta-{uuid.uuid4().hex}"  # job groups outlive a test in the shared session
    spark.sparkContext.setJobGroup(group, "a plain append")
    try:
        append(2)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
