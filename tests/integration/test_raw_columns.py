"""The raw columns every path reads from Spark's Kafka source: a record without headers has an empty list.

Real broker, real Spark. Spark's Kafka source gives a null ``headers`` for a record without headers; handed to
Python that way, Spark's Arrow writer spent ~10 µs a row on it (``streaming/source.py``, ``raw_columns``).
"""

from __future__ import annotations

from connect_spark.streaming.source import raw_columns
from connect_spark.testing.kafka import create_topic, produce


def test_a_record_without_headers_has_an_empty_header_list_read_with_headers_or_without(
        spark, bootstrap_servers, topic_name):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, [(0, b"k0", b"v0", [("h", b"x")]), (0, b"k1", b"v1", []),
                                            (0, b"k2", None, [])])
    for include in ("true", "false"):
        raw = raw_columns(spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                          .option("subscribe", topic_name).option("includeHeaders", include).load())
        assert not raw.schema["headers"].nullable
        got = [[(h["key"], bytes(h["value"])) for h in r["headers"]] for r in raw.orderBy("offset").collect()]
        assert got == ([[("h", b"x")], [], []] if include == "true" else [[], [], []])
        assert raw.toArrow().column("headers").null_count == 0
