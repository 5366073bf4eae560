"""Where the files sink puts files, how they are named, and how published files are found again.

A published file is ``<files.dir>/<topic>/<topic>+<partition>+<start>+<end>.<ext>``: the original
topic-partition (what offsets are committed against) and the first and last Kafka offsets it holds,
zero-padded to 20 digits so names sort by offset. The same records always give the same name, so a
file re-written after a crash replaces itself instead of adding a duplicate. Files are written under
a ``.tmp-`` name in the same folder and renamed when complete: readers that skip dot-files never see
a partial file, and a crash leaves only a temporary file behind.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

from connect_spark.api.errors import ConnectException
from connect_spark.api.records import TopicPartition

__all__ = ["FileLayout", "PublishedFile", "open_filesystem"]

_OFFSET_DIGITS = 20


@dataclass(frozen=True, order=True)
class PublishedFile:
    """One published file: its partition and the offsets of its first and last record."""

    tp: TopicPartition
    start: int
    end: int
    path: str


def open_filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and base path of ``files.dir``: a local path, ``file://`` or a URI pyarrow
    supports (``s3://``, ``gs://``, ``abfs://``, ``hdfs://`` with libhdfs installed).

    Raises:
        ConnectException: the location cannot be opened.
    """
    if "://" not in location:
        return pafs.LocalFileSystem(), os.path.abspath(location)
    try:
        return pafs.FileSystem.from_uri(location)
    except Exception as e:
        raise ConnectException(f"files.dir={location} cannot be opened by pyarrow.fs: {e}") from e


class FileLayout:
    """Names and lists the files of one files sink under its base folder."""

    def __init__(self, filesystem: pafs.FileSystem, base: str, extension: str) -> None:
        self.fs = filesystem
        self.base = base.rstrip("/")
        self.extension = extension

    def folder(self, topic: str) -> str:
        return f"{self.base}/{topic}"

    def final_path(self, tp: TopicPartition, start: int, end: int) -> str:
        name = f"{tp.topic}+{tp.partition}+{start:0{_OFFSET_DIGITS}d}+{end:0{_OFFSET_DIGITS}d}.{self.extension}"
        return f"{self.folder(tp.topic)}/{name}"

    def temporary_path(self, tp: TopicPartition) -> str:
        return f"{self.folder(tp.topic)}/.tmp-{tp.topic}+{tp.partition}-{uuid.uuid4().hex}.{self.extension}"

    def published(self, tp: TopicPartition) -> list[PublishedFile]:
        """The published files of ``tp``, in offset order (temporary files are ignored)."""
        pattern = re.compile(rf"{re.escape(tp.topic)}\+{tp.partition}\+(\d+)\+(\d+)\.{re.escape(self.extension)}")
        selector = pafs.FileSelector(self.folder(tp.topic), allow_not_found=True)
        found = []
        for info in self.fs.get_file_info(selector):
            match = pattern.fullmatch(info.base_name)
            if match and info.type == pafs.FileType.File:
                found.append(PublishedFile(tp, int(match.group(1)), int(match.group(2)), info.path))
        return sorted(found)

    def next_offset(self, tp: TopicPartition) -> int | None:
        """The offset after the last published record of ``tp``; ``None`` when nothing is published."""
        files = self.published(tp)
        return max(f.end for f in files) + 1 if files else None

    def prepare(self, topic: str) -> None:
        self.fs.create_dir(self.folder(topic), recursive=True)

    def publish(self, temporary: str, final: str) -> None:
        """Rename a complete temporary file to its final name (atomic on local and HDFS filesystems)."""
        self.fs.move(temporary, final)
