"""The change-data-capture benchmark's two arms, the tables they start from, and how their results are compared.

Used by ``jobs/bench_cdc.py``; both arms run in its process on one shared SparkSession (as ``jobs/bench_iceberg.py``
and ``jobs/bench_jdbc.py`` run theirs), one after the other, each into a Delta table of its own that
:func:`prefill_table` wrote the same way (the initial snapshot: every row at version 0):

* ``hand`` (:func:`run_hand`) — the job users write by hand: ``readStream.format("kafka")`` → ``from_json``
  with the envelope's schema → ``foreachBatch``: the last change per key (by partition and offset), one
  ``MERGE INTO`` (delete when ``op='d'``, update or insert otherwise), ``availableNow``;
* ``sink`` (:func:`run_sink`) — connect_spark's Delta sink with the usual CDC settings (Debezium's
  ``ExtractNewRecordState``, ``insert.mode=upsert``, ``pk.mode=record_key``, ``delete.enabled=true``),
  ``--available-now`` through the standalone worker (``run_standalone``, in this process).

:class:`CpuMeter` counts the CPU both spend: this process (the driver's Python) plus Spark's JVM and every
process under it (the Python workers), not the broker. :func:`fingerprint` reduces a table to its row count,
distinct ids and a checksum over its normalized columns, so the two tables and the expected one
(:func:`expected_table`) can be compared without collecting them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from jobs.bench.cdc_events import ROW_DDL, SOURCE_DDL, TABLE_COLUMNS, ChangeStream, spark_row_columns
from jobs.bench.process_metrics import ProcessTreeSampler, spark_jvm

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ENVELOPE_DDL", "KEY_DDL", "JSON_CONVERTER", "EXTRACT_NEW_RECORD_STATE", "Fingerprint", "CpuMeter",
           "prefill_table", "expected_table", "fingerprint", "run_hand", "run_sink", "sink_connector",
           "sink_unavailable_reason", "PathLog", "timed"]

log = logging.getLogger(__name__)

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
EXTRACT_NEW_RECORD_STATE = "io.debezium.transforms.ExtractNewRecordState"
#: The key's JSON (``{"schema": ..., "payload": {"id": ...}}``) as ``from_json`` reads it.
KEY_DDL = "payload STRUCT<id: BIGINT>"
#: The value's JSON: Debezium's envelope, every field of its payload.
ENVELOPE_DDL = (f"payload STRUCT<before: STRUCT<{ROW_DDL}>, after: STRUCT<{ROW_DDL}>, source: STRUCT<{SOURCE_DDL}>, "
                "transaction: STRUCT<id: STRING, total_order: BIGINT, data_collection_order: BIGINT>, op: STRING, "
                "ts_ms: BIGINT, ts_us: BIGINT, ts_ns: BIGINT>")


def prefill_table(spark: "SparkSession", path: Path, rows: int, files: int) -> None:
    """Write the initial table: ids ``0 .. rows-1`` at version 0, in id order, ``files`` files."""
    from pyspark.sql import functions as F

    frame = spark.range(0, rows, 1, max(1, files)).select(*spark_row_columns(F.col("id"), F.lit(0)))
    frame.write.format("delta").save(str(path))


def expected_table(spark: "SparkSession", stream: ChangeStream) -> "DataFrame":
    """The table ``stream`` leaves behind: the initial rows, minus the deleted, at their last version, plus the
    inserted."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F

    changed, versions = stream.expected_versions()
    untouched = np.arange(stream.rows, dtype=np.int64)
    gone = np.fromiter(set(changed) | stream.deleted, dtype=np.int64)
    untouched = untouched[~np.isin(untouched, gone)]
    ids = np.concatenate([untouched, np.asarray(changed, dtype=np.int64)])
    all_versions = np.concatenate([np.zeros(untouched.size, dtype=np.int64), np.asarray(versions, dtype=np.int64)])
    frame = spark.createDataFrame(pa.table({"id": ids, "version": all_versions}))
    return frame.select(*spark_row_columns(F.col("id"), F.col("version")))


@dataclass(frozen=True)
class Fingerprint:
    """A table reduced for comparison; ``columns`` are its columns with their Spark types."""

    rows: int
    distinct_ids: int
    checksum: int
    columns: tuple[tuple[str, str], ...]

    def same_rows(self, other: "Fingerprint") -> bool:
        return (self.rows, self.distinct_ids, self.checksum) == (other.rows, other.distinct_ids, other.checksum)

    def describe(self) -> str:
        return f"{self.rows:,} rows, {self.distinct_ids:,} distinct ids, checksum {self.checksum}"


def fingerprint(frame: "DataFrame") -> Fingerprint:
    """Row count, distinct ids and the sum of ``xxhash64`` over the :data:`TABLE_COLUMNS` as text (a
    timestamp held as µs is read as one; a missing column hashes as null, and shows in ``columns``)."""
    from pyspark.sql import functions as F

    types = dict(frame.dtypes)
    normalized = []
    for name, _ in TABLE_COLUMNS:
        if name not in types:
            normalized.append(F.lit(None).cast("string"))
            continue
        column = F.col(name)
        if name == "updated_at" and types[name] in ("bigint", "int"):
            column = F.timestamp_micros(column).cast("timestamp_ntz")
        normalized.append(column.cast("string"))
    row = frame.agg(F.count(F.lit(1)), F.count_distinct("id"),
                    F.sum(F.xxhash64(*normalized).cast("decimal(38,0)"))).first()
    return Fingerprint(row[0], row[1], int(row[2] or 0), tuple(frame.dtypes))


