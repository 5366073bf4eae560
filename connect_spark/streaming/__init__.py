"""The only package that talks to Spark Structured Streaming: the Kafka source and the batch adapter."""
