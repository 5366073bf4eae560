"""Builds the record frame a :class:`~connect_spark.api.bulk.DataFrameSinkTask` receives, per micro-batch.

Called by the connector runner on the driver, inside ``foreachBatch``. The raw batch is persisted once
(it is read by the offsets aggregation, the vectorized plan and the per-record fallback), then:

* with a vectorized plan (:func:`connect_spark.columnar.plan.compile_plan`), the good rows stay a lazy
  Spark DataFrame and only the rows the plan could not prove convertible are collected and converted
  per record, under ``errors.*`` (tolerated ones go to the log / dead letter queue). When any of those
  survives conversion, the batch is rebuilt from records so the task still gets one frame in offset
  order (exactly-once sinks rely on that);
* without a plan (a custom transform, an unsupported converter), the batch is converted per record on
  the driver and handed over as a DataFrame built from Arrow.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect_spark.api.records import TopicPartition
from connect_spark.runtime.conversion import RecordConverter, raw_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FrameBatch", "build_frame_batch", "batch_offsets"]

log = logging.getLogger(__name__)


@dataclass
class FrameBatch:
    """A batch ready for ``put_dataframe``: the frame (``None`` when no record survived) and offsets."""

    frame: "DataFrame | None"
    first: dict[TopicPartition, int]
    consumed: dict[TopicPartition, int]


def batch_offsets(raw: "DataFrame") -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """First offset and next offset (``max + 1``) per partition of a raw batch, in one aggregation."""
    from pyspark.sql import functions as F

    rows = raw.groupBy("topic", "partition").agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()
    first = {TopicPartition(r["topic"], r["partition"]): r["lo"] for r in rows}
    consumed = {TopicPartition(r["topic"], r["partition"]): r["hi"] + 1 for r in rows}
    return first, consumed


def build_frame_batch(spark: "SparkSession", raw: "DataFrame", plan: Any, converter: RecordConverter) -> FrameBatch:
    """Convert a persisted raw batch into a record frame (see the module docstring)."""
    first, consumed = batch_offsets(raw)
    if not consumed:
        return FrameBatch(None, {}, {})
    if plan is not None:
        output = plan.apply(raw)
        fallback = output.fallback.toArrow()
        if fallback.num_rows == 0:
            return FrameBatch(output.good, first, consumed)
        survivors = converter.convert(raw_records(fallback)).records
        if not survivors:
            return FrameBatch(output.good, first, consumed)
        log.info("%d records of this batch needed the per-record path; the batch is handed over from records",
                 len(survivors))
        records = output.to_records(output.good.toArrow()) + survivors
    else:
        records = converter.convert(raw_records(raw.toArrow())).records
    if not records:
        return FrameBatch(None, first, consumed)
    from connect_spark.columnar.records import records_to_frame

    records.sort(key=lambda r: (r.original_topic, r.original_kafka_partition, r.original_kafka_offset))
    return FrameBatch(spark.createDataFrame(records_to_frame(records, converter.header_converter)), first, consumed)
