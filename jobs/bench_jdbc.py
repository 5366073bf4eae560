"""Benchmark: the JDBC sink into PostgreSQL, insert and upsert, rows/s end to end; where the time goes.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_jdbc.py [--records 1000000]

Starts a local broker and a throwaway PostgreSQL (``connect_spark.testing.postgres``) on the same machine,
fills a 4-partition topic with JSON-with-schemas records (7 fields: bigint, text, integer, double,
boolean, Timestamp, text; ~500 bytes with the schema; compact as Kafka's JsonConverter writes JSON, or with
``--spaced`` as Python's ``json.dumps`` does), starts one SparkSession (local[2]), and drains the
topic with ``available-now`` through ``io.confluent.connect.jdbc.JdbcSinkConnector`` in executor mode
(``tasks.max=2`` unless ``--tasks``):

  insert          insert.mode=insert, pk.mode=none (COPY straight into the table);
  upsert          insert.mode=upsert, pk.mode=record_key over half as many keys as records (COPY into a
                  temporary table, INSERT ... ON CONFLICT DO UPDATE), so half of the rows update existing ones;
  insert-records  insert as above, with a HeaderFrom transform (no vectorized form, and nothing the sink
                  reads): the per-record path, for a same-run comparison.

The sink is an ``ArrowSinkTask``. With the JsonConverter the connector compiles to a vectorized plan, so in
executor mode Spark converts the records (``from_json`` and the exactness checks, in the JVM) before the
Python workers get them, and the task reads its rows from the frame's Arrow columns
(``connect_spark/runtime/processors/executor_vectorized.py``, ``connect_spark/connectors/jdbc/frame_rows.py``). Without a plan
(the ``insert-records`` arm) the task takes records (``put``): the JsonConverter converts each record in
Python and rows are read from the records.

Each arm runs on a warm session (a warm-up run first, on two batches' worth of records) and a fresh table; rows/s counts every produced record
and includes the query start. Then the profile of each path's work on 100,000 records, in this process:
the per-record path — JSON conversion in Python (every record after the first of its schema takes the
JsonConverter's fast path, ``connect_spark/converters/json_fast.py``), records → rows, and the database
write (COPY — binary here, the table having the types the sink created — and statement, offsets, commit) —
and the Arrow path — Spark's conversion of the same records to the split frame the workers receive (headers
left out, as executor mode does for a task that does not read them; collected to the driver with ``toArrow``:
wall time on local[2], and the JVM's CPU time, which includes the Arrow hand-over), frame → rows, and the same
write. Not a test: figures only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"insert": 50_000, "upsert": 30_000}
_JSON = "org.apache.kafka.connect.json.JsonConverter"
_KEY_SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int64", "optional": False}]}
_VALUE_SCHEMA = {"type": "struct", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "user", "type": "string", "optional": True},
    {"field": "qty", "type": "int32", "optional": True},
    {"field": "amount", "type": "double", "optional": True},
    {"field": "paid", "type": "boolean", "optional": True},
    {"field": "ts", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
    {"field": "note", "type": "string", "optional": True},
]}


#: JSON text as Kafka's JsonConverter writes it (compact); ``--spaced`` writes it as Python's json.dumps does
SEPARATORS = {"compact": (",", ":"), "spaced": (", ", ": ")}


def _record(i: int, keys: int, separators: tuple[str, str] = SEPARATORS["compact"]) -> tuple:
    key_id = i % keys
    key = json.dumps({"schema": _KEY_SCHEMA, "payload": {"id": key_id}}, separators=separators).encode()
    value = json.dumps({"schema": _VALUE_SCHEMA, "payload": {
        "id": key_id, "user": f"user-{i % 1000:04d}", "qty": i % 100, "amount": round(i * 0.37, 2), "paid": i % 3 == 0,
        "ts": 1_700_000_000_000 + i, "note": "x" * 24}}, separators=separators).encode()
    return (None, key, value, [])


def _drain(spark, bootstrap, work, topic, name, postgres, mode, batch_size, max_offsets, per_record=False, tasks=2,
           dlq=False):
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties

    worker = worker_properties(bootstrap, work / name, key_converter=_JSON, value_converter=_JSON,
                               task_execution_mode="executor", max_offsets_per_trigger=max_offsets,
                               offset_flush_interval_ms=10_000)
    connector = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic,
                 "tasks.max": str(tasks), "connection.url": postgres.jdbc_url(), "table.name.format": name,
                 "auto.create": "true", "insert.mode": mode, "pk.mode": "record_key" if mode == "upsert" else "none",
                 "batch.size": str(batch_size)}
    if dlq:  # a dead letter queue: the records' headers are read, as the DLQ records carry them
        connector.update({"errors.tolerance": "all", "errors.deadletterqueue.topic.name": f"dlq-{name}",
                          "errors.deadletterqueue.topic.replication.factor": "1"})
    if per_record:  # HeaderFrom has no vectorized form: the whole connector takes the per-record path
        connector.update({"transforms": "hf", "transforms.hf.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
                          "transforms.hf.fields": "note", "transforms.hf.headers": "note",
                          "transforms.hf.operation": "copy"})
    started = time.monotonic()
    code = run_standalone(worker, [connector], available_now=True, spark=spark)
    return time.monotonic() - started, code


def _profile(spark, postgres, records: int, separators: tuple[str, str]) -> dict[str, float]:
    """Seconds per 100,000 records of each step of each path's work, in this process."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from connect_spark.api.records import TopicPartition
    from connect_spark.columnar.plan import compile_plan
    from connect_spark.columnar.records import connect_schemas, with_connect_schemas
    from connect_spark.connectors.jdbc.frame_rows import frame_batches
    from connect_spark.runtime.processors.executor_vectorized import good_frame
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig
    from connect_spark.connectors.jdbc.config import JdbcSinkConfig
    from connect_spark.connectors.jdbc.dialect import dialect_for
    from connect_spark.connectors.jdbc.rows import LayoutCache, table_batches
    from connect_spark.connectors.jdbc.writer import BatchWriter
    from connect_spark.runtime.conversion.sink_records import RawRecord
    from connect_spark.runtime.tasks.builder import build_task_plugins

    props = {"name": "profile", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "p",
             "connection.url": postgres.jdbc_url(), "table.name.format": "profile", "auto.create": "true",
             "key.converter": _JSON, "value.converter": _JSON}
    plugins = build_task_plugins(ConnectorConfig(props), WorkerConfig({"bootstrap.servers": "x:1", "key.converter": _JSON, "value.converter": _JSON}), 0)
    raw = []
    for i in range(records):
        _, key, value, _ = _record(i, records, separators)
        raw.append(RawRecord(topic="p", partition=0, offset=i, timestamp=1_700_000_000_000, timestamp_type=0,
                             key=key, value=value, headers=()))
    figures = {}
    started = time.perf_counter()
    converted = plugins.converter.convert(raw).records
    figures["per-record path: JSON conversion (Python)"] = time.perf_counter() - started
    config = JdbcSinkConfig.parse(props)
    started = time.perf_counter()
    batches = table_batches(converted, config, LayoutCache(config))
    figures["per-record path: records -> rows"] = time.perf_counter() - started
    dialect = dialect_for(config)
    writer = BatchWriter(dialect, config)
    conn = dialect.connect(config.connection)
    writer.prepare(conn, batches)
    writer.read_offsets(conn)
    started = time.perf_counter()
    writer.write(conn, batches, {TopicPartition("p", 0): records}, None)
    figures["per-record path: database write (COPY, offsets, commit)"] = time.perf_counter() - started

    headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    raw_table = pa.table({
        "topic": [r.topic for r in raw], "partition": pa.array([r.partition for r in raw], pa.int32()),
        "offset": pa.array([r.offset for r in raw], pa.int64()), "timestamp_ms": [r.timestamp for r in raw],
        "timestamp_type": pa.array([r.timestamp_type for r in raw], pa.int32()),
        "key": pa.array([r.key for r in raw], pa.binary()), "value": pa.array([r.value for r in raw], pa.binary()),
        "headers": pa.array([[] for _ in raw], headers_type)})
    raw_frame = spark.createDataFrame(raw_table).repartition(2).cache()
    raw_frame.count()
    plan = compile_plan(ConnectorConfig(props), WorkerConfig({"bootstrap.servers": "x:1", "key.converter": _JSON,
                                                              "value.converter": _JSON}))
    output = plan.apply(raw_frame)
    # as executor mode ships it to a task that reads no headers (runtime/processors/executor_tasks.py)
    shipped = lambda: output.split().drop("headers", "frame_headers")  # noqa: E731
    shipped().toArrow()  # learns the schema, warms the JVM
    jvm = _jvm_process()
    cpu_before = _cpu_seconds(jvm)
    started = time.perf_counter()
    split = shipped().toArrow()
    figures["Arrow path: Spark conversion to the split frame (wall, local[2])"] = time.perf_counter() - started
    if jvm is not None:
        figures["Arrow path: Spark conversion to the split frame (JVM CPU, both cores)"] = _cpu_seconds(jvm) - cpu_before
    raw_frame.unpersist()
    started = time.perf_counter()
    frame = with_connect_schemas(good_frame(split.filter(pc.equal(split.column("row_kind"), 1))),
                                 output.key_schema, output.value_schema)
    batches = frame_batches(frame, *connect_schemas(frame), config, LayoutCache(config))
    figures["Arrow path: frame -> rows"] = time.perf_counter() - started
    started = time.perf_counter()
    writer.write(conn, batches, {TopicPartition("p", 0): records}, None)
    figures["Arrow path: database write (COPY, offsets, commit)"] = time.perf_counter() - started
    conn.close()
    return {k: v * 100_000 / records for k, v in figures.items()}


