"""What TLS costs connect_spark's Python Kafka clients: reading the stores, and produce/read throughput.

    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_tls.py               # 50,000 records
    flock /tmp/connect_spark_bench.lock .venv/bin/python jobs/bench_tls.py --records 200000

Starts a local broker with PLAINTEXT, SSL (client certificate required) and SASL_SSL (SCRAM-SHA-512)
listeners and test-time keys, then measures (1) how long a cold SSLContext takes per store kind (JKS goes
through keytool; each process pays it once per distinct settings) and (2) records/s of a kafka-python
producer (acks=all, the dead letter queue producer's settings) and of a reading consumer (the stores' tail
reader), over each listener. Prints a Markdown table. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=200, help="value bytes")
    args = parser.parse_args()

    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import TopicPartition

    from connect_spark.jvm import ensure_resolved
    from connect_spark.localkafka import LocalKafkaBroker
    from connect_spark.kafka.tls import clear_cache, ssl_context
    from connect_spark.kafka.clients import kafka_client_kwargs
    from connect_spark.testing.tls import make_tls_material

    ensure_resolved()
    work = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    tls = make_tls_material(work / "tls")
    pw = tls.store_password
    truststores = {
        "PEM": {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca_pem)},
        "PKCS12": {"ssl.truststore.location": str(tls.client_truststore("p12")), "ssl.truststore.password": pw},
        "JKS": {"ssl.truststore.location": str(tls.client_truststore("jks")), "ssl.truststore.password": pw},
    }
    keystores = {
        "PEM": {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tls.client_keystore("pem")),
                "ssl.key.password": tls.key_password},
        "PKCS12": {"ssl.keystore.location": str(tls.client_keystore("p12")), "ssl.keystore.password": pw},
        "JKS": {"ssl.keystore.location": str(tls.client_keystore("jks")), "ssl.keystore.password": pw,
                "ssl.key.password": tls.key_password},
    }
    print("| stores (truststore + keystore) | cold SSLContext, ms (median of 5) |\n| --- | --- |")
    for kind in ("PEM", "PKCS12", "JKS"):
        times = []
        for _ in range(5):
            clear_cache()
            started = time.perf_counter()
            ssl_context({"security.protocol": "SSL", **truststores[kind], **keystores[kind]})
            times.append((time.perf_counter() - started) * 1000)
        print(f"| {kind} + {kind} | {sorted(times)[2]:.0f} |")

    broker = LocalKafkaBroker(work / "broker", heap="512m", tls=tls, tls_users={"bench": "bench-pw"})
    broker.start()
    try:
        listeners = {
            "PLAINTEXT": (broker.bootstrap_servers, {}),
            "SSL (mutual, JKS + PKCS12)": (broker.ssl_bootstrap_servers,
                                           {"security.protocol": "SSL", **truststores["JKS"], **keystores["PKCS12"]}),
            "SASL_SSL SCRAM-SHA-512 (PKCS12)": (broker.sasl_ssl_bootstrap_servers, {
                "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **truststores["PKCS12"],
                "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                    'username="bench" password="bench-pw";'}),
        }
        value = b"x" * args.size
        print(f"\n| listener | produce rec/s (acks=all) | read rec/s | ({args.records:,} records of {args.size} B) |"
              "\n| --- | --- | --- | --- |")
        for i, (name, (servers, keys)) in enumerate(listeners.items()):
            topic = f"bench-tls-{i}"
            producer = KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=5, batch_size=256 * 1024,
                                     **kafka_client_kwargs(keys, KafkaProducer))
            started = time.perf_counter()
            for _ in range(args.records):
                producer.send(topic, value)
            producer.flush()
            produce_s = time.perf_counter() - started
            producer.close()
            consumer = KafkaConsumer(bootstrap_servers=servers, group_id=None, enable_auto_commit=False,
                                     **kafka_client_kwargs(keys, KafkaConsumer))
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            started, count = time.perf_counter(), 0
            while count < args.records:
                count += sum(len(b) for b in consumer.poll(timeout_ms=1000).values())
            read_s = time.perf_counter() - started
            consumer.close()
            print(f"| {name} | {args.records / produce_s:,.0f} | {args.records / read_s:,.0f} | |")
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
