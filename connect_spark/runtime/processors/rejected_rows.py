"""Records a bulk task's frame cannot hold go where ``errors.*`` says, as records its ``put`` rejected.

Called by the runtime wherever a bulk task's frame is built from converted records (the Arrow tasks'
generations, the DataFrame tasks' batches) with the misfits
:func:`~connect_spark.columnar.records.fit_records_to_frame` set apart, and before each
``put_dataframe`` with the rows the task's ``rejected_rows`` names. Each one is reported through the
task's :class:`~connect_spark.runtime.errors.ErrorHandler` as a ``TASK_PUT`` failure (the errant record
reporter's path): logged when ``errors.log.enable``, written to the dead letter queue with its consumed
bytes and the ``__connect.errors.*`` headers, and skipped under ``errors.tolerance=all``; under ``none``
the first one fails the task. Its offset counts as consumed either way, and the task loop awaits the
dead letter queue writes before it commits offsets.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable

from connect_spark.api.errors import DataException
from connect_spark.api.records import SinkRecord
from connect_spark.runtime.errors import ErrorHandler, RawRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["report_misfits", "drop_rejected_rows", "guard_rejected_rows", "raw_rows"]

log = logging.getLogger(__name__)

_REASON = "__connect_rejected"


def report_misfits(handler: ErrorHandler, misfits: Iterable[tuple[SinkRecord, str]],
                   raw_of: Callable[[SinkRecord], RawRecord | None]) -> int:
    """Report each ``(record, reason)``; returns how many were reported.

    Raises:
        ToleranceExceededException: under ``errors.tolerance=none``, after reporting the first misfit.
    """
    count = 0
    for record, reason in misfits:
        handler.report_put_error(record, raw_of(record), DataException(reason))
        count += 1
    if count:
        log.info("%s: %d record(s) of this batch do not fit the bulk task's frame and went to errors.*",
                 handler.label, count)
    return count


def drop_rejected_rows(task: Any, frame: "DataFrame", raw: "DataFrame", handler: ErrorHandler) -> "DataFrame":
    """``frame`` without the rows ``task.rejected_rows`` names, which are reported (see the module docstring).

    Called by the runtime before ``put_dataframe``. Runs one Spark job over the frame when the task
    names a condition; the consumed bytes of rejected rows are read again from the raw batch ``raw``.
    """
    from pyspark.sql import functions as F

    condition = task.rejected_rows(frame)
    if condition is None:
        return frame
    marked = frame.withColumn(_REASON, condition)
    rejected = marked.where(F.col(_REASON).isNotNull()).select(
        "topic", "partition", "offset", "original_topic", "original_partition", "original_offset", _REASON).collect()
    if not rejected:
        return frame
    records = [SinkRecord(topic=r["topic"], kafka_partition=r["partition"], key_schema=None, key=None,
                          value_schema=None, value=None, kafka_offset=r["offset"], original_topic=r["original_topic"],
                          original_kafka_partition=r["original_partition"], original_kafka_offset=r["original_offset"])
               for r in rejected]
    raws = raw_rows(raw, [(r.original_topic, r.original_kafka_partition, r.original_kafka_offset) for r in records])
    report_misfits(handler, ((rec, f"{rec.coordinates()}: {row[_REASON]}") for rec, row in zip(records, rejected)),
                   lambda rec: raws.get((rec.original_topic, rec.original_kafka_partition, rec.original_kafka_offset)))
    return marked.where(F.col(_REASON).isNull()).drop(_REASON)


def guard_rejected_rows(task: Any, frame: "DataFrame") -> "DataFrame":
    """``frame`` whose computation raises (a Spark error whose message holds
    :data:`~connect_spark.columnar.plan.NEEDS_RECORD_PATH`) at the first row ``task.rejected_rows`` names.

    Called by the runtime instead of :func:`drop_rejected_rows` for a frame written in one pass: no Spark job
    runs before the write, which commits nothing when such a row raises; the batch is then handed over the
    checked way, where :func:`drop_rejected_rows` reports the rows from the persisted batch.
    """
    from pyspark.sql import functions as F

    from connect_spark.columnar.plan import NEEDS_RECORD_PATH

    condition = task.rejected_rows(frame)
    if condition is None:
        return frame
    row = F.concat(F.lit(NEEDS_RECORD_PATH + ": the task rejects "), F.col("original_topic"), F.lit("["),
                   F.col("original_partition").cast("string"), F.lit("]@"), F.col("original_offset").cast("string"))
    return frame.where(F.when(condition.isNull(), F.lit(True)).otherwise(F.raise_error(row)))


def raw_rows(raw: "DataFrame", coordinates: Iterable[tuple[str, int, int]]) -> dict[tuple[str, int, int], RawRecord]:
    """The consumed rows at ``coordinates`` (topic, partition, offset) read again from the raw batch ``raw``.

    For a few rows, on errors only: Spark reads the batch's Kafka ranges again.
    """
    from pyspark.sql import functions as F

    from connect_spark.runtime.conversion.sink_records import raw_records

    wanted: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in coordinates:
        wanted.setdefault((topic, partition), []).append(offset)
    if not wanted:
        return {}
    condition = None
    for (topic, partition), offsets in wanted.items():
        one = (F.col("topic") == topic) & (F.col("partition") == partition) & F.col("offset").isin(offsets)
        condition = one if condition is None else condition | one
    return {(r.topic, r.partition, r.offset): r for r in raw_records(raw.where(condition).toArrow())}
