"""connect_spark: Kafka Connect's sink runtime, rebuilt on Spark Structured Streaming."""

__version__ = "0.1.0"
