# Databricks notebook source
# MAGIC %md
# MAGIC # Kafka topic → Delta table, drained on a schedule
# MAGIC
# MAGIC Runs connect_spark's exactly-once `DeltaSink` with `available_now=True`: everything in the topic
# MAGIC since the last committed offsets is upserted into the Delta table, offsets are committed, and the
# MAGIC notebook ends (schedule it as a Databricks job). Settings come from the widgets on Databricks, or from
# MAGIC `key=value` arguments when run as a script: `python delta_sink_available_now.py topic=orders ...`.

# COMMAND ----------

from connect_spark.notebook import settings_from_widgets, start_connector

DEFAULTS = {
    "bootstrap.servers": "localhost:9092",
    "topic": "demo-orders",
    "connector.name": "orders-to-delta",
    "delta.table.path": "/tmp/connect-spark/delta/orders",
    "checkpoint.location": "/tmp/connect-spark/checkpoints",
    "pk.fields": "order_id",
}

try:
    dbutils  # noqa: B018 - defined by Databricks in a notebook
except NameError:
    dbutils = None
settings = settings_from_widgets(dbutils, DEFAULTS)

# COMMAND ----------

try:
    spark  # noqa: B018 - the notebook's session on Databricks
except NameError:  # a plain script: a local session with the Kafka and Delta jars
    from connect_spark.spark_session import get_or_create_session

    spark = get_or_create_session(app_name="delta-sink-notebook", ui=False)

worker = {
    "bootstrap.servers": settings["bootstrap.servers"],
    "checkpoint.location": settings["checkpoint.location"],
    "offset.storage.replication.factor": "1",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "false",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
connector = {
    "name": settings["connector.name"],
    "connector.class": "DeltaSink",
    "topics": settings["topic"],
    "delta.table.path": settings["delta.table.path"],
    "insert.mode": "upsert",
    "pk.mode": "record_value",
    "pk.fields": settings["pk.fields"],
    "auto.evolve": "true",
}

# COMMAND ----------

query = start_connector(spark, connector, worker=worker, available_now=True)
query.awaitTermination()
if not query.succeeded:
    raise RuntimeError(f"connector {query.name} failed: {query.exception()!r}")

# COMMAND ----------

table = spark.read.format("delta").load(settings["delta.table.path"])
print(f"{settings['delta.table.path']}: {table.count()} rows")
