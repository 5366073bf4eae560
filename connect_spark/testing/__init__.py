"""Test support for connector authors: Kafka helpers, a recording task, a faulty task, and a harness
that runs a connector against a real topic in a few lines. connect_spark's own tests use them too."""
