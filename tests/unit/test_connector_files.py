"""The files sink on real files: rotation by count and record time, atomic publish, exactly-once resume."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect_spark import plugins
from connect_spark.api.errors import ConfigException
from connect_spark.api.records import TopicPartition
from connect_spark.connectors.files import FilesSinkConnector, FilesSinkTask
from connect_spark.runtime.tasks.context import WorkerSinkTaskContext

VALUE = pa.struct([("id", pa.int64()), ("name", pa.string())])
TP = TopicPartition("orders", 0)


def frame(records, topic="orders", partition=0):
    """A record frame from (offset, timestamp ms, value dict or None)."""
    n = len(records)
    return pa.table({
        "topic": pa.array([topic] * n), "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array([r[0] for r in records], pa.int64()),
        "timestamp": pa.array([r[1] for r in records], pa.timestamp("ms", tz="UTC")),
        "timestamp_type": pa.array([0] * n, pa.int32()),
        "key": pa.array([None] * n, pa.string()),
        "value": pa.array([r[2] for r in records], VALUE),
        "headers": pa.array([[]] * n, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "original_topic": pa.array([topic] * n), "original_partition": pa.array([partition] * n, pa.int32()),
        "original_offset": pa.array([r[0] for r in records], pa.int64()),
    })


def start(props, partitions=(TP,)):
    task = FilesSinkTask()
    context = WorkerSinkTaskContext(props)
    task.initialize(context)
    task.start(props)
    context.set_assignment(set(partitions))
    task.open(list(partitions))
    return task, context


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def rows(offsets, t0=0, step=10):
    return [(o, t0 + o * step, {"id": o, "name": f"n{o}"}) for o in offsets]


def test_count_rotation_publishes_whole_files_and_commits_only_those(tmp_path):
    task, _ = start({"files.dir": str(tmp_path), "files.rotate.records": "2"})
    task.put_arrow(frame(rows(range(5))))
    assert names(tmp_path / "orders") == [
        f"orders+0+{0:020d}+{1:020d}.parquet", f"orders+0+{2:020d}+{3:020d}.parquet"]
    assert task.pre_commit({TP: 5}) == {TP: 4}  # offset 4 is still buffered
    got = pq.read_table(tmp_path / "orders" / f"orders+0+{2:020d}+{3:020d}.parquet").to_pylist()
    assert got == [{"id": 2, "name": "n2"}, {"id": 3, "name": "n3"}]
    task.put_arrow(frame(rows([5])))
    assert task.pre_commit({TP: 6}) == {TP: 6}
    task.close([TP])
    task.stop()


def test_time_rotation_uses_record_time_and_tombstones_are_skipped(tmp_path):
    task, _ = start({"files.dir": str(tmp_path), "files.rotate.records": "100",
                     "files.rotate.interval.ms": "2000", "files.format": "json"})
    task.put_arrow(frame([(0, 0, {"id": 0, "name": "a"}), (1, 1000, None), (2, 1500, {"id": 2, "name": "b"}),
                          (3, 2500, {"id": 3, "name": "c"}), (4, 2600, {"id": 4, "name": "d"})]))
    (published,) = names(tmp_path / "orders")
    assert published == f"orders+0+{0:020d}+{2:020d}.jsonl"
    lines = (tmp_path / "orders" / published).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"id": 0, "name": "a"}, {"id": 2, "name": "b"}]
    assert task.pre_commit({TP: 5}) == {TP: 3}


def test_fresh_task_rewinds_after_published_files_and_writes_nothing_twice(tmp_path):
    props = {"files.dir": str(tmp_path), "files.rotate.records": "3"}
    first, _ = start(props)
    batch = frame(rows(range(7)))
    first.put_arrow(batch)  # publishes 0-2 and 3-5; 6 buffered; then the task "crashes"
    (tmp_path / "orders" / ".tmp-orders+0-deadbeef.parquet").write_bytes(b"partial")
    fresh, context = start(props)
    assert context.take_pending_offsets() == {TP: 6}
    fresh.put_arrow(batch)  # the runtime re-delivers from its committed offset: nothing is written twice
    fresh.put_arrow(frame(rows(range(7, 9))))
    published = [n for n in names(tmp_path / "orders") if not n.startswith(".")]
    assert published == [f"orders+0+{a:020d}+{b:020d}.parquet" for a, b in ((0, 2), (3, 5), (6, 8))]
    ids = [r["id"] for n in published for r in pq.read_table(tmp_path / "orders" / n).to_pylist()]
    assert ids == list(range(9))


def test_connector_keys_and_alias(tmp_path):
    assert plugins.resolve("connector", "FilesSink") is FilesSinkConnector
    issues = FilesSinkConnector().config().validate({"files.dir": str(tmp_path), "files.format": "csv",
                                                     "files.rotate.records": "0"})
    assert {i.key for i in issues} == {"files.format", "files.rotate.records"}
    with pytest.raises(ConfigException, match="files.dir"):
        FilesSinkConnector().start({})
    connector = FilesSinkConnector()
    connector.start({"files.dir": "x"})
    assert connector.task_configs(2) == [{"files.dir": "x"}] * 2
