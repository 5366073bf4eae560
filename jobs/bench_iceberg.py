"""Benchmark: the Iceberg sink ÷ plain Spark ``writeStream.format("iceberg")`` on the same Kafka records.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_iceberg.py [--records 1000000]
        [--partitions 4] [--batch 250000] [--upsert] [--rounds 2]

Starts a local Kafka broker, writes ``--records`` JSON records (``{"id", "user", "amount", "ts", "note"}``,
~110 bytes) to one topic with Spark's Kafka sink, then drains the topic twice per round into fresh Iceberg tables of
one Hadoop catalog, in one SparkSession (``local[2]``), one after the other:

(a) plain Spark: ``readStream.format("kafka")`` → ``from_json`` → ``writeStream.format("iceberg")``,
    AvailableNow, the same ``maxOffsetsPerTrigger`` — Spark's own ceiling, no exactly-once bookkeeping
    beyond its checkpoint;
(b) connect_spark: ``org.apache.iceberg.connect.IcebergSinkConnector`` with the JsonConverter
    (``schemas.enable=false``), AvailableNow, offsets in each snapshot and in the offset store.

Prints records/s of each and the ratio b/a per round (``--rounds``, default 2: in the first, (a) runs on a
cold JVM and warms it for (b); from the second on, both run warm, which is the fair comparison).
``--upsert`` makes (b) MERGE on ``id`` (ids repeat every ``records/2``) and (a) a ``foreachBatch`` MERGE,
instead of appends. Not a test: figures depend on the
machine (run it under the benchmark lock on a shared machine).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
import uuid
from pathlib import Path


def _fill(spark, bootstrap: str, topic: str, records: int, partitions: int, keys: int) -> None:
    from pyspark.sql import functions as F

    from connect_spark.testing.kafka import create_topic

    create_topic(bootstrap, topic, partitions)
    i = F.col("id")
    value = F.to_json(F.struct((i % keys).alias("id"), F.format_string("user-%04d", i % 1000).alias("user"),
                               (F.round(i * 0.37, 2)).alias("amount"), (F.lit(1_700_000_000_000) + i).alias("ts"),
                               F.lit("x" * 24).alias("note")))
    (spark.range(records).select((i % partitions).cast("int").alias("partition"),
                                 (i % keys).cast("string").alias("key"), value.alias("value"))
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
     .option("kafka.linger.ms", "20").option("kafka.batch.size", str(512 * 1024)).save())


def _plain_spark(spark, bootstrap: str, topic: str, table: str, batch: int, checkpoint: Path, upsert: bool) -> None:
    from pyspark.sql import functions as F

    schema = "id bigint, user string, amount double, ts bigint, note string"
    spark.sql(f"CREATE TABLE {table} ({schema}) USING iceberg")
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(batch)).load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("v")).select("v.*"))
    writer = stream.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    if upsert:
        def merge(frame, batch_id):
            from pyspark.sql import Window

            last = frame.withColumn("_r", F.row_number().over(Window.partitionBy("id").orderBy(F.col("ts").desc())))
            last.where("_r = 1").drop("_r").createOrReplaceTempView("bench_src")
            frame.sparkSession.sql(f"MERGE INTO {table} t USING bench_src s ON t.id = s.id "
                                   "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        query = writer.foreachBatch(merge).start()
    else:
        query = writer.format("iceberg").toTable(table)
    query.awaitTermination()


def _connect_spark(spark, bootstrap: str, topic: str, catalog: str, warehouse: Path, table: str, batch: int,
                   work: Path, upsert: bool) -> None:
    from connect_spark.runtime.worker.launcher import run_standalone
    from connect_spark.testing.harness import worker_properties

    json_converter = "org.apache.kafka.connect.json.JsonConverter"
    worker = worker_properties(bootstrap, work, key_converter="org.apache.kafka.connect.storage.StringConverter",
                               value_converter=json_converter, value_converter_schemas_enable="false",
                               max_offsets_per_trigger=batch)
    connector = {"name": f"bench-{uuid.uuid4().hex[:6]}", "connector.class":
                 "org.apache.iceberg.connect.IcebergSinkConnector", "topics": topic, "iceberg.catalog": catalog,
                 "iceberg.catalog.type": "hadoop", "iceberg.catalog.warehouse": str(warehouse),
                 "iceberg.tables": table, "iceberg.tables.auto-create-enabled": "true"}
    if upsert:
        connector["iceberg.tables.default-id-columns"] = "id"
    code = run_standalone(worker, [connector], available_now=True, spark=spark)
    if code != 0:
        raise SystemExit(f"connect_spark run failed with exit code {code}")


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>10,.0f} rec/s ({n:,} in {seconds:.1f} s)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=250_000, help="maxOffsetsPerTrigger of both arms")
    parser.add_argument("--upsert", action="store_true", help="MERGE on id instead of appending")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of (a) then (b), fresh tables each; from the second on both run on a warm JVM")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.spark_session import get_or_create_session

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="connect-spark-bench-iceberg-"))
    broker = LocalKafkaBroker(work / "kafka", heap="512m")
    broker.start()
    spark = None
    try:
        spark = get_or_create_session(master="local[2]", app_name="bench-iceberg", ui=False, optional_sets=("iceberg",),
                                      conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"})
        catalog, warehouse = "bench", work / "warehouse"
        spark.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"spark.sql.catalog.{catalog}.type", "hadoop")
        spark.conf.set(f"spark.sql.catalog.{catalog}.warehouse", str(warehouse))
        spark.conf.set(f"spark.sql.catalog.{catalog}.cache-enabled", "false")
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
        topic = "bench-orders"
        keys = args.records // 2 if args.upsert else args.records
        started = time.perf_counter()
        _fill(spark, broker.bootstrap_servers, topic, args.records, args.partitions, keys)
        print(f"filled {args.records:,} records into {args.partitions} partitions in "
              f"{time.perf_counter() - started:.1f} s ({'upsert' if args.upsert else 'append'}, "
              f"maxOffsetsPerTrigger {args.batch:,})")

        for round_ in range(1, args.rounds + 1):
            started = time.perf_counter()
            _plain_spark(spark, broker.bootstrap_servers, topic, f"{catalog}.db.plain{round_}", args.batch,
                         work / f"plain-cp{round_}", args.upsert)
            plain = time.perf_counter() - started
            plain_rows = spark.table(f"{catalog}.db.plain{round_}").count()
            print(f"round {round_} (a) plain Spark writeStream iceberg : {_rate(args.records, plain)}  "
                  f"rows {plain_rows:,}")

            started = time.perf_counter()
            _connect_spark(spark, broker.bootstrap_servers, topic, catalog, warehouse, f"db.sink{round_}", args.batch,
                           work / f"connect{round_}", args.upsert)
            sink = time.perf_counter() - started
            sink_rows = spark.table(f"{catalog}.db.sink{round_}").count()
            print(f"round {round_} (b) connect_spark IcebergSink       : {_rate(args.records, sink)}  "
                  f"rows {sink_rows:,}")
            warm = "the JVM cold for (a), warmed by it for (b)" if round_ == 1 else "both warm"
            print(f"round {round_} ratio b/a = {plain / sink:.2f} (records/s of the sink ÷ plain Spark; {warm})")
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
