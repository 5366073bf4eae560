"""The only package that talks to Spark Structured Streaming: the Kafka source (:mod:`.source`) and the
connector's query (:mod:`.query`: ``writeStream``, ``foreachBatch``, trigger, checkpoint generations)."""
