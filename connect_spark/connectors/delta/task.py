"""The Delta sink task: each micro-batch becomes one Delta commit per table, exactly once.

How exactly-once works (ARCHITECTURE.md §5):

1. Every commit the task makes stores, in the same Delta commit, the next Kafka offset of every
   partition written to that table so far (``ledger.py``). They are known before the write: the
   runtime gives the batch's ranges from the query's offset log (``put_dataframe_batch``), so the
   write is the batch's only Spark job; a frame handed over without them is aggregated first.
2. ``open`` reads those offsets back and rewinds the assigned partitions with ``context.offset``, so
   the runtime resumes from what the table holds, not from ``connect-offsets``, which may lag behind
   (a crash between the Delta commit and the offset commit) or be lost.
3. ``put_dataframe(_batch)`` drops every record whose offset is below the table's stored next offset before
   writing. Re-delivered records are therefore never written twice, whatever Spark's batch id is
   (it restarts with each checkpoint generation, so it is not used).
4. ``put_dataframe(_batch)`` returns only after the commit, so everything handed over is in the table (or was
   skipped on purpose: tombstones without ``delete.enabled``) and ``pre_commit`` returns the
   offsets it was given.

With a ``${topic}`` template each table keeps its own offsets. ``open`` rewinds a partition to the lowest
offset any known table holds for it; the known tables are those named by the assigned topics and those
this task has written. A table a router creates under another name is learnt at its first write, where
step 3 still prevents duplicates.

A dead letter replay (:mod:`connect_spark.api.replay`) hands over records below the stored offsets on
purpose: while it is on, steps 2 and 3 are off and each table's commit stores the replay's position in
the dead letter topic instead of moving the offsets (``replay.py``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Collection, Mapping

from pyspark.sql import functions as F

from connect_spark.api.bulk import DataFrameSinkTask
from connect_spark.api.records import TopicPartition
from connect_spark.api.replay import DeadLetterBatch, ReplayAwareTask
from connect_spark.connectors.delta.config import DeltaSinkConfig
from connect_spark.connectors.delta.ledger import StoredOffsets, read_stored_offsets, replay_ledger_name
from connect_spark.connectors.delta.replay import held_records, without_records
from connect_spark.connectors.delta.rows import (
    data_columns,
    fit_to_table,
    key_columns,
    table_rows,
    table_type_misfits,
    unusable_key,
)
from connect_spark.connectors.delta.target import TableTarget, is_templated, target_for_topic
from connect_spark.connectors.delta.writer import compact, write_batch
from connect_spark.connectors.redelivery import not_yet_stored

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["DeltaSinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"


def _active_session() -> "SparkSession":
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


class DeltaSinkTask(DataFrameSinkTask, ReplayAwareTask):
    """Writes each micro-batch to Delta; see the module docstring for the offset protocol."""

    reads_headers = False  # rows hold key/value fields and Kafka coordinates, never headers

    def __init__(self) -> None:
        self.config: DeltaSinkConfig | None = None
        self._stored: dict[TableTarget, StoredOffsets] = {}
        self._commits: Counter[TableTarget] = Counter()
        self._schemas: dict[TableTarget, "StructType | None"] = {}
        self._replay: DeadLetterBatch | None = None
        self._replay_stored: dict[TableTarget, StoredOffsets] = {}  # the replay's own ledger, per table

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once, before ``open``: parses the configuration (no Spark work)."""
        self.config = DeltaSinkConfig.parse(props)
        self._stored.clear()
        self._commits.clear()
        self._schemas.clear()
        self._replay_stored.clear()

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are assigned: rewind them to the offsets the tables hold
        (not during a dead letter replay: its records lie below them on purpose)."""
        config = self._require_config()
        if self._replay is not None:
            return
        spark = _active_session()
        topics = sorted({tp.topic for tp in partitions})
        targets = [target_for_topic(config, t) for t in topics] if is_templated(config) else [
            target_for_topic(config, "")]
        for target in targets:
            self._stored_offsets(spark, target)
        seeks: dict[TopicPartition, int] = {}
        for tp in partitions:
            held = [stored.offsets[tp] for stored in self._stored.values() if tp in stored.offsets]
            if held:
                seeks[tp] = min(held)
        if seeks:
            log.info("%s: resuming from the offsets stored in Delta: %s", config.connector_name,
                     ", ".join(f"{tp}@{off}" for tp, off in sorted(seeks.items())))
            self.context.offset(seeks)

    def begin_replay(self, batch: DeadLetterBatch) -> None:
        """Called by the dead letter replay before ``start``: the records that follow are ``batch``'s letters."""
        self._replay = batch
        self._replay_stored.clear()

    def replay_position(self) -> dict[int, int]:
        """Called by the dead letter replay after ``open``: the position the one table holds. With a
        ``${topic}`` template a transform decides the table, so each table filters at its write (``{}``)."""
        config = self._require_config()
        if self._replay is None or is_templated(config):
            return {}
        stored = self._replay_ledger(_active_session(), target_for_topic(config, ""), self._replay)
        return dict(stored.replayed.get(self._replay.dlq_topic, {}))

    def end_replay(self) -> None:
        """Called by the dead letter replay after ``close``: back to ordinary batches."""
        self._replay = None
        self._replay_stored.clear()

    def rejected_rows(self, frame: "DataFrame") -> "Column | None":
        """Called by the runtime before ``put_dataframe``: records the table cannot take are record errors.

        In upsert mode, records without a usable key (no key, a null key field), never rows keyed by
        null; and a field whose type neither equals nor widens into the existing table's column (see
        ``rows.table_type_misfits``; with a ``${topic}`` template Delta checks the types at the write).
        """
        config = self._require_config()
        reasons = [unusable_key(frame, config)]
        table = self._table_schema(frame.sparkSession)
        if table is not None:
            reasons.append(table_type_misfits(frame, config, table))
        reasons = [r for r in reasons if r is not None]
        if not reasons:
            return None
        return reasons[0] if len(reasons) == 1 else F.coalesce(*reasons)

    def _table_schema(self, spark: "SparkSession") -> "StructType | None":
        """The schema of the (one, untemplated) table when it exists; cached until a write adds columns."""
        config = self._require_config()
        if is_templated(config):
            return None
        target = target_for_topic(config, "")
        if target not in self._schemas:
            table = target.frame_if_exists(spark)
            self._schemas[target] = table.schema if table is not None else None
        return self._schemas[target]

    def put_dataframe(self, frame: "DataFrame", batch_id: int) -> None:
        """Called by the runtime (or a test) on the driver per micro-batch when the batch's offset ranges are
        not given: they are aggregated from the frame first (one Spark job), then as :meth:`put_dataframe_batch`."""
        templated = is_templated(self._require_config())
        last_offsets = (frame.groupBy("topic", "original_topic", "original_partition")
                        .agg(F.max("original_offset").alias("last")).collect())
        by_topic: dict[str, dict[TopicPartition, int]] = {}
        for row in last_offsets:
            topic = row["topic"] if templated else ""
            tp = TopicPartition(row["original_topic"], row["original_partition"])
            written = by_topic.setdefault(topic, {})
            written[tp] = max(written.get(tp, 0), row["last"] + 1)
        self._write(frame, batch_id, by_topic)

    def put_dataframe_batch(self, frame: "DataFrame", batch_id: int,
                            offsets: Mapping[TopicPartition, tuple[int, int]]) -> None:
        """Called by the runtime on the driver per micro-batch: one commit per table with new records.

        With one table the commit stores the batch's next offsets as the runtime gives them, so the
        write is the batch's only Spark job. With a ``${topic}`` template the tables a batch reaches are
        only known from its rows: :meth:`put_dataframe` aggregates them first.
        """
        if is_templated(self._require_config()):
            self.put_dataframe(frame, batch_id)
        else:
            self._write(frame, batch_id, {"": {tp: end for tp, (_, end) in offsets.items()}},
                        {tp: start for tp, (start, _) in offsets.items()})

    def writes_atomically(self) -> bool:
        """Called by the runtime before each batch: one table takes a batch in one Delta commit (a write
        that fails leaves nothing visible); a ``${topic}`` template spreads it over several commits."""
        return not is_templated(self._require_config())

    def _write(self, frame: "DataFrame", batch_id: int, by_topic: Mapping[str, Mapping[TopicPartition, int]],
               firsts: Mapping[TopicPartition, int] | None = None) -> None:
        """One commit per table (``by_topic``: routed topic, or ``""`` for the one table, → next offsets).

        ``firsts``: the batch's first offset per partition when known; only partitions whose records start
        before what the table holds are filtered (a re-delivery), so a batch after the table's last commit
        carries no filter. ``None``: every partition the table holds is filtered. During a dead letter
        replay the offsets play no part: each table leaves out the letters it holds (``replay.py``).
        """
        config = self._require_config()
        spark = frame.sparkSession
        templated = is_templated(config)
        ledgers = self._stored if self._replay is None else self._replay_stored
        for topic, written in sorted(by_topic.items()):
            target = target_for_topic(config, topic)
            records = frame.where(F.col("topic") == topic) if templated else frame
            share = (self._new_records(spark, target, records, written, firsts) if self._replay is None
                     else self._replayed_records(spark, target, records, self._replay))
            if share is None:
                log.info("%s: batch %d holds only records %s already has", config.connector_name, batch_id, target)
                continue
            records, before, after = share
            rows = table_rows(records, config)
            table = None if templated else self._schemas.get(target)
            if table is not None:  # widen to the table's column types (rejected_rows removed what does not fit)
                rows = fit_to_table(rows, table)
            try:
                write_batch(spark, target, rows, key_columns(records, config), config,
                            before, after, topic or "(all)", table)
            except BaseException:
                # The commit may or may not have happened: read the table's offsets again before the retry.
                ledgers.pop(target, None)
                self._schemas.pop(target, None)
                raise
            ledgers[target] = after
            if table is None or {c.lower() for c in data_columns(rows)} - {f.name.lower() for f in table.fields}:
                self._schemas.pop(target, None)  # created or evolved: read the schema again
            self._commits[target] += 1
            if config.optimize_every and self._commits[target] % config.optimize_every == 0:
                compact(spark, target)

    def _new_records(self, spark: "SparkSession", target: TableTarget, records: "DataFrame",
                     written: Mapping[TopicPartition, int], firsts: Mapping[TopicPartition, int] | None,
                     ) -> "tuple[DataFrame, StoredOffsets, StoredOffsets] | None":
        """A batch's records ``target`` does not hold yet, its offsets before and after; ``None``: it holds all."""
        before = self._stored_offsets(spark, target)
        fresh_offsets = {tp: off for tp, off in written.items() if off > before.offsets.get(tp, 0)}
        if not fresh_offsets:
            return None
        return not_yet_stored(records, before.offsets, firsts), before, before.advanced(fresh_offsets)

    def _replayed_records(self, spark: "SparkSession", target: TableTarget, records: "DataFrame",
                          batch: DeadLetterBatch) -> "tuple[DataFrame, StoredOffsets, StoredOffsets] | None":
        """A replay's records ``target`` does not hold yet (``replay.py``), the replay's ledger of the table
        before and after; ``None``: the table holds every letter of the batch."""
        before = self._replay_ledger(spark, target, batch)
        held = held_records(batch, before.replayed.get(batch.dlq_topic, {}))
        if len(held) == len(batch.sources):
            return None
        return without_records(records, held), before, before.replayed_to(batch.dlq_topic, batch.ends)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick. ``put_dataframe`` returns only after its Delta
        commits, so every offset handed over is in the tables (or was skipped on purpose)."""
        return dict(current_offsets)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Nothing is buffered; the stored offsets stay cached for the next ``open``."""

    def stop(self) -> None:
        self._stored.clear()

    def stored_offsets(self) -> dict[TableTarget, StoredOffsets]:
        """The offsets this task knows each table holds (for tests and diagnostics)."""
        return dict(self._stored)

    def _stored_offsets(self, spark: "SparkSession", target: TableTarget) -> StoredOffsets:
        """The table's offsets, read from its history the first time the task uses the table."""
        return self._ledger(spark, target, self._stored, self._require_config().connector_name)

    def _replay_ledger(self, spark: "SparkSession", target: TableTarget, batch: DeadLetterBatch) -> StoredOffsets:
        """The replay's latest document in the table; read from its history only when an earlier run may have
        left letters of ``batch`` there (otherwise it holds none, and the history may be long)."""
        name = replay_ledger_name(self._require_config().connector_name, batch.dlq_topic)
        if not batch.earlier_run_unfinished:
            return self._replay_stored.setdefault(target, StoredOffsets(name))
        return self._ledger(spark, target, self._replay_stored, name)

    @staticmethod
    def _ledger(spark: "SparkSession", target: TableTarget, cache: dict[TableTarget, StoredOffsets],
                name: str) -> StoredOffsets:
        """The latest document ``name`` committed to the table, read from its history once into ``cache``."""
        stored = cache.get(target)
        if stored is None:
            stored = read_stored_offsets(spark, target, name) if target.exists(spark) else StoredOffsets(name)
            cache[target] = stored
        return stored

    def _require_config(self) -> DeltaSinkConfig:
        if self.config is None:
            raise RuntimeError("DeltaSinkTask used before start()")
        return self.config
