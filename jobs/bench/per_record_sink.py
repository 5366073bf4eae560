"""Arm c: a record task that does real work for every record, in Python.

For each record ``put`` parses the JSON value (the worker's StringConverter hands it over as text; with
orjson, the parser a Python sink author would pick for speed, installed by the ``bench`` extra, else
the standard library's ``json``),
converts the amount, buckets the user by a CRC32 of its name, classifies the score, and appends one
CSV line ``id,user_bucket,amount_usd,score_class,status,partition,offset`` to its task's file under
``bench.output.dir``. ``pre_commit`` flushes and fsyncs the file, then returns the offsets it was
given: everything ``put`` received is on disk by then.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Collection, Mapping

try:
    from orjson import loads as parse_json
except ImportError:  # the bench extra is not installed
    from json import loads as parse_json

from connect_spark.api import SinkConnector, SinkRecord, SinkTask, TopicPartition
from connect_spark.config.definition import ConfigDef, Importance, Type

__all__ = ["PerRecordSinkConnector", "PerRecordSinkTask", "OUTPUT_DIR"]

OUTPUT_DIR = "bench.output.dir"
_EUR_TO_USD = 1.08


def _score_class(score: float) -> str:
    return "high" if score >= 0.8 else "mid" if score >= 0.4 else "low"


class PerRecordSinkTask(SinkTask):
    reads_headers = False

    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        folder = Path(props[OUTPUT_DIR])
        folder.mkdir(parents=True, exist_ok=True)
        self._out = open(folder / f"task-{props.get('task.id', '0')}.csv", "a", buffering=1 << 20)

    def put(self, records: Collection[SinkRecord]) -> None:
        lines = []
        for record in records:
            value = parse_json(record.value)
            bucket = zlib.crc32(value["user"].encode()) % 64
            lines.append(
                f"{value['id']},{bucket},{value['amount'] * _EUR_TO_USD:.2f},{_score_class(value['score'])},"
                f"{value['status']},{record.kafka_partition},{record.kafka_offset}\n"
            )
        self._out.write("".join(lines))

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self._out.flush()
        os.fsync(self._out.fileno())
        return dict(current_offsets)

    def stop(self) -> None:
        self._out.close()


class PerRecordSinkConnector(SinkConnector):
    def version(self) -> str:
        return "1.0"

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return PerRecordSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.props, "task.id": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef().define(OUTPUT_DIR, Type.STRING, importance=Importance.HIGH,
                                  doc="Folder of the per-task CSV files.")
