"""The search sink over HTTPS as a Confluent user configures it: a JKS truststore (Confluent's default type) and a
PKCS12 client keystore, against the suite's real OpenSearch behind a TLS relay that requires a client
certificate (``connect_spark.testing.tls_relay``; the integration-test distribution has no TLS of its own).
The client library, the handshake and the cluster are real.

* records from a real broker through real Spark executors reach the index over mutual TLS, and the relay saw
  the client's certificate;
* a truststore of another CA fails at once, naming ``elastic.https.ssl.truststore.location``;
* a URL host the certificate does not name fails naming ``elastic.https.ssl.endpoint.identification.algorithm``,
  and is accepted when that key is empty.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from connect_spark.api.errors import ConfigException
from connect_spark.config.properties import load_properties
from connect_spark.connectors.search.client import connect
from connect_spark.connectors.search.config import SearchSinkConfig
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce
from connect_spark.testing.tls import make_tls_material
from connect_spark.testing.tls_relay import TlsRelay

CONF = Path(__file__).resolve().parents[2] / "conf" / "elasticsearch-sink.properties"
SSL = "elastic.https.ssl."


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls_material(tmp_path_factory.mktemp("search-tls"), store_password="search-store-pw-4711",
                             key_password="search-key-pw-1174")


@pytest.fixture(scope="module")
def relay(tls, opensearch):
    with TlsRelay(tls, ("127.0.0.1", opensearch.port), require_client_cert=True) as server:
        yield server


def _mutual_tls(tls, url: str, **overrides: str) -> dict[str, str]:
    """Confluent's file with TLS keys as a Connect user writes them: no truststore type (JKS by default)."""
    props = load_properties(CONF)
    props.pop("connection.username")
    props.pop("connection.password")
    props.update({"connection.url": url, "elastic.security.protocol": "SSL",
                  SSL + "truststore.location": str(tls.client_truststore("jks")),
                  SSL + "truststore.password": tls.store_password,
                  SSL + "keystore.type": "PKCS12", SSL + "keystore.location": str(tls.client_keystore("p12")),
                  SSL + "keystore.password": tls.store_password, SSL + "key.password": tls.store_password})
    props.update(overrides)
    return props


def test_records_reach_opensearch_over_mutual_tls_with_a_jks_truststore(
        spark, bootstrap_servers, opensearch, relay, tls, topic_name, work_dir, caplog):
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name,
            [(i % 2, str(i).encode(), json.dumps({"id": i, "name": f"n{i}"}).encode(), []) for i in range(60)])
    index = topic_name.lower()
    connector = _mutual_tls(tls, relay.url, name=index, topics=topic_name)
    worker = worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor")
    seen = len(relay.clients)
    with caplog.at_level(logging.INFO):
        assert run_standalone(dict(worker), [connector], available_now=True, spark=spark) == 0

    plain = OpenSearch([opensearch.url])
    plain.indices.refresh(index=index)
    found = plain.search(index=index, body={"query": {"match_all": {}}, "size": 100})["hits"]["hits"]
    assert sorted(int(hit["_id"]) for hit in found) == list(range(60))
    assert relay.clients[seen:] and set(relay.clients[seen:]) == {"connect-spark-client"}
    assert {tp.partition: off for tp, off in committed_offsets(worker, index).items()} == \
        end_offsets(bootstrap_servers, topic_name)
    assert tls.store_password not in caplog.text


def test_a_truststore_of_another_ca_fails_naming_the_key(relay, tls, tmp_path):
    other = make_tls_material(tmp_path / "other-ca")
    props = _mutual_tls(tls, relay.url, **{SSL + "truststore.location": str(other.client_truststore("jks")),
                                           SSL + "truststore.password": other.store_password})
    with pytest.raises(ConfigException) as error:
        connect(SearchSinkConfig.parse(props))
    assert error.value.key == SSL + "truststore.location"
    assert "does not trust" in str(error.value) and other.store_password not in str(error.value)


def test_the_host_name_check_follows_the_endpoint_identification_algorithm(opensearch, tls):
    with TlsRelay(tls, ("127.0.0.1", opensearch.port), require_client_cert=False, host="127.0.0.2") as other_host:
        props = _mutual_tls(tls, other_host.url, **{"search.engine": "opensearch"})
        with pytest.raises(ConfigException) as error:
            connect(SearchSinkConfig.parse(props))
        assert error.value.key == SSL + "endpoint.identification.algorithm"

        client = connect(SearchSinkConfig.parse({**props, SSL + "endpoint.identification.algorithm": ""}))
        try:
            assert client.client.info()["version"]["distribution"] == "opensearch"
        finally:
            client.close()
        assert other_host.clients[-1] == "connect-spark-client"  # the same context, client certificate and all
