"""The S3 sink task: Confluent's objects, uploaded whole under deterministic names, exactly once.

The offset protocol (ARCHITECTURE.md §5, without renames):

1. Records are handled per original Kafka partition in offset order, with Confluent's rotation rules
   (``TopicPartitionWriter``): each record goes to the open object of its encoded partition; the
   partition's open objects are all uploaded together — a *group* — when they hold ``flush.size``
   records, when (time partitioners, ``rotate.interval.ms``) a record's time is that far past the
   group's first or falls in another encoded partition, when the value schema changes
   (``schema.compatibility``), or on the wall-clock ``rotate.schedule.interval.ms``.
2. An object is named ``<topics.dir>/<topic>/<encoded partition>/<topic>+<partition>+<start offset>.<ext>``
   after its first record, and uploaded whole (``store.py``); its metadata names its group:
   ``[first offset, next offset)``, the number of objects and of records, and the object's own records. The same records from the same starting
   point always give the same groups, names and bytes, so re-writing a group replaces it by itself. With
   ``store.kafka.keys`` every object's keys go to a ``.keys`` object uploaded before any of the group's
   value objects.
3. ``pre_commit`` returns, per partition, the first offset still in an open object (everything given
   when none is open): only records in uploaded groups, or skipped on purpose, are committed.
4. ``open`` aborts the partition's unfinished multipart uploads (left by a process killed in the middle
   of one; only the partition's owner uploads its objects, so none is in progress), lists the
   partition's objects, reads the group of the one with the highest start offset and rewinds with
   ``context.offset`` to the group's next offset when all its records are there (the objects in its
   offsets carrying its mark are as many as it had and hold its record count between them), else to its
   first offset (a crash in the middle of a group: the group is written again, whole). Records below that
   point are dropped when delivered again. ``close`` drops open objects: the runtime delivers
   their records again.
5. A ``put`` that fails (an upload refused) rolls each writer back to where it was before the put, less
   the groups the put did upload; records already in an open group are not added again. The runtime's
   redelivery of the same records then rebuilds the same groups, cut at the same records.

Deterministic only when rotation depends on the records alone: ``rotate.schedule.interval.ms`` and the
``Wallclock`` extractor depend on when records are written (a warning at start says so), as in
Confluent's documentation.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.replay import DeadLetterBatch, ReplayAwareTask
from connect_spark.api.data import Schema
from connect_spark.api.errors import ConnectException, DataException
from connect_spark.api.records import TopicPartition
from connect_spark.columnar.records import connect_schemas, frame_to_records
from connect_spark.connectors.s3.config import S3SinkConfig
from connect_spark.connectors.s3.formats import extension, serialize, unwritable
from connect_spark.connectors.s3.partitioner import Partitioner, record_times
from connect_spark.connectors.s3.replay import batch_complete, replay_name, replay_tag
from connect_spark.connectors.s3.store import Bucket, GroupMark, ObjectMark, StoredObject

__all__ = ["S3SinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"


@dataclass
class _OpenObject:
    """The records of one encoded partition not yet uploaded."""

    start: int
    parts: list[pa.Array] = field(default_factory=list)
    key_parts: list[pa.Array] = field(default_factory=list)  # with store.kafka.keys


@dataclass
class _Writer:
    """One Kafka partition's open group (Confluent's ``TopicPartitionWriter`` state)."""

    objects: dict[str, _OpenObject] = field(default_factory=dict)
    count: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    base_time: int | None = None
    current_encoded: str | None = None
    schema: Schema | None = None  # the value schema of the open group's records
    key_schema: Schema | None = None  # their key schema (store.kafka.keys)

    def reset(self) -> None:
        """Start a new group (after an upload); the schema stays as the next records' reference."""
        self.objects, self.count, self.first_offset, self.last_offset = {}, 0, None, None
        self.base_time, self.current_encoded = None, None

    def copy(self) -> "_Writer":
        """This state to roll back to: the lists of slices are copied, the slices shared."""
        objects = {name: _OpenObject(o.start, list(o.parts), list(o.key_parts)) for name, o in self.objects.items()}
        return _Writer(objects, self.count, self.first_offset, self.last_offset, self.base_time,
                       self.current_encoded, self.schema, self.key_schema)

    def held_after(self) -> int | None:
        """The offset after the open group's last record (``None`` when no group is open)."""
        return self.last_offset + 1 if self.count and self.last_offset is not None else None


