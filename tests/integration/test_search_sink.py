"""The search sink into a real OpenSearch (the integration-test distribution from Maven Central, run as an
unprivileged system user), from a real broker through real Spark executors.

* Confluent's properties file (``conf/elasticsearch-sink.properties``) with only the URL, topic and name
  changed: keyed documents end at each key's newest value, tombstones delete; ``key.ignore=true`` gives
  Confluent's ``topic+partition+offset`` ids; upserts end at the newest value per key;
* re-delivered older records never replace a newer document (external versions from the offsets);
* 2% of the documents conflict with the index mapping: those reach the dead letter queue with the cluster's
  reason, every other one is indexed;
* the server paused with SIGSTOP while the connector runs: the task backs off and resumes, nothing lost;
* the CLI killed with SIGKILL three times while keyed records flow (12,000 records over 1,000 keys, to fit the
  suite's time budget): the index ends with exactly each key's newest record, each at the version of that
  record's offset, and the committed offsets reach the end.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

from opensearchpy import OpenSearch

from connect_spark.config.properties import load_properties
from connect_spark.runtime.worker.launcher import run_standalone
from connect_spark.testing.harness import committed_offsets, worker_properties
from connect_spark.testing.kafka import create_topic, end_offsets, produce, read_topic
from connect_spark.testing.search_chaos import (expected_documents, indexed_documents, keyed_records, kill_runs,
                                                start_feeding)

CONF = Path(__file__).resolve().parents[2] / "conf" / "elasticsearch-sink.properties"


def _worker(bootstrap_servers: str, work_dir, **overrides):
    return worker_properties(bootstrap_servers, work_dir, task_execution_mode="executor", **overrides)


def _confluent(name: str, topic: str, url: str, **overrides: str) -> dict[str, str]:
    props = load_properties(CONF)
    props.update({"name": name, "topics": topic, "connection.url": url})
    props.pop("connection.username")
    props.pop("connection.password")
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return props


def _client(opensearch) -> OpenSearch:
    return OpenSearch([opensearch.url])


def _documents(opensearch, index: str) -> dict[str, dict]:
    client = _client(opensearch)
    client.indices.refresh(index=index)
    found = client.search(index=index, body={"query": {"match_all": {}}, "size": 10_000, "version": True})
    return {hit["_id"]: dict(hit["_source"], _version=hit["_version"]) for hit in found["hits"]["hits"]}


def _value(key: int, seq: int, when: str = "2024-01-02") -> bytes:
    return json.dumps({"id": key, "seq": seq, "when": when, "tags": {"k": f"v{seq}"}}).encode()


def test_confluent_properties_ids_versions_upserts(spark, bootstrap_servers, opensearch, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    # 300 records over 40 keys, every 25th a tombstone; partition = key % 2.
    records, newest = [], {}
    for seq in range(300):
        key = (seq * 7) % 40
        tombstone = seq % 25 == 24
        records.append((key % 2, str(key).encode(), None if tombstone else _value(key, seq), []))
        newest[key] = None if tombstone else seq
    produce(bootstrap_servers, topic_name, records)
    base = topic_name.lower()
    keyed = _confluent(f"{base}-keyed", topic_name, opensearch.url,
                       transforms="route", transforms_route_type="org.apache.kafka.connect.transforms.RegexRouter",
                       transforms_route_regex="(.*)", transforms_route_replacement="$1-keyed")
    by_offset = _confluent(f"{base}-offsets", topic_name, opensearch.url, key_ignore="true",
                           behavior_on_null_values="ignore", transforms="route",
                           transforms_route_type="org.apache.kafka.connect.transforms.RegexRouter",
                           transforms_route_regex="(.*)", transforms_route_replacement="$1-offsets")
    upsert = _confluent(f"{base}-upsert", topic_name, opensearch.url, write_method="upsert",
                        behavior_on_null_values="ignore", transforms="route",
                        transforms_route_type="org.apache.kafka.connect.transforms.RegexRouter",
                        transforms_route_regex="(.*)", transforms_route_replacement="$1-upsert")
    worker = _worker(bootstrap_servers, work_dir)
    assert run_standalone(dict(worker), [keyed, by_offset, upsert], available_now=True, spark=spark) == 0

    documents = _documents(opensearch, f"{base}-keyed")
    assert {k: d["seq"] for k, d in documents.items()} == {str(k): s for k, s in newest.items() if s is not None}
    # The external version is the record's offset: a document's version is the offset of its newest record.
    offsets = {}
    per_partition = {0: 0, 1: 0}
    for partition, key, value, _ in records:
        offsets[key.decode()] = per_partition[partition]
        per_partition[partition] += 1
    assert all(d["_version"] == offsets[k] for k, d in documents.items())
    assert documents[next(iter(documents))]["tags"].keys() == {"k"}  # compact.map.entries: a plain object

    by_offset_docs = _documents(opensearch, f"{base}-offsets")
    assert len(by_offset_docs) == 288
    assert all(k.startswith(f"{topic_name}-offsets+") for k in by_offset_docs)
    assert {f"{topic_name}-offsets+0+0", f"{topic_name}-offsets+1+0"} <= set(by_offset_docs)

    last_value = {}
    for seq, (_, key, value, _) in enumerate(records):
        if value is not None:
            last_value[key.decode()] = seq
    assert {k: d["seq"] for k, d in _documents(opensearch, f"{base}-upsert").items()} == last_value
    ends = end_offsets(bootstrap_servers, topic_name)
    committed = committed_offsets(worker, f"{base}-keyed")
    assert {tp.partition: off for tp, off in committed.items()} == ends

    # Re-delivery of every record (a lost checkpoint and lost offsets, the worst crash) changes nothing.
    older = dict(keyed, name=f"{base}-keyed-again")
    assert run_standalone(dict(worker), [older], available_now=True, spark=spark) == 0
    assert _documents(opensearch, f"{base}-keyed") == documents


def test_mapping_conflicts_go_to_the_dead_letter_queue(spark, bootstrap_servers, opensearch, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 2)
    index = topic_name.lower()
    _client(opensearch).indices.create(index=index, body={"mappings": {"properties": {"when": {"type": "date"}}}})
    records = [(None, str(i).encode(), _value(i, i, when="not a date" if i % 50 == 7 else "2024-01-02"), [])
               for i in range(500)]
    produce(bootstrap_servers, topic_name, records)
    dlq = f"{topic_name}-dlq"
    connector = _confluent(index, topic_name, opensearch.url, errors_deadletterqueue_topic_name=dlq,
                           errors_deadletterqueue_topic_replication_factor="1")
    assert run_standalone(dict(_worker(bootstrap_servers, work_dir)), [connector], available_now=True,
                          spark=spark) == 0
    documents = _documents(opensearch, index)
    assert len(documents) == 490 and not any(int(k) % 50 == 7 for k in documents)
    dead = read_topic(bootstrap_servers, dlq)
    assert sorted(int(r.key) for r in dead) == [i for i in range(500) if i % 50 == 7]
    headers = dict(dead[0].headers)
    message = headers["__connect.errors.exception.message"].decode()
    assert "mapper_parsing_exception" in message and "[when]" in message


def test_a_paused_server_is_waited_for(spark, bootstrap_servers, opensearch, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, [(0, str(i).encode(), _value(i, i), []) for i in range(200)])
    index = topic_name.lower()
    connector = _confluent(index, topic_name, opensearch.url, read_timeout_ms="1000", max_retries="3",
                           retry_backoff_ms="200", errors_retry_timeout="60000")
    result: dict[str, int] = {}
    os.kill(opensearch.pid, signal.SIGSTOP)
    try:
        runner = threading.Thread(target=lambda: result.update(
            code=run_standalone(dict(_worker(bootstrap_servers, work_dir)), [connector], available_now=True,
                                spark=spark)))
        runner.start()
        time.sleep(8)
    finally:
        os.kill(opensearch.pid, signal.SIGCONT)
    runner.join(180)
    assert result == {"code": 0}
    assert sorted(int(k) for k in _documents(opensearch, index)) == list(range(200))


KILLS = 3
CHAOS_RECORDS, CHAOS_KEYS = 12_000, 1_000


def test_kill_minus_nine_three_times_leaves_the_newest_document_per_key(
        spark, bootstrap_servers, opensearch, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, 4)
    index = topic_name.lower()
    records = keyed_records(CHAOS_RECORDS, CHAOS_KEYS, 4)
    feeding = start_feeding(bootstrap_servers, topic_name, records)
    connector = _confluent(index, topic_name, opensearch.url, batch_size="500")
    worker = _worker(bootstrap_servers, work_dir, max_offsets_per_trigger=1500, trigger="300ms",
                     offset_flush_interval_ms=500, spark_master="local[2]", spark_ui_enabled="false",
                     spark_driver_memory="1g")
    client = _client(opensearch)
    kill_runs(worker, connector, Path(work_dir), client, index, KILLS, CHAOS_RECORDS - 1)
    feeding.join(600)
    assert not feeding.is_alive()
    assert run_standalone(dict(worker), [dict(connector)], available_now=True, spark=spark) == 0

    assert indexed_documents(client, index) == expected_documents(records, 4)
    ends = end_offsets(bootstrap_servers, topic_name)
    assert {tp.partition: off for tp, off in committed_offsets(worker, index).items()} == ends


def test_a_cluster_that_stays_down_fails_the_task_with_nothing_committed(spark, bootstrap_servers, topic_name,
                                                                        work_dir):
    from connect_spark.localprocess import free_port

    create_topic(bootstrap_servers, topic_name, 1)
    produce(bootstrap_servers, topic_name, [(0, str(i).encode(), _value(i, i), []) for i in range(20)])
    name = topic_name.lower()
    connector = _confluent(name, topic_name, f"http://127.0.0.1:{free_port()}", max_retries="1",
                           retry_backoff_ms="50", errors_retry_timeout="0", search_engine="opensearch")
    worker = _worker(bootstrap_servers, work_dir)
    assert run_standalone(dict(worker), [connector], available_now=True, spark=spark) != 0
    assert committed_offsets(worker, name) == {}
