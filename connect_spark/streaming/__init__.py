"""The only package that talks to Spark Structured Streaming: the Kafka source (:mod:`.source`), the raw
batch it delivers (:mod:`.raw_batch`) and the connector's query (:mod:`.query`: ``writeStream``,
``foreachBatch``, trigger, checkpoint generations)."""
