"""Test doubles connector authors (and connect_spark's own tests) use: a recording sink and a faulty one.

``RecordingSinkTask`` appends every call and every record it receives to JSON-lines files under
``recording.dir`` (one folder per task), so a test — even one whose task ran in another process — can
read back exactly what was delivered. With ``recording.commit.every=N`` it behaves like a buffering
sink: records are written durably only in chunks of N, and ``pre_commit`` returns only the offsets of
what was written. ``recording.rewind`` makes ``open`` rewind partitions with ``context.offset``.
``recording.put.delay.ms`` makes every non-empty ``put`` sleep that long after writing (a slow sink, so a
test can disturb a batch while its puts run). ``recording.pickles=true`` also records each record's key
and value with their schemas, pickled (``read_recorded_connect_data`` gives them back as Connect data). Each call and record notes the Python process id (``pid``)
and its parent's (``ppid``: on an executor, the PySpark daemon of that executor JVM).

``FaultySinkTask`` adds failures on command: retriable ``put`` failures, a fatal ``put`` failure, or a
failing ``pre_commit``.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import time
from pathlib import Path
from typing import Any, Collection, Mapping

from connect_spark.api import RetriableException, SinkConnector, SinkRecord, SinkTask, TopicPartition
from connect_spark.config.definition import ConfigDef, Importance, Type

__all__ = [
    "RecordingSinkConnector",
    "RecordingSinkTask",
    "FaultySinkConnector",
    "FaultySinkTask",
    "read_recorded_records",
    "contiguous_written_offsets",
    "read_recorded_calls",
    "read_recorded_connect_data",
]

RECORDING_DIR = "recording.dir"
COMMIT_EVERY = "recording.commit.every"
REWIND = "recording.rewind"
PUT_DELAY_MS = "recording.put.delay.ms"
READS_HEADERS = "recording.reads.headers"
PICKLES = "recording.pickles"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"b64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def decode_value(value: Any) -> Any:
    """Undo the JSON encoding of recorded keys/values (bytes come back as bytes)."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    return value


