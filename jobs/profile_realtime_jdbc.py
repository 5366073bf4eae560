"""Profile: arm rj's per-row work without Spark — raw rows → JsonConverter → the JDBC sink's ``put`` → PostgreSQL.

    /work/main/.venv/bin/python jobs/profile_realtime_jdbc.py [--records 50000] [--put-rows 100] [--profile]

What a real-time partition's task does with the rows its writer hands over
(:meth:`connect_spark.runtime.realtime.partition_task.PartitionTask.deliver`): the rows become a raw batch, the
connector's converters turn them into records (``errors.*`` around them), the task loop ``put``s them and the JDBC
sink writes them and the partition's next offset in one transaction. Here the same :class:`PartitionTask` runs in
this process, with a commit function that commits nothing (no Kafka), on the harness's records
(:mod:`jobs.bench.records`: schemaless JSON, the eleven fields in ``fields.whitelist``, as arm rj configures the
sink) into a throwaway PostgreSQL (:class:`connect_spark.testing.postgres.LocalPostgres`). At 10k rec/s over two
partitions, each partition's writer puts about every 20 ms (``put_linger_ms``): ~100 rows a ``put``
(``--put-rows``).

Prints µs a row for the whole path and for its stages (conversion, records → rows, the database write), and with
``--profile`` the top functions by cumulative and by own time (cProfile). Not a test: figures only.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout

from connect_spark.api.records import TopicPartition  # noqa: E402
from connect_spark.config.connector import ConnectorConfig  # noqa: E402
from connect_spark.config.worker import WorkerConfig  # noqa: E402
from connect_spark.connectors.jdbc.rows import table_batches  # noqa: E402
from connect_spark.connectors.jdbc.task import JdbcSinkTask  # noqa: E402
from connect_spark.runtime.conversion.sink_records import raw_records  # noqa: E402
from connect_spark.runtime.realtime.partition_task import PartitionTask, RealtimeSpec  # noqa: E402
from connect_spark.runtime.realtime.rows import raw_batch  # noqa: E402
from connect_spark.testing.postgres import LocalPostgres  # noqa: E402
from jobs.bench.records import FIELD_NAMES, record_key, record_value  # noqa: E402

TOPIC = "orders"


def _spec(jdbc_url: str, table: str) -> RealtimeSpec:
    connector = ConnectorConfig({
        "name": "profile-rj", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": TOPIC,
        "connection.url": jdbc_url, "table.name.format": table, "insert.mode": "insert", "auto.create": "true",
        "fields.whitelist": ",".join(FIELD_NAMES), "task.execution.mode": "realtime"})
    worker = WorkerConfig({
        "bootstrap.servers": "127.0.0.1:1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"})
    config = {k: str(v) for k, v in {**connector.resolved, "task.id": "0"}.items()}
    return RealtimeSpec("profile", "profile-rj", JdbcSinkTask, (config,), {TopicPartition(TOPIC, 0): 0},
                        dict(connector.resolved), dict(worker.resolved))


def _rows(start: int, count: int) -> list[tuple]:
    """Raw rows as the writer buffers them (topic, partition, offset, timestamp, type, key, value, headers)."""
    return [(TOPIC, 0, i, 1_700_000_000_000 + i, 0, record_key(i), record_value(i), []) for i in range(start, start + count)]


def _task(spec: RealtimeSpec) -> PartitionTask:
    """The partition's task with an attempt open at offset 0 whose commits go nowhere (no Kafka here)."""
    task = PartitionTask(spec, TopicPartition(TOPIC, 0))
    task.loop = task.unit.new_loop(lambda offsets: None)
    task.loop.started = True
    task.loop.open({task.tp: 0})
    task.loop.take_rewinds()
    return task


def _deliver_all(task: PartitionTask, first: int, records: int, put_rows: int) -> float:
    """Seconds to deliver ``records`` rows from offset ``first`` in puts of ``put_rows``."""
    chunks = [_rows(start, min(put_rows, first + records - start)) for start in range(first, first + records, put_rows)]
    began = time.perf_counter()
    for rows in chunks:
        task.deliver(rows)
    return time.perf_counter() - began


def _stages(task: PartitionTask, records: int, put_rows: int) -> dict[str, float]:
    """µs a row of conversion and of records → rows, on batches of ``put_rows`` (nothing written)."""
    sink = task.unit.task
    batches = [raw_batch(_rows(start, put_rows)) for start in range(0, records, put_rows)]
    began = time.perf_counter()
    converted = [task.unit.plugins.converter.convert(raw_records(b)).records for b in batches]
    convert_s = time.perf_counter() - began
    began = time.perf_counter()
    for recs in converted:
        table_batches(recs, sink.config, sink.layouts)
    rows_s = time.perf_counter() - began
    return {"convert": convert_s * 1e6 / records, "rows": rows_s * 1e6 / records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--put-rows", type=int, default=100, help="rows a put (default 100: 10k rec/s, 2 partitions)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    args = parser.parse_args()

    with LocalPostgres(tempfile.mkdtemp(prefix="profile-rj-")) as pg:
        task = _task(_spec(pg.jdbc_url("postgres"), "profile_rj"))
        _deliver_all(task, 0, 2 * args.put_rows, args.put_rows)  # warm: table created, connection open
        first = 2 * args.put_rows
        seconds = _deliver_all(task, first, args.records, args.put_rows)
        stages = _stages(task, args.records, args.put_rows)
        print(f"{args.records} rows in puts of {args.put_rows}: {seconds * 1e6 / args.records:.1f} µs a row "
              f"({args.records / seconds:,.0f} rows/s); stages without the database: conversion "
              f"{stages['convert']:.1f} µs, records → rows {stages['rows']:.1f} µs a row")
        if args.profile:
            profiler = cProfile.Profile()
            first += args.records
            profiler.enable()
            _deliver_all(task, first, args.records, args.put_rows)
            profiler.disable()
            for order in ("cumulative", "tottime"):
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(30)
                print(out.getvalue())
        task.unit.worker_task.stop()


if __name__ == "__main__":
    main()
