# Databricks notebook source
# MAGIC %md
# MAGIC # A connector as a long-running stream, watched from the notebook
# MAGIC
# MAGIC Starts a sink connector in the notebook's session (the `RecordingSink` test double here: swap
# MAGIC `connector.class` for yours), shows its progress and Kafka Connect metrics while it runs, then stops
# MAGIC it gracefully (final `pre_commit`, `close`, commit). `run.seconds=0` keeps it running until the cell
# MAGIC is cancelled.

# COMMAND ----------

import time

from connect_spark.notebook import settings_from_widgets, start_connector

DEFAULTS = {
    "bootstrap.servers": "localhost:9092",
    "topic": "demo-orders",
    "connector.name": "orders-recorder",
    "recording.dir": "/tmp/connect-spark/recorded",
    "checkpoint.location": "/tmp/connect-spark/checkpoints",
    "run.seconds": "60",
}

try:
    dbutils  # noqa: B018 - defined by Databricks in a notebook
except NameError:
    dbutils = None
settings = settings_from_widgets(dbutils, DEFAULTS)

try:
    spark  # noqa: B018 - the notebook's session on Databricks
except NameError:
    from connect_spark.spark_session import get_or_create_session

    spark = get_or_create_session(app_name="recording-sink-notebook", ui=False)

# COMMAND ----------

query = start_connector(spark, {
    "name": settings["connector.name"],
    "connector.class": "RecordingSink",
    "topics": settings["topic"],
    "recording.dir": settings["recording.dir"],
}, worker={
    "bootstrap.servers": settings["bootstrap.servers"],
    "checkpoint.location": settings["checkpoint.location"],
    "offset.storage.replication.factor": "1",
    "trigger": "5s",
})

# COMMAND ----------

deadline = time.monotonic() + float(settings["run.seconds"])
try:
    while query.isActive and (float(settings["run.seconds"]) <= 0 or time.monotonic() < deadline):
        metrics = query.metrics()
        if metrics is not None:
            print({"records": metrics["records_read"], "lag": metrics["lag"]["records-lag-max"],
                   "committed": metrics["committed"]})
        time.sleep(10)
finally:
    query.stop()
