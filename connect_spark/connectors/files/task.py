"""The files sink task: Parquet or JSON-lines files per Kafka partition, published exactly once.

The offset protocol:

1. Records are buffered per original topic-partition. A buffer is published as one file when it
   holds ``files.rotate.records`` records, or when a record's timestamp is ``files.rotate.interval.ms``
   or more after the buffer's first record (record time, never the wall clock: re-delivered records
   rotate at the same places, so they get the same file names).
2. Publishing writes a temporary file and renames it to a name carrying the partition and the first
   and last offsets (``layout.py``).
3. ``pre_commit`` returns, per partition, the first offset still buffered (or everything given when
   nothing is buffered): only records in published files (or skipped tombstones) are committed.
4. ``open`` lists the published files, rewinds each partition to the offset after its last published
   record with ``context.offset``, and drops any re-delivered record below it. ``close`` drops the
   buffers of closed partitions: the runtime delivers those records again.

Tombstones (null values) are skipped. When the runtime opens and closes partitions around every
micro-batch (executor mode), a buffer that does not reach a rotation point within the batch is
delivered again with the next batch, so rotation sizes should suit the batch size.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Collection, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from connect_spark.api.bulk import ArrowSinkTask
from connect_spark.api.records import TopicPartition
from connect_spark.connectors.files.config import FilesSinkConfig
from connect_spark.connectors.files.formats import FORMATS, write_file
from connect_spark.connectors.files.layout import FileLayout, open_filesystem

__all__ = ["FilesSinkTask", "VERSION"]

log = logging.getLogger(__name__)

VERSION = "1.0.0"


@dataclass
class _Buffer:
    """The records of one partition not yet in a published file."""

    parts: list[pa.Table] = field(default_factory=list)
    count: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_time_ms: int | None = None

    def add(self, rows: pa.Table, first_offset: int, last_offset: int, first_time_ms: int | None) -> None:
        if self.count == 0:
            self.first_offset = first_offset
            self.first_time_ms = first_time_ms
        self.parts.append(rows)
        self.count += rows.num_rows
        self.last_offset = last_offset


class FilesSinkTask(ArrowSinkTask):
    """Writes rotated files per partition; see the module docstring for the offset protocol."""

    reads_headers = False  # files hold record values only

    def __init__(self) -> None:
        self.config: FilesSinkConfig | None = None
        self.layout: FileLayout | None = None
        self._buffers: dict[TopicPartition, _Buffer] = {}
        self._published_next: dict[TopicPartition, int] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once: parses the keys and opens the filesystem."""
        self.config = FilesSinkConfig.parse(props)
        filesystem, base = open_filesystem(self.config.directory)
        self.layout = FileLayout(filesystem, base, FORMATS[self.config.file_format])

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime on assignment: rewind each partition to after its last published file."""
        layout = self._require_layout()
        seeks = {}
        for tp in partitions:
            self._buffers[tp] = _Buffer()
            next_offset = layout.next_offset(tp)
            if next_offset is not None:
                self._published_next[tp] = next_offset
                seeks[tp] = next_offset
        if seeks:
            log.info("Files sink resuming after its published files: %s",
                     ", ".join(f"{tp}@{off}" for tp, off in sorted(seeks.items())))
            self.context.offset(seeks)

    def put_arrow(self, table: pa.Table) -> None:
        """Called by the runtime with the converted records of this task's partitions."""
        if table.num_rows == 0:
            return
        keys = table.select(["original_topic", "original_partition"]).group_by(
            ["original_topic", "original_partition"]).aggregate([]).to_pylist()
        for key in keys:
            tp = TopicPartition(key["original_topic"], key["original_partition"])
            mask = pc.and_(pc.equal(table.column("original_topic"), tp.topic),
                           pc.equal(table.column("original_partition"), tp.partition))
            rows = table.filter(mask)
            published = self._published_next.get(tp)
            if published is not None:
                rows = rows.filter(pc.greater_equal(rows.column("original_offset"), published))
            rows = rows.filter(pc.is_valid(rows.column("value")))
            if rows.num_rows:
                self._append(tp, rows.sort_by("original_offset"))

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Called by the runtime on each commit tick: only offsets of published records are returned."""
        safe = {}
        for tp, offset in current_offsets.items():
            buffer = self._buffers.get(tp)
            if buffer is not None and buffer.count:
                assert buffer.first_offset is not None
                safe[tp] = min(offset, buffer.first_offset)
            else:
                safe[tp] = offset
        return safe

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Called by the runtime when partitions are taken away: unpublished records are dropped
        (``pre_commit`` did not return them, so they are delivered again)."""
        for tp in partitions:
            self._buffers.pop(tp, None)
            self._published_next.pop(tp, None)

    def stop(self) -> None:
        self._buffers.clear()

    # -- rotation and publishing ---------------------------------------------------------------

    def _append(self, tp: TopicPartition, rows: pa.Table) -> None:
        """Add ``rows`` (one partition, offset order) to the buffer, publishing at each rotation point."""
        config = self._require_config()
        buffer = self._buffers.setdefault(tp, _Buffer())
        offsets = rows.column("original_offset").to_pylist()
        times = rows.column("timestamp").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_pylist()
        start = 0
        for i in range(len(offsets)):
            pending = buffer.count + (i - start)
            first_time = buffer.first_time_ms if buffer.count else times[start]
            time_up = (config.rotate_interval_ms > 0 and pending > 0 and times[i] is not None
                       and first_time is not None and times[i] - first_time >= config.rotate_interval_ms)
            if time_up:
                self._take(buffer, rows, offsets, times, start, i)
                self._publish(tp, buffer)
                start = i
            if buffer.count + (i + 1 - start) >= config.rotate_records:
                self._take(buffer, rows, offsets, times, start, i + 1)
                self._publish(tp, buffer)
                start = i + 1
        self._take(buffer, rows, offsets, times, start, len(offsets))

    @staticmethod
    def _take(buffer: _Buffer, rows: pa.Table, offsets: list[int], times: list[int | None], start: int,
              stop: int) -> None:
        if stop > start:
            buffer.add(rows.slice(start, stop - start), offsets[start], offsets[stop - 1], times[start])

    def _publish(self, tp: TopicPartition, buffer: _Buffer) -> None:
        layout, config = self._require_layout(), self._require_config()
        assert buffer.first_offset is not None and buffer.last_offset is not None
        records = pa.concat_tables(buffer.parts, promote_options="default")
        layout.prepare(tp.topic)
        temporary = layout.temporary_path(tp)
        final = layout.final_path(tp, buffer.first_offset, buffer.last_offset)
        write_file(layout.fs, temporary, records, config.file_format)
        layout.publish(temporary, final)
        log.info("Published %s (%d records)", final, records.num_rows)
        self._published_next[tp] = buffer.last_offset + 1
        buffer.parts, buffer.count, buffer.first_offset, buffer.last_offset, buffer.first_time_ms = (
            [], 0, None, None, None)

    def _require_config(self) -> FilesSinkConfig:
        if self.config is None:
            raise RuntimeError("FilesSinkTask used before start()")
        return self.config

    def _require_layout(self) -> FileLayout:
        if self.layout is None:
            raise RuntimeError("FilesSinkTask used before start()")
        return self.layout
