"""Executor mode: an ArrowSinkTask with the JsonConverter gets frames Spark converted (the plan's good rows),
and rows that need the per-record path still reach errors.* (DLQ) or the frame, in offset order.

Drives the executor-mode processor directly on a real broker and real Spark, so the test can read how many
rows each way took; the task records every frame it is handed (connect_spark/testing/arrow_recording.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from connect_spark.api.records import TopicPartition
from connect_spark.columnar.records import SCHEMA_METADATA_KEY, connect_schemas
from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.worker import WorkerConfig
from connect_spark.runtime.processors.executor_tasks import ExecutorTasks
from connect_spark.runtime.processors.base import ProcessorSetup
from connect_spark.streaming.source import read_kafka_range
from connect_spark.testing.arrow_recording import RecordingArrowSinkTask, read_recorded_frames
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce, read_topic

JSON = "org.apache.kafka.connect.json.JsonConverter"
SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "name", "type": "string", "optional": True},
    {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
]}
COUNT = 240
BROKEN = 50  # not JSON: a conversion error, to the DLQ
REORDERED = 120  # payload before schema: the plan cannot prove it, the per-record path converts it
WRONG_TYPE = 200  # null in a required field: a conversion error, to the DLQ


def _value(i: int) -> bytes:
    payload = {"id": i, "name": f"n{i}", "at": 1_700_000_000_000 + i}
    if i == BROKEN:
        return b'{"schema": {"type": "struct"'
    if i == REORDERED:
        return json.dumps({"payload": payload, "schema": SCHEMA}).encode()
    if i == WRONG_TYPE:
        payload["id"] = None
    return json.dumps({"schema": SCHEMA, "payload": payload}, separators=(",", ":")).encode()


def _drain_with_executor_tasks(spark, bootstrap_servers: str, topic: str, work_dir, name: str, tasks_max: int,
                               schemas_enable: bool):
    """The topic drained in one batch by a recording Arrow connector (JsonConverter, errors to a DLQ) in
    executor mode. Returns the processor, the offsets it committed, the topic's end offsets, the folder of
    the recorded frames and the DLQ topic."""
    out, dlq = Path(work_dir) / "frames", f"{topic}-dlq"
    connector = ConnectorConfig({
        "name": f"{name}-{topic}", "connector.class": "connect_spark.testing.arrow_recording.RecordingArrowSinkConnector",
        "topics": topic, "tasks.max": str(tasks_max), "recording.dir": str(out),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": JSON,
        "value.converter.schemas.enable": str(schemas_enable).lower(), "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1"})
    worker = WorkerConfig(worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor"))
    committed: dict[TopicPartition, int] = {}
    setup = ProcessorSetup(spark=spark, connector=connector, worker=worker, task_class=RecordingArrowSinkTask,
                           task_configs=[{"recording.dir": str(out)}] * tasks_max,
                           client_config={"bootstrap.servers": bootstrap_servers}, include_headers=False,
                           commit=committed.update, wait=lambda s: True, clock=lambda: 0.0)
    tasks = ExecutorTasks(setup)
    assert tasks.plan is not None
    ends = {TopicPartition(topic, p): end for p, end in end_offsets(bootstrap_servers, topic).items()}
    tasks.open({tp: 0 for tp in ends})
    tasks.process(read_kafka_range(spark, {"bootstrap.servers": bootstrap_servers}, {tp: (0, e) for tp, e in ends.items()},
                                   include_headers=False), 0)
    return tasks, committed, ends, out, dlq


def test_arrow_task_gets_spark_converted_frames_and_fallback_rows_keep_errors_and_order(
        spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, ((i % 2, None, _value(i), []) for i in range(COUNT)))
    tasks, committed, ends, out, dlq = _drain_with_executor_tasks(spark, bootstrap_servers, topic_name, work_dir,
                                                                   "split", 2, schemas_enable=True)

    assert tasks.fallback_rows == 3  # only the three rows the plan could not prove went per record
    assert committed == ends
    frames = read_recorded_frames(out)
    assert frames and all(f.schema.field("value").metadata[SCHEMA_METADATA_KEY] for f in frames)
    assert connect_schemas(frames[0])[1].field("at").schema.name == "org.apache.kafka.connect.data.Timestamp"
    seen: dict[int, list[int]] = {0: [], 1: []}
    values = {}
    for frame in frames:
        for row in frame.select(["original_partition", "original_offset", "value"]).to_pylist():
            seen[row["original_partition"]].append(row["original_offset"])
            values[row["value"]["id"]] = row["value"]
    expected = [i for i in range(COUNT) if i not in (BROKEN, WRONG_TYPE)]
    for partition in (0, 1):
        assert seen[partition] == [i // 2 for i in expected if i % 2 == partition]  # offset order, nothing twice
    assert values[REORDERED]["name"] == f"n{REORDERED}"
    assert values[7]["at"].timestamp() * 1000 == 1_700_000_000_007
    letters = read_topic(bootstrap_servers, dlq)
    assert sorted(r.value for r in letters) == sorted([_value(BROKEN), _value(WRONG_TYPE)])


def test_a_schemaless_value_of_another_type_goes_to_the_dlq_and_the_others_keep_their_order(
        spark, bootstrap_servers, topic_name, work_dir):
    """A string among doubles is the batch's misfit: to the DLQ; an integer among doubles survives the
    per-record path and joins the rows Spark converted, in offset order (the frame path's test shows the
    batch is not built again from records; here the work happens in the executor's Python worker)."""

    def value(i: int) -> bytes:
        amount = '"12.5"' if i == 9 else ("7" if i == 12 else f"{i}.5")
        return f'{{"id":{i},"amount":{amount}}}'.encode()

    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, ((i % 2, None, value(i), []) for i in range(40)))
    tasks, committed, ends, out, dlq = _drain_with_executor_tasks(spark, bootstrap_servers, topic_name, work_dir,
                                                                   "conflict", 1, schemas_enable=False)
    assert committed == ends and tasks.fallback_rows == 2
    rows = [row for frame in read_recorded_frames(out)
            for row in frame.select(["original_partition", "original_offset", "value"]).to_pylist()]
    for partition in (0, 1):
        offsets = [r["original_offset"] for r in rows if r["original_partition"] == partition]
        assert offsets == [i // 2 for i in range(40) if i % 2 == partition and i != 9]
    assert {r["value"]["id"]: r["value"]["amount"] for r in rows}[12] == 7.0
    assert [r.value for r in read_topic(bootstrap_servers, dlq)] == [value(9)]