class CpuMeter:
    """CPU-seconds of this process and of Spark's JVM with everything under it, from :meth:`start` to
    :meth:`stop` (the JVM tree sampled every 0.25 s, so short-lived Python workers count)."""

    def __init__(self) -> None:
        self._jvm = spark_jvm()
        self._sampler: ProcessTreeSampler | None = None
        self._tree_start = self._self_start = 0.0

    def start(self) -> "CpuMeter":
        if self._jvm is not None:
            self._sampler = ProcessTreeSampler(self._jvm.pid).start()
            self._tree_start = self._sampler.snapshot_cpu()
        self._self_start = _own_cpu()
        return self

    def stop(self) -> float:
        own = _own_cpu() - self._self_start
        tree = (self._sampler.stop().cpu_seconds - self._tree_start) if self._sampler is not None else 0.0
        return own + tree


def _own_cpu() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system


def run_hand(spark: "SparkSession", bootstrap: str, topic: str, table: Path, checkpoint: Path,
             max_offsets: int) -> None:
    """The hand-written job (see the module docstring), until the topic is drained."""
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    events = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max_offsets)).load()
              .where(F.col("value").isNotNull())  # a tombstone follows its delete, which did the work
              .select("partition", "offset",
                      F.from_json(F.col("key").cast("string"), KEY_DDL)["payload"]["id"].alias("id"),
                      F.from_json(F.col("value").cast("string"), ENVELOPE_DDL)["payload"].alias("e")))
    target = DeltaTable.forPath(spark, str(table))
    after = F.col("e.after")
    # numeric(12,2) arrives as base64 two's complement bytes of the unscaled value (positive here), timestamp as µs
    total = (F.conv(F.hex(F.unbase64(after["total"])), 16, 10).cast("decimal(12,0)") / 100).cast("decimal(12,2)")
    row = [F.col("id"), after["customer"].alias("customer"), after["status"].alias("status"),
           after["quantity"].alias("quantity"), after["unit_price"].alias("unit_price"), total.alias("total"),
           after["note"].alias("note"),
           F.timestamp_micros(after["updated_at"]).cast("timestamp_ntz").alias("updated_at")]
    values = {name: f"s.{name}" for name, _ in TABLE_COLUMNS}

    def upsert(batch: "DataFrame", batch_id: int) -> None:
        latest = Window.partitionBy("id").orderBy(F.col("partition").desc(), F.col("offset").desc())
        changes = (batch.withColumn("n", F.row_number().over(latest)).where("n = 1")
                   .select(F.col("e.op").alias("op"), *row))
        (target.alias("t").merge(changes.alias("s"), "t.id = s.id")
         .whenMatchedDelete("s.op = 'd'")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition="s.op != 'd'", values=values)
         .execute())

    query = (events.writeStream.foreachBatch(upsert).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()


def sink_connector(name: str, topic: str, table: Path) -> dict[str, str]:
    """The Delta sink's configuration for Debezium's change events, as a user writes it."""
    return {"name": name, "connector.class": "DeltaSink", "topics": topic,
            "delta.table.path": str(table), "insert.mode": "upsert", "pk.mode": "record_key",
            "delete.enabled": "true", "transforms": "unwrap", "transforms.unwrap.type": EXTRACT_NEW_RECORD_STATE,
            "key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER}


def sink_unavailable_reason() -> str | None:
    """None when the sink arm can run; else why not (Debezium's transform does not resolve)."""
    from connect_spark import plugins

    try:
        plugins.resolve("transform", EXTRACT_NEW_RECORD_STATE, "transforms.unwrap.type")
    except Exception as e:  # a module not there yet
        return f"{EXTRACT_NEW_RECORD_STATE} does not resolve ({str(e).splitlines()[0][:160]})"
    return None


def run_sink(spark: "SparkSession", bootstrap: str, topic: str, table: Path, work: Path, name: str,
             max_offsets: int) -> int:
    """The Delta sink, ``--available-now``, until the topic is drained; its exit code."""
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties

    worker = worker_properties(bootstrap, work, key_converter=JSON_CONVERTER, value_converter=JSON_CONVERTER,
                               task_execution_mode="executor", max_offsets_per_trigger=max_offsets,
                               offset_flush_interval_ms=1000)
    return run_standalone(worker, [sink_connector(name, topic, table)], available_now=True, spark=spark)


class PathLog(logging.Handler):
    """Keeps connect_spark's INFO lines that say a connector or a batch took the per-record path, or that
    records went to ``errors.*``, while installed on the ``connect_spark`` logger (``with PathLog() as path:``)."""

    MARKERS = ("per-record", "per record", "vectoriz", "did not match", "went to errors")

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(marker in message for marker in self.MARKERS):
            self.lines.append(f"{record.name}: {message}")

    def __enter__(self) -> "PathLog":
        logger = logging.getLogger("connect_spark")
        self._level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(self)
        return self

    def __exit__(self, *_: object) -> None:
        logger = logging.getLogger("connect_spark")
        logger.removeHandler(self)
        logger.setLevel(self._level)


def timed(action) -> tuple[float, float, object]:
    """``(wall seconds, CPU-seconds, result)`` of ``action()``."""
    meter = CpuMeter().start()
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, meter.stop(), result