class RecordingSinkTask(SinkTask):
    """Records every call and record to files; optionally buffers and commits in chunks."""

    def __init__(self) -> None:
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}
        self.commit_every = 0
        self.folder: Path | None = None
        self.put_delay_s = 0.0
        self.pickles = False

    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        task_id = props.get("task.id", "0")
        self.folder = Path(props[RECORDING_DIR]) / f"task-{task_id}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.commit_every = int(props.get(COMMIT_EVERY, "0"))
        self.rewind = _parse_rewind(props.get(REWIND, ""))
        self.put_delay_s = int(props.get(PUT_DELAY_MS, "0")) / 1000.0
        self.pickles = props.get(PICKLES, "false").lower() == "true"
        self._call("start", props={k: v for k, v in props.items() if "password" not in k})

    def open(self, partitions: Collection[TopicPartition]) -> None:
        self._call("open", partitions=[list(tp) for tp in partitions])
        # Each configured rewind happens once per recording folder: in executor mode ``open`` runs every
        # micro-batch (possibly in several processes), and a real sink seeks only to offsets it stored.
        seeks = {}
        for tp, off in self.rewind.items():
            marker = self.folder / f"rewound-{tp.topic}-{tp.partition}" if self.folder else None
            if tp in set(partitions) and marker is not None and not marker.exists():
                marker.touch()
                seeks[tp] = off
        if seeks:
            self.context.offset(seeks)

    def put(self, records: Collection[SinkRecord]) -> None:
        self._call("put", count=len(records))
        if self.commit_every:
            self.buffer.extend(records)
            while len(self.buffer) >= self.commit_every:
                chunk, self.buffer = self.buffer[: self.commit_every], self.buffer[self.commit_every:]
                self._write(chunk)
        else:
            self._write(list(records))
        if records and self.put_delay_s:
            time.sleep(self.put_delay_s)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        if self.commit_every:
            answer = {tp: off for tp, off in self.written.items() if tp in current_offsets}
        else:
            answer = dict(current_offsets)
        self._call("pre_commit", offered=_offsets_json(current_offsets), returned=_offsets_json(answer))
        return answer

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self._call("close", partitions=[list(tp) for tp in partitions])
        closing = set(partitions)
        self.buffer = [r for r in self.buffer if r.original_topic_partition not in closing]
        for tp in closing:  # what was written is committed or re-delivered; a reopened partition starts afresh
            self.written.pop(tp, None)

    def stop(self) -> None:
        self._call("stop")

    # -- files ------------------------------------------------------------------------------

    def _write(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        assert self.folder is not None
        lines = []
        for r in records:
            extra = {}
            if self.pickles:
                data = (r.key_schema, r.key, r.value_schema, r.value)
                extra["pickled"] = base64.b64encode(pickle.dumps(data)).decode()
            lines.append(json.dumps({
                **extra,
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "topic": r.topic,
                "partition": r.kafka_partition,
                "offset": r.kafka_offset,
                "original": [r.original_topic, r.original_kafka_partition, r.original_kafka_offset],
                "key": _jsonable(r.key),
                "value": _jsonable(r.value),
                "timestamp": r.timestamp,
                "headers": [[h.key, _jsonable(h.value)] for h in r.headers],
            }))
        with open(self.folder / "records.jsonl", "a") as out:
            out.write("\n".join(lines) + "\n")
            out.flush()
            os.fsync(out.fileno())
        for r in records:
            self.written[r.original_topic_partition] = r.original_kafka_offset + 1  # type: ignore[operator]

    def _call(self, name: str, **details: Any) -> None:
        if self.folder is None:
            return
        with open(self.folder / "calls.jsonl", "a") as out:
            out.write(json.dumps({"call": name, "pid": os.getpid(), "ppid": os.getppid(), **details}) + "\n")


class FaultySinkTask(RecordingSinkTask):
    """A recording task that fails on command.

    Keys: ``faulty.retriable.puts`` (the first N non-empty puts raise ``RetriableException``),
    ``faulty.fail.on.put`` (the Nth non-empty put raises ``RuntimeError``, 1-based),
    ``faulty.fail.pre_commit`` (``pre_commit`` raises on its Nth call), ``faulty.timeout.ms``
    (``context.timeout`` set before each retriable failure).
    """

    def start(self, props: dict[str, str]) -> None:
        super().start(props)
        self.retriable_left = int(props.get("faulty.retriable.puts", "0"))
        self.fail_on_put = int(props.get("faulty.fail.on.put", "0"))
        self.fail_pre_commit = int(props.get("faulty.fail.pre_commit", "0"))
        self.timeout_ms = int(props.get("faulty.timeout.ms", "0"))
        self.nonempty_puts = 0
        self.pre_commits = 0

    def put(self, records: Collection[SinkRecord]) -> None:
        if records:
            if self.retriable_left > 0:
                self.retriable_left -= 1
                self._call("put_retriable", count=len(records))
                if self.timeout_ms:
                    self.context.timeout(self.timeout_ms)
                raise RetriableException("sink busy (faulty task)")
            self.nonempty_puts += 1
            if self.nonempty_puts == self.fail_on_put:
                self._call("put_failed", count=len(records))
                raise RuntimeError(f"faulty task fails on put #{self.nonempty_puts}")
        super().put(records)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.pre_commits += 1
        if self.pre_commits == self.fail_pre_commit:
            self._call("pre_commit_failed")
            raise RuntimeError("faulty task fails in pre_commit")
        return super().pre_commit(current_offsets)


class HeaderBlindRecordingSinkTask(RecordingSinkTask):
    """A recording task that promises not to read headers (``reads_headers = False``): it records what it gets."""

    reads_headers = False


class RecordingSinkConnector(SinkConnector):
    """Gives each task the connector's configuration plus ``task.id``."""

    task = RecordingSinkTask

    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        if self.task is RecordingSinkTask and self.props.get(READS_HEADERS, "true").lower() == "false":
            return HeaderBlindRecordingSinkTask
        return self.task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.props, "task.id": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(RECORDING_DIR, Type.STRING, importance=Importance.HIGH, doc="Folder the records and calls go to.")
            .define(COMMIT_EVERY, Type.INT, 0, importance=Importance.LOW,
                    doc="Buffer and write records in chunks of N; pre_commit returns only written offsets.")
            .define(REWIND, Type.STRING, "", importance=Importance.LOW,
                    doc="topic:partition:offset,... that open() rewinds to with context.offset.")
            .define(PUT_DELAY_MS, Type.INT, 0, importance=Importance.LOW,
                    doc="Sleep this many ms after each non-empty put (a slow sink).")
            .define(READS_HEADERS, Type.BOOLEAN, True, importance=Importance.LOW,
                    doc="false: the task class declares reads_headers = False (headers may be left unread).")
        )


class FaultySinkConnector(RecordingSinkConnector):
    task = FaultySinkTask


def _parse_rewind(spec: str) -> dict[TopicPartition, int]:
    seeks = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        topic, partition, offset = item.rsplit(":", 2)
        seeks[TopicPartition(topic, int(partition))] = int(offset)
    return seeks


def _offsets_json(offsets: Mapping[TopicPartition, int]) -> list[list[Any]]:
    return [[tp.topic, tp.partition, off] for tp, off in sorted(offsets.items())]


def read_recorded_records(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record every task wrote under ``folder``, in write order per task."""
    records = []
    for path in sorted(Path(folder).glob("task-*/records.jsonl")):
        with open(path) as f:
            records.extend(json.loads(line) for line in f if line.strip())
    return records


def contiguous_written_offsets(records: list[dict[str, Any]]) -> dict[TopicPartition, int]:
    """Per partition, the offset after the longest run of offsets written from 0: what a commit may cover
    (chaos tests check that no committed offset is ahead of it)."""
    offsets: dict[TopicPartition, set[int]] = {}
    for r in records:
        offsets.setdefault(TopicPartition(r["topic"], r["partition"]), set()).add(r["offset"])
    safe = {}
    for tp, seen in offsets.items():
        n = 0
        while n in seen:
            n += 1
        safe[tp] = n
    return safe


def read_recorded_calls(folder: str | os.PathLike[str], task_id: int = 0) -> list[dict[str, Any]]:
    path = Path(folder) / f"task-{task_id}" / "calls.jsonl"
    if not path.exists():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_recorded_connect_data(recording_dir: str | os.PathLike[str]) -> list[tuple[Any, Any, Any, Any]]:
    """``(key schema, key, value schema, value)`` of every record recorded with ``recording.pickles=true``,
    in the order of each task's file (tasks in folder order)."""
    result = []
    for path in sorted(Path(recording_dir).glob("task-*/records.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                result.append(pickle.loads(base64.b64decode(json.loads(line)["pickled"])))
    return result
