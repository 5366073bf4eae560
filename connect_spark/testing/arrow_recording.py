"""An Arrow sink task that keeps every record frame it is handed, for tests of the Arrow delivery paths.

Each ``put_arrow`` writes its table (schema metadata included) as an Arrow IPC file into
``recording.dir``; :func:`read_recorded_frames` reads them back in the order they were written per task.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pyarrow as pa

from connect_spark.api import ArrowSinkTask, SinkConnector

__all__ = ["RecordingArrowSinkConnector", "RecordingArrowSinkTask", "read_recorded_frames"]


class RecordingArrowSinkTask(ArrowSinkTask):
    """Writes each frame it gets to ``recording.dir`` (one IPC file per ``put_arrow``)."""

    reads_headers = False

    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        self.folder = Path(props["recording.dir"])
        self.folder.mkdir(parents=True, exist_ok=True)

    def put_arrow(self, table: pa.Table) -> None:
        name = f"{time.monotonic_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.arrow"
        with pa.OSFile(str(self.folder / name), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)

    def stop(self) -> None:
        pass


class RecordingArrowSinkConnector(SinkConnector):
    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return RecordingArrowSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


def read_recorded_frames(folder: str | os.PathLike[str]) -> list[pa.Table]:
    """The recorded frames, oldest first."""
    return [pa.ipc.open_file(str(path)).read_all() for path in sorted(Path(folder).glob("*.arrow"))]