def _jvm_process():
    """The Spark JVM, or ``None`` without psutil (the ``bench`` extra)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `jobs.bench` from a source checkout
    try:
        from jobs.bench.process_metrics import spark_jvm
    except ImportError:
        return None
    return spark_jvm()


def _cpu_seconds(process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _fill(bootstrap: str, topic: str, records) -> None:
    """Produce the records with confluent-kafka's C client when it is installed (the ``test`` extra: ~10x
    faster than kafka-python for 1M records), else with :func:`connect_spark.testing.kafka.produce`."""
    try:
        from confluent_kafka import Producer
    except ImportError:
        from connect_spark.testing.kafka import produce

        produce(bootstrap, topic, records)
        return
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all",
                         "queue.buffering.max.messages": 1_000_000})
    for _, key, value, _ in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"records for {topic} were not all delivered")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=50_000, help="the connector's batch.size")
    parser.add_argument("--max-offsets", type=int, default=250_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--tasks", type=int, default=2, help="the connector's tasks.max (4 partitions: with 2, each "
                        "task owns two and every batch is shuffled to its task; with 4, Spark's partitions are the tasks)")
    parser.add_argument("--warm-up-batches", type=int, default=2,
                        help="batches of --max-offsets records drained before the measured arms (default 2)")
    parser.add_argument("--dlq", action="store_true", help="every connector with a dead letter queue (errors.tolerance=all), "
                        "so the records' headers are read")
    parser.add_argument("--spaced", action="store_true", help="JSON written with spaces after , and : (as Python's "
                        "json.dumps does) instead of compact (as Kafka's JsonConverter does)")
    parser.add_argument("--arms", default="insert,upsert,insert-records",
                        help="the arms to run, in this order (comma-separated; an arm named twice runs twice; the rate ratio needs insert and insert-records)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session
    from connect_spark.testing.kafka import create_topic
    from connect_spark.testing.postgres import LocalPostgres

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench-jdbc-"))
    with LocalKafkaBroker(work / "kafka", heap="1g") as broker, LocalPostgres(work / "pg") as postgres:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "bench", 4)
        create_topic(bootstrap, "warm", 4)
        started = time.monotonic()
        separators = SEPARATORS["spaced" if args.spaced else "compact"]
        _fill(bootstrap, "bench", (_record(i, args.records // 2, separators) for i in range(args.records)))
        # a warm-up of full-size batches, with the measured arms' tasks.max (its plan, shuffle or not): after 10,000
        # records the first measured arm, whichever it was, ran ~35% slower than the same arm run second, and
        # ~10% slower after one batch (the JVM still compiling the conversion's hot code)
        warm = min(args.records, args.max_offsets * args.warm_up_batches)
        _fill(bootstrap, "warm", (_record(i, warm // 2) for i in range(warm)))
        print(f"produced {args.records:,} records in {time.monotonic() - started:.1f} s")
        spark = get_or_create_session(app_name="bench-jdbc", ui=False,
                                      conf={"spark.master": "local[2]", "spark.driver.memory": "2g"})
        _drain(spark, bootstrap, work, "warm", "warm_up", postgres, "upsert", args.batch_size, args.max_offsets,
               tasks=args.tasks, dlq=args.dlq)
        results = {}
        for position, arm in enumerate(args.arms.split(",")):
            mode = arm.split("-")[0]
            # a connector (offsets, table) of its own per run: an arm named twice is measured twice
            name = f"bench_{arm.replace('-', '_')}_{position}"
            elapsed, code = _drain(spark, bootstrap, work, "bench", name, postgres, mode,
                                   args.batch_size, args.max_offsets, per_record=arm.endswith("records"), tasks=args.tasks,
                                   dlq=args.dlq)
            rate = args.records / elapsed
            results[arm] = rate
            print(f"{arm}: {args.records:,} records in {elapsed:.1f} s = {rate:,.0f} rows/s (exit {code}); "
                  f"target {TARGETS[mode]:,} rows/s: {'met' if rate >= TARGETS[mode] else 'NOT met'} "
                  f"(ratio {rate / TARGETS[mode]:.2f}); load average {os.getloadavg()[0]:.1f}")
        if "insert" in results and "insert-records" in results:
            print(f"insert, Spark-converted frames / per-record path: {results['insert'] / results['insert-records']:.2f}")
        print("profile of each path's work, seconds per 100,000 records (one core unless said):")
        print(f"JSON text: {'spaced' if args.spaced else 'compact'}")
        for step, seconds in _profile(spark, postgres, min(args.records, 100_000), separators).items():
            print(f"  {step}: {seconds:.2f} s")
        spark.stop()
    print(json.dumps({k: round(v) for k, v in results.items()}))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: figures are noisy)")


if __name__ == "__main__":
    main()