class S3SinkTask(ArrowSinkTask, ReplayAwareTask):
    """Writes Confluent's S3 objects; see the module docstring for the offset protocol, and
    :mod:`connect_spark.connectors.s3.replay` for dead letter replays."""

    reads_headers = False  # objects hold record values only

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.config: S3SinkConfig | None = None
        self.bucket: Bucket | None = None
        self.partitioner: Partitioner | None = None
        self.clock = clock
        self._writers: dict[TopicPartition, _Writer] = {}
        self._resume: dict[TopicPartition, int] = {}
        self._listed: dict[TopicPartition, list[StoredObject]] = {}  # from the last complete group's start on
        self._marks: dict[TopicPartition, tuple[str, ObjectMark]] = {}  # the last object's mark, per partition
        self._next_schedule: float | None = None
        self._replay: DeadLetterBatch | None = None
        self._replay_opened: list[TopicPartition] = []
        self._replay_writers: list[tuple[TopicPartition, Schema | None, _Writer]] = []

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once, where the task runs: parses the keys and builds the S3 client."""
        self.config = S3SinkConfig.parse(props)
        self.bucket = Bucket(self.config)
        self.partitioner = Partitioner(self.config, self.clock)
        self._schedule_next()

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime on assignment: abort the partitions' unfinished multipart uploads, then
        rewind each partition to after its last complete group."""
        config = self._require_config()
        self._abort_unfinished(partitions)
        if self._replay is not None:  # replayed letters lie below the resume point: no seek, nothing dropped
            self._replay_opened = sorted(set(self._replay_opened) | set(partitions))
            return
        seeks = {}
        for tp in partitions:
            self._writers[tp] = _Writer()
            resume = self._resume_point(tp)
            if resume is not None:
                self._resume[tp] = resume
                seeks[tp] = resume
        if seeks:
            log.info("%s: resuming after the objects in s3://%s: %s", config.connector_name, config.bucket,
                     ", ".join(f"{tp}@{off}" for tp, off in sorted(seeks.items())))
            self.context.offset(seeks)

    def put_arrow(self, table: pa.Table) -> None:
        """Called by the runtime with the converted records of this task's partitions; the runtime calls it
        again with the same records after a ``RetriableException``.

        A put that raises leaves each writer as it was before the put, less the groups it uploaded: the
        records of a group that did not upload are dropped from the writer, so the same records delivered
        again are added once and cut where they were cut the first time.
        """
        before = {tp: (self._resume.get(tp), writer.copy()) for tp, writer in self._writers.items()}
        replayed = [(tp, schema, writer.copy()) for tp, schema, writer in self._replay_writers]
        try:
            self._put(table)
        except Exception:
            self._roll_back(before)
            self._replay_writers = replayed
            raise

    def _put(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            self._rotate_on_schedule()
            return
        key_schema, value_schema = connect_schemas(table)
        keys = table.select(["original_topic", "original_partition"]).group_by(
            ["original_topic", "original_partition"]).aggregate([]).to_pylist()
        for key in keys:
            tp = TopicPartition(key["original_topic"], key["original_partition"])
            rows = table.filter(pc.and_(pc.equal(table.column("original_topic"), tp.topic),
                                        pc.equal(table.column("original_partition"), tp.partition)))
            if self._replay is not None:
                self._hold_replayed(tp, self._writable(rows.sort_by("original_offset"), key_schema, value_schema),
                                    key_schema, value_schema)
                continue
            writer = self._writers.get(tp)
            floors = [self._resume.get(tp), writer.held_after() if writer is not None else None]
            floor = max((f for f in floors if f is not None), default=None)
            if floor is not None:  # records uploaded, or already in the open group, are not added again
                rows = rows.filter(pc.greater_equal(rows.column("original_offset"), floor))
            rows = self._writable(rows.sort_by("original_offset"), key_schema, value_schema)
            if rows.num_rows:
                self._write(tp, rows, key_schema, value_schema)
        self._rotate_on_schedule()

    def _roll_back(self, before: Mapping[TopicPartition, tuple[int | None, _Writer]]) -> None:
        """After a failed put: each writer back to its state ``before`` the put, or to an empty group when
        the put uploaded one (the records after it are delivered again)."""
        for tp, writer in self._writers.items():
            resume, held = before.get(tp, (self._resume.get(tp), None))
            if held is not None and self._resume.get(tp) == resume:
                self._writers[tp] = held
            else:
                writer.reset()

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick: only offsets of uploaded records are returned."""
        safe = {}
        for tp, offset in current_offsets.items():
            writer = self._writers.get(tp)
            if writer is not None and writer.count:
                assert writer.first_offset is not None
                safe[tp] = min(offset, writer.first_offset)
            else:
                safe[tp] = offset
        return safe

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are taken away: open objects are dropped (``pre_commit``
        did not return their records, so they are delivered again). During a replay the batch's objects are
        uploaded here, as one group."""
        if self._replay is not None and self._replay_writers:
            self._upload_replayed(self._replay)
        for tp in partitions:
            self._writers.pop(tp, None)
            self._resume.pop(tp, None)

    def stop(self) -> None:
        self._writers.clear()

    # -- dead letter replays (connectors/s3/replay.py) -------------------------------------------

    def begin_replay(self, batch: DeadLetterBatch) -> None:
        """Called by the dead letter replay before ``start``/``open``: the records that follow are ``batch``'s."""
        self._replay, self._replay_opened, self._replay_writers = batch, [], []

    def replay_position(self) -> dict[int, int]:
        """Called by the dead letter replay after ``open``: the batch's end when its objects in this task's
        partitions are all in the bucket already (an earlier run uploaded them and stopped before storing its
        progress) or the task was given none of them, else nothing."""
        config, bucket = self._require_config(), self._require_bucket()
        if self._replay is None or not self._replay.ends:
            return {}
        if not self._replay_opened:  # none of the batch's partitions is this task's: it writes none of its letters
            return dict(self._replay.ends)
        tag = replay_tag(self._replay.ends, config.file_delim)
        found = [stored for tp in self._replay_opened
                 for stored in bucket.objects(self._prefix(tp), replay_name(self._name_start(tp), tag,
                                                                            extension(config)))]
        return dict(self._replay.ends) if batch_complete(bucket, found) else {}

    def end_replay(self) -> None:
        """Called by the dead letter replay after ``close``: back to ordinary batches."""
        self._replay, self._replay_opened, self._replay_writers = None, [], []

    def _hold_replayed(self, tp: TopicPartition, rows: pa.Table, key_schema: Schema | None,
                       schema: Schema | None) -> None:
        """Add replayed ``rows`` (one partition, offset order, all writable) to the batch's open objects: one
        writer per partition and value schema, no rotation (the batch is uploaded whole at ``close``)."""
        if not rows.num_rows:
            return
        config, partitioner = self._require_config(), self._require_partitioner()
        held = [w for t, s, w in self._replay_writers if t == tp and s == schema]
        writer = held[0] if held else _Writer(schema=schema, key_schema=key_schema)
        if not held:
            self._replay_writers.append((tp, schema, writer))
        times = record_times(rows, config, self.clock) if config.time_based else None
        encoded = partitioner.encode(rows, tp.partition, times)
        keys = rows.column("key").combine_chunks() if config.store_keys else None
        self._take(writer, rows.column("value").combine_chunks(), keys,
                   rows.column("original_offset").combine_chunks(), encoded, times, 0, rows.num_rows)

    def _upload_replayed(self, batch: DeadLetterBatch) -> None:
        """Upload the replayed batch's objects as one group, named with the batch's tag."""
        writers = [(tp, w) for tp, _, w in self._replay_writers if w.count]
        self._replay_writers = []
        if not writers:
            return
        firsts = [w.first_offset for _, w in writers if w.first_offset is not None]
        lasts = [w.last_offset for _, w in writers if w.last_offset is not None]
        group = GroupMark(min(firsts), max(lasts) + 1, sum(len(w.objects) for _, w in writers),
                          sum(w.count for _, w in writers))
        tag = replay_tag(batch.ends, self._require_config().file_delim)
        for tp, writer in writers:
            self._upload(tp, writer, group, tag)

    # -- records in, rotation ------------------------------------------------------------------

    def _writable(self, rows: pa.Table, key_schema: Schema | None, schema: Schema | None) -> pa.Table:
        """``rows`` without tombstones (``behavior.on.null.values``) and records the formats cannot hold
        (reported under ``errors.*``): values, and keys with ``store.kafka.keys``."""
        config = self._require_config()
        nulls = pc.is_null(rows.column("value"))
        if pc.any(nulls).as_py():
            if not config.ignore_nulls:
                first = rows.filter(nulls).slice(0, 1).to_pylist()[0]
                raise DataException(
                    f"Null valued record {first['original_topic']}[{first['original_partition']}]@"
                    f"{first['original_offset']} cannot be written with behavior.on.null.values=fail "
                    "(set it to ignore to skip tombstones)")
            rows = rows.filter(pc.invert(nulls))
        reason = unwritable(rows.column("value").combine_chunks(), schema, config) if rows.num_rows else None
        if reason is None and config.store_keys and rows.num_rows:
            null_keys = pc.is_null(rows.column("key"))
            if pc.any(null_keys).as_py():
                self._report(rows.filter(null_keys), schema, "store.kafka.keys=true needs a key in every record")
                rows = rows.filter(pc.invert(null_keys))
            if rows.num_rows:
                reason = unwritable(rows.column("key").combine_chunks(), key_schema, config, config.keys_format)
        if reason is not None:
            self._report(rows, schema, reason)
            return rows.slice(0, 0)
        return rows

    def _report(self, rows: pa.Table, schema: Schema | None, reason: str) -> None:
        """Send ``rows`` where ``errors.*`` says (a task without a reporter fails)."""
        if not rows.num_rows:
            return
        reporter = self.context.errant_record_reporter() if getattr(self, "context", None) is not None else None
        if reporter is None:
            first = rows.slice(0, 1).to_pylist()[0]
            raise DataException(f"{first['original_topic']}[{first['original_partition']}]@"
                                f"{first['original_offset']}: {reason}")
        key_schema, _ = connect_schemas(rows)
        for record in frame_to_records(rows, key_schema, schema):
            reporter.report(record, DataException(reason))
        log.warning("%s: %d records went to the error reporter: %s", self._require_config().connector_name,
                    rows.num_rows, reason)

    def _write(self, tp: TopicPartition, rows: pa.Table, key_schema: Schema | None, schema: Schema | None) -> None:
        """Add ``rows`` (one partition, offset order, all writable) to its open group, uploading at each
        rotation point."""
        config, partitioner = self._require_config(), self._require_partitioner()
        writer = self._writers.setdefault(tp, _Writer())
        times = record_times(rows, config, self.clock) if config.time_based else None
        encoded = partitioner.encode(rows, tp.partition, times)
        misplaced = pc.is_null(encoded)
        if pc.any(misplaced).as_py():
            what = "timestamp" if config.time_based else "partition field"
            self._report(rows.filter(misplaced), schema, f"the record has no usable {what} for {config.partitioner} "
                                                         "partitioning")
            keep = pc.invert(misplaced)
            rows, encoded = rows.filter(keep), encoded.filter(keep)
            times = times.filter(keep) if times is not None else None
            if not rows.num_rows:
                return
        keys_stored = config.store_keys
        if writer.count and (self._schema_changed(writer.schema, schema)
                             or (keys_stored and self._schema_changed(writer.key_schema, key_schema))):
            self._upload(tp, writer)
        writer.schema, writer.key_schema = schema, key_schema
        offsets = rows.column("original_offset").combine_chunks()
        values = rows.column("value").combine_chunks()
        keys = rows.column("key").combine_chunks() if keys_stored else None
        start = 0
        for cut in self._cuts(writer, encoded, times):
            self._take(writer, values, keys, offsets, encoded, times, start, cut)
            self._upload(tp, writer)
            start = cut
        self._take(writer, values, keys, offsets, encoded, times, start, rows.num_rows)

    def _cuts(self, writer: _Writer, encoded: pa.Array, times: pa.Array | None) -> list[int]:
        """Where the writer's group ends within these rows: each cut ``c`` closes the group after row
        ``c - 1`` (Confluent's ``rotateOnSize`` and ``rotateOnTime``, record by record)."""
        config = self._require_config()
        rows, flush = len(encoded), config.flush_size
        if not (config.rotate_interval_ms > 0 and config.time_based):
            return list(range(flush - writer.count, rows + 1, flush))  # size only: no per-record work
        assert times is not None
        names, stamps = encoded.to_pylist(), times.to_pylist()
        count, base, current = writer.count, writer.base_time, writer.current_encoded
        cuts = []
        for i in range(rows):
            if count and (stamps[i] - base >= config.rotate_interval_ms or names[i] != current):
                cuts.append(i)
                count = 0
            if not count:
                base = stamps[i]
            count += 1
            current = names[i]
            if count >= flush:
                cuts.append(i + 1)
                count = 0
        return cuts

    @staticmethod
    def _take(writer: _Writer, values: pa.Array, keys: pa.Array | None, offsets: pa.Array, encoded: pa.Array,
              times: pa.Array | None, start: int, stop: int) -> None:
        """Move rows ``[start, stop)`` into the writer's open objects, one slice per run of an encoded partition."""
        if stop <= start:
            return
        if writer.count == 0:
            writer.first_offset = offsets[start].as_py()
            writer.base_time = times[start].as_py() if times is not None else None
        names = encoded.slice(start, stop - start)
        bounds = [0]
        if stop - start > 1:
            changed = pc.not_equal(names.slice(1), names.slice(0, len(names) - 1))
            bounds.extend(i + 1 for i in pc.indices_nonzero(changed).to_pylist())
        bounds.append(stop - start)
        for run_start, run_stop in zip(bounds, bounds[1:]):
            name = names[run_start].as_py()
            opened = writer.objects.get(name)
            if opened is None:
                opened = writer.objects[name] = _OpenObject(offsets[start + run_start].as_py())
            opened.parts.append(values.slice(start + run_start, run_stop - run_start))
            if keys is not None:
                opened.key_parts.append(keys.slice(start + run_start, run_stop - run_start))
        writer.count += stop - start
        writer.last_offset = offsets[stop - 1].as_py()
        writer.current_encoded = names[len(names) - 1].as_py()

    @staticmethod
    def _schema_changed(current: Schema | None, new: Schema | None) -> bool:
        """Any change of the value schema starts a new group (``schema.compatibility`` NONE; records are
        never projected to another schema, so the other modes rotate the same way)."""
        return current != new

    def _rotate_on_schedule(self) -> None:
        """``rotate.schedule.interval.ms``: upload every open group once the wall clock passes the schedule."""
        if self._next_schedule is None or self.clock() * 1000 < self._next_schedule:
            return
        for tp, writer in list(self._writers.items()):
            if writer.count:
                self._upload(tp, writer)
        self._schedule_next()

    def _schedule_next(self) -> None:
        config = self._require_config()
        if config.rotate_schedule_ms > 0:
            now = self.clock() * 1000
            self._next_schedule = (now // config.rotate_schedule_ms + 1) * config.rotate_schedule_ms
        else:
            self._next_schedule = None

    # -- objects out ---------------------------------------------------------------------------

    def object_key(self, tp: TopicPartition, encoded: str, start: int, keys: bool = False, tag: str = "") -> str:
        """``<topics.dir>/<topic>/<encoded>/<topic>+<partition>+<zero-padded start>.<ext>`` (Confluent's);
        ``keys``: the name of the object holding the keys (``.keys`` before the keys format's extension);
        ``tag``: a replayed batch's (:func:`~connect_spark.connectors.s3.replay.replay_tag`), after the start."""
        config, partitioner = self._require_config(), self._require_partitioner()
        suffix = ".keys" + extension(config, config.keys_format) if keys else extension(config)
        padded = f"{start:0{config.zero_pad}d}" if config.zero_pad else str(start)
        name = f"{tp.topic}{config.file_delim}{tp.partition}{config.file_delim}{padded}{tag}{suffix}"
        delim = config.directory_delim
        return f"{config.topics_dir}{delim}{partitioner.folder(tp.topic, encoded)}{delim}{name}"

    def _upload(self, tp: TopicPartition, writer: _Writer, shared: GroupMark | None = None, tag: str = "") -> None:
        """Upload the writer's open group, one whole object per encoded partition, then start a new group.
        A replayed batch's writers share one group (``shared``) and name their objects with its ``tag``."""
        if not writer.count:
            return
        config, bucket = self._require_config(), self._require_bucket()
        assert writer.first_offset is not None and writer.last_offset is not None
        objects = sorted(writer.objects.items(), key=lambda item: item[1].start)
        mark = shared or GroupMark(writer.first_offset, writer.last_offset + 1, len(objects), writer.count)
        if config.store_keys:  # keys first: a value object found by open implies its keys object is there
            for encoded, opened in objects:
                key = self.object_key(tp, encoded, opened.start, keys=True, tag=tag)
                keys = pa.concat_arrays(opened.key_parts) if len(opened.key_parts) > 1 else opened.key_parts[0]
                bucket.put(key, serialize(keys, writer.key_schema, config, key, config.keys_format),
                           ObjectMark(mark, len(keys)))
        for encoded, opened in objects:
            key = self.object_key(tp, encoded, opened.start, tag=tag)
            values = pa.concat_arrays(opened.parts) if len(opened.parts) > 1 else opened.parts[0]
            bucket.put(key, serialize(values, writer.schema, config, key), ObjectMark(mark, len(values)))
            log.info("%s: uploaded s3://%s/%s (%d records)", config.connector_name, config.bucket, key, len(values))
        if not tag:
            self._resume[tp] = mark.next
        writer.reset()

    # -- resuming ------------------------------------------------------------------------------

    def _resume_point(self, tp: TopicPartition) -> int | None:
        """The offset to resume ``tp`` from, read from the bucket; ``None`` when it holds none of its objects."""
        config, bucket = self._require_config(), self._require_bucket()
        prefix = self._prefix(tp)
        name = re.compile(re.escape(self._name_start(tp)) + r"(\d+)" + re.escape(extension(config)))
        # With the DefaultPartitioner a partition's objects share one folder and their zero-padded names sort
        # by offset: list only the keys after those seen in an earlier generation of this task instance.
        known = self._listed.get(tp, []) if config.partitioner == "default" else []
        sortable = known and all(o.start < 10 ** config.zero_pad for o in known)
        start_after = max(o.key for o in known) if sortable else None
        found = (known if sortable else []) + list(bucket.objects(prefix, name, start_after))
        if not found:
            return None
        last = max(found, key=lambda o: o.start)
        cached = self._marks.get(tp)
        mark = cached[1] if cached and cached[0] == last.key else bucket.mark(last.key)
        if mark is None:
            raise ConnectException(f"s3://{config.bucket}/{last.key} was not written by this sink (it carries no "
                                   "group metadata): cannot tell where to resume")
        self._marks[tp] = (last.key, mark)
        group = mark.group
        if config.partitioner == "default":
            self._listed[tp] = [o for o in found if o.start >= group.start]
        in_range = [o for o in found if group.start <= o.start < group.next]
        if self._group_complete(tp, last, mark, in_range):
            return group.next
        return group.start

    def _group_complete(self, tp: TopicPartition, last: StoredObject, mark: ObjectMark,
                        in_range: list[StoredObject]) -> bool:
        """Whether the group of ``tp``'s last object (``mark``) is all there, judged by its records: the objects
        in its offset range that carry its mark must be as many as it had and hold its records between them.
        Objects in the range from another upload of those offsets (another cut of the same records) do not
        count. Groups written before objects counted their records are judged by the number of objects."""
        config, bucket, group = self._require_config(), self._require_bucket(), mark.group
        if group.records is None or mark.records is None:
            members, records = len(in_range), None
        else:
            marks = {o.key: mark if o.key == last.key else bucket.mark(o.key) for o in in_range}
            strays = sorted(key for key, m in marks.items() if m is None or m.group != group)
            if strays:
                log.warning("%s: %s: %s lie in the last group's offsets [%d, %d) but were uploaded in another "
                            "group: not counted", config.connector_name, tp, ", ".join(strays), group.start,
                            group.next)
            members, records = group.held(marks.values())
            if group.complete(marks.values()):
                return True
        if records is None and members >= group.objects:
            return True
        log.warning("%s: %s's last group [%d, %d) has %d of its %d objects%s: writing it again",
                    config.connector_name, tp, group.start, group.next, members, group.objects,
                    "" if records is None else f" and {records} of its {group.records} records")
        return False

    def _prefix(self, tp: TopicPartition) -> str:
        """The longest key prefix shared by all of ``tp``'s objects."""
        config = self._require_config()
        delim = config.directory_delim
        prefix = f"{config.topics_dir}{delim}{tp.topic}{delim}"
        if config.partitioner == "default":
            prefix += f"partition={tp.partition}{delim}"
        return prefix

    def _name_start(self, tp: TopicPartition) -> str:
        """How the last path part of each of ``tp``'s objects starts: ``<topic>+<partition>+``."""
        config = self._require_config()
        return f"{tp.topic}{config.file_delim}{tp.partition}{config.file_delim}"

    def _abort_unfinished(self, partitions: Collection[TopicPartition]) -> None:
        """Abort the unfinished multipart uploads of ``partitions``' objects (values and keys)."""
        config, bucket = self._require_config(), self._require_bucket()
        by_prefix: dict[str, list[re.Pattern[str]]] = {}
        for tp in partitions:
            by_prefix.setdefault(self._prefix(tp), []).append(
                re.compile(re.escape(self._name_start(tp)) + r"\d+(\.|" + re.escape(config.file_delim) + "dlq)"))
        for prefix, names in by_prefix.items():
            for upload in list(bucket.unfinished_uploads(prefix)):
                last = upload.key.rsplit(config.directory_delim, 1)[-1]
                if any(name.match(last) for name in names):
                    bucket.abort(upload)
                    log.warning("%s: aborted an unfinished multipart upload of s3://%s/%s", config.connector_name,
                                config.bucket, upload.key)

    def _require_config(self) -> S3SinkConfig:
        if self.config is None:
            raise RuntimeError("S3SinkTask used before start()")
        return self.config

    def _require_bucket(self) -> Bucket:
        if self.bucket is None:
            raise RuntimeError("S3SinkTask used before start()")
        return self.bucket

    def _require_partitioner(self) -> Partitioner:
        if self.partitioner is None:
            raise RuntimeError("S3SinkTask used before start()")
        return self.partitioner
