"""Contracts of the batch pipeline's structure, with a real broker, Spark and Delta.

* A batch's dead letter queue writes are acknowledged before the sink commits data covering their
  offsets (the Delta commit in ``put_dataframe``); a failed DLQ write fails the batch before it.
* A SparkSession handed in without Spark's Kafka source or Delta is refused at start, with a message
  saying how to get one that has them (a plain ``SparkSession.builder...getOrCreate()``, in a subprocess
  since this session has the jars).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from connect_spark.testing.harness import run_connector, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce


def _json_worker(bootstrap, work_dir, **extra):
    return worker_properties(bootstrap, work_dir, key_converter="org.apache.kafka.connect.storage.StringConverter",
                             value_converter="org.apache.kafka.connect.json.JsonConverter",
                             value_converter_schemas_enable="false", **extra)


def test_a_failed_dlq_write_fails_the_batch_before_the_delta_commit(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    dlq = f"dlq-{topic_name}"
    # The broker refuses any record over 512 bytes on the DLQ topic: the bad record's DLQ write fails.
    create_topic(bootstrap_servers, dlq, 1, config={"max.message.bytes": "512"})
    good = [(0, None, json.dumps({"id": i, "note": "ok"}).encode(), []) for i in range(20)]
    bad = [(0, None, b"{not json " + b"x" * 2_000, [])]
    produce(bootstrap_servers, topic_name, good + bad + good)
    table = Path(work_dir) / "delta" / "t"
    connector = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
                 "delta.table.path": str(table), "errors.tolerance": "all",
                 "errors.deadletterqueue.topic.name": dlq}
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 1
    assert sum(end_offsets(bootstrap_servers, dlq).values()) == 0
    # Nothing of the batch reached the table, and no offset was committed past the lost report.
    # (the abandoned one-pass write may leave an empty _delta_log folder: no commit file is the proof)
    assert not list((table / "_delta_log").glob("*.json"))
    assert result.committed == {}


def test_dlq_writes_are_acknowledged_before_the_delta_commit(spark, bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    dlq = f"dlq-{topic_name}"
    good = [(0, None, json.dumps({"id": i, "note": "ok"}).encode(), []) for i in range(20)]
    produce(bootstrap_servers, topic_name, good + [(0, None, b"{not json", [])] + good)
    table = Path(work_dir) / "delta" / "t"
    connector = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
                 "delta.table.path": str(table), "errors.tolerance": "all",
                 "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1"}
    result = run_connector(connector, bootstrap_servers, work_dir, spark=spark,
                           worker=_json_worker(bootstrap_servers, work_dir))
    assert result.exit_code == 0
    assert sum(end_offsets(bootstrap_servers, dlq).values()) == 1
    assert spark.read.format("delta").load(str(table)).count() == 40
    assert sum(result.committed.values()) == 41


_PLAIN_SESSION = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from connect_spark.config.validation import validate_configs
    from connect_spark.runtime.worker.standalone import StandaloneWorker

    worker_props, connector_props = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    worker, connectors = validate_configs(worker_props, [connector_props])
    standalone = StandaloneWorker(worker, connectors, spark=spark, available_now=True)
    code = standalone.run()
    print(json.dumps({"code": code, "failures": [str(e) for _, e in standalone.failures]}))
""")


def test_a_session_without_kafka_or_delta_is_refused_with_how_to_get_one(bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    worker = worker_properties(bootstrap_servers, work_dir)
    connector = {"name": f"delta-{topic_name}", "connector.class": "DeltaSink", "topics": topic_name,
                 "delta.table.path": str(Path(work_dir) / "t")}
    done = subprocess.run([sys.executable, "-c", _PLAIN_SESSION, json.dumps(worker), json.dumps(connector)],
                          capture_output=True, text=True, timeout=300)
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["code"] == 1
    (message,) = outcome["failures"]
    assert "lacks Spark's Kafka source" in message and "Delta Lake" in message
    assert "spark.jars.packages" in message and "io.delta:delta" in message and "spark-sql-kafka-0-10" in message
    assert "JavaPackage" not in done.stderr
