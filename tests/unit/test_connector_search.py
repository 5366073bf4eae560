"""The search sink without a cluster: its keys, how frames become bulk actions, how bulk answers are sorted,
and the back-off bounds (the cluster's side is in tests/integration/test_search_sink.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.connectors.search.config import SEARCH_SINK_CONFIG_DEF, SearchSinkConfig
from connect_spark.connectors.search.documents import build_actions, json_reader
from connect_spark.connectors.search.writer import ACKED, REJECTED, RETRY, backoff_bound, classify
from connect_spark.plugins import resolve

URL = {"connection.url": "http://127.0.0.1:9200", "name": "s"}


def _config(**overrides: str) -> SearchSinkConfig:
    return SearchSinkConfig.parse({**URL, **{k.replace("_", "."): v for k, v in overrides.items()}})


_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _frame(rows: list[tuple[str, int, int, object, object]], headers=None) -> pa.Table:
    """A record frame (RECORD_FRAME_COLUMNS) of schemaless rows ``(topic, partition, offset, key, value)``."""
    n = len(rows)
    topics = [r[0] for r in rows]
    partitions = pa.array([r[1] for r in rows], pa.int32())
    offsets = pa.array([r[2] for r in rows], pa.int64())
    return pa.table({
        "topic": topics, "partition": partitions, "offset": offsets,
        "timestamp": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
        "timestamp_type": pa.array([-1] * n, pa.int32()),
        "key": pa.array([r[3] for r in rows]), "value": pa.array([r[4] for r in rows]),
        "headers": pa.array(headers or [[] for _ in rows], _HEADERS),
        "original_topic": topics, "original_partition": partitions, "original_offset": offsets,
    })


def test_confluent_class_name_and_aliases_resolve():
    for name in ("io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "ElasticsearchSinkConnector",
                 "SearchSink"):
        assert resolve("connector", name).__name__ == "SearchSinkConnector"


def test_defaults_are_confluents():
    config = _config()
    assert (config.batch_size, config.bulk_size_bytes, config.max_in_flight, config.max_retries,
            config.retry_backoff_ms, config.write_method, config.behavior_on_null_values,
            config.behavior_on_malformed, config.key_ignore, config.compact_map_entries) == (
        2000, 5 * 1024 * 1024, 5, 5, 100, "insert", "fail", "fail", False, True)


def test_bad_values_name_key_value_and_what_is_allowed():
    with pytest.raises(ConfigException) as error:
        SearchSinkConfig.parse({"connection.url": "ftp://x", "write.method": "merge", "data.stream.type": "logs"})
    text = str(error.value)
    assert "connection.url" in text and "ftp://x" in text
    assert "write.method" in text and "insert, upsert" in text
    assert "data.stream.dataset" in text


def test_the_password_is_never_shown():
    config = _config(connection_username="u", connection_password="s3cret-marker")
    assert config.password == "s3cret-marker"
    assert "s3cret-marker" not in repr(config)
    assert SEARCH_SINK_CONFIG_DEF.keys["connection.password"].type.name == "PASSWORD"
    assert SEARCH_SINK_CONFIG_DEF.keys["elastic.https.ssl.keystore.password"].type.name == "PASSWORD"


def test_key_ignore_ids_are_topic_partition_offset():
    batch = build_actions(_frame([("Orders", 3, 17, "k", {"a": 1})]), _config(key_ignore="true"), True)
    assert batch.actions == [{"_op_type": "index", "_index": "orders", "_id": "Orders+3+17", "_source": {"a": 1}}]


def test_keyed_documents_carry_the_offset_as_external_version_and_only_the_newest_is_sent():
    frame = _frame([("t", 0, 5, "a", {"v": 1}), ("t", 0, 6, "7", {"v": 2}), ("t", 0, 7, "a", {"v": 3}),
                    ("t", 0, 8, "a", None)])
    batch = build_actions(frame, _config(behavior_on_null_values="delete"), True)
    assert batch.actions == [
        {"_op_type": "delete", "_index": "t", "_id": "a", "version": 8, "version_type": "external"},
        {"_op_type": "index", "_index": "t", "_id": "7", "_source": {"v": 2}, "version": 6,
         "version_type": "external"},
    ]
    assert batch.rows == [3, 1] and batch.skipped == 2


def test_topic_key_ignore_applies_per_topic():
    frame = _frame([("a", 0, 1, "k", {"v": 1}), ("b", 0, 1, "k", {"v": 1})])
    batch = build_actions(frame, _config(topic_key_ignore="b"), True)
    assert [a["_id"] for a in batch.actions] == ["k", "b+0+1"]


def test_upserts_carry_no_version():
    batch = build_actions(_frame([("t", 0, 1, "k", {"v": 1})]), _config(write_method="upsert"), True)
    assert batch.actions == [{"_op_type": "update", "_index": "t", "_id": "k", "doc": {"v": 1}, "doc_as_upsert": True}]


def test_invalid_records_are_named_not_dropped():
    frame = _frame([("t", 0, 1, None, {"v": 1}), ("t", 0, 2, "k", None), ("t", 0, 3, "j", {"v": 2})])
    batch = build_actions(frame, _config(), True)
    assert [row for row, _ in batch.invalid] == [0, 1]
    assert "can not be null" in batch.invalid[0][1] and "behavior.on.null.values=fail" in batch.invalid[1][1]
    ignored = build_actions(frame, _config(behavior_on_null_values="ignore"), True)
    assert ignored.skipped == 1 and [row for row, _ in ignored.invalid] == [0]


def test_external_version_header_replaces_the_offset():
    frame = _frame([("t", 0, 1, "k", {"v": 1}), ("t", 0, 2, "j", {"v": 1})],
                   headers=[[{"key": "ver", "value": b"41"}], [{"key": "ver", "value": b"x"}]])
    batch = build_actions(frame, _config(external_version_header="ver"), True)
    assert batch.actions[0]["version"] == 41
    assert batch.invalid == [(1, "Header ver (external.version.header) is not an integer: 'x'")]


def test_values_are_written_as_kafkas_json_converter_writes_them():
    struct = pa.struct([("at", pa.timestamp("ms", tz="UTC")), ("day", pa.date32()), ("raw", pa.binary()),
                        ("price", pa.decimal128(10, 2)), ("tags", pa.map_(pa.string(), pa.int32())),
                        ("ids", pa.map_(pa.int32(), pa.string())), ("gone", pa.string())])
    value = {"at": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc), "day": dt.date(1970, 1, 11),
             "raw": b"\x01\x02", "price": decimal.Decimal("2.50"), "tags": [("a", 1)], "ids": [(3, "c")],
             "gone": None}
    assert json_reader(struct, True, drop_nulls=True)(value) == {
        "at": 1000, "day": 10, "raw": "AQI=", "price": 2.5, "tags": {"a": 1}, "ids": [{"key": 3, "value": "c"}]}
    assert json_reader(struct, False, drop_nulls=False)(value)["tags"] == [{"key": "a", "value": 1}]
    assert json_reader(pa.struct([("a", pa.int64())]), True, drop_nulls=False) is None  # already JSON


@pytest.mark.parametrize("result, verdict", [
    ({"index": {"status": 201}}, ACKED),
    ({"index": {"status": 409, "version": 3, "error": {"type": "version_conflict_engine_exception"}}}, ACKED),
    ({"delete": {"status": 404, "result": "not_found"}}, ACKED),
    ({"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}}, RETRY),
    ({"index": {"status": 503, "error": "unavailable"}}, RETRY),
    ({"index": {"status": "N/A", "error": "ConnectionError"}}, RETRY),
    ({"update": {"status": 409, "error": {"type": "version_conflict_engine_exception"}}}, RETRY),
    ({"index": {"status": 400, "error": {"type": "mapper_parsing_exception", "reason": "failed to parse [when]"}}},
     REJECTED),
])
def test_bulk_answers_are_sorted(result, verdict):
    got, reason = classify(result)
    assert got == verdict
    if verdict == REJECTED:
        assert reason == "mapper_parsing_exception: failed to parse [when]"


def test_back_off_doubles_with_full_jitter_and_a_cap():
    config = _config(retry_backoff_ms="100")
    assert [backoff_bound(config, n) for n in (1, 2, 3)] == [0.1, 0.2, 0.4]
    assert backoff_bound(config, 30) == 60.0
    rng = random.Random(7)
    waits = [rng.uniform(0, backoff_bound(config, 3)) for _ in range(50)]
    assert 0 <= min(waits) and max(waits) <= 0.4 and len(set(waits)) == 50


def test_integer_keys_are_ids_and_struct_keys_are_invalid():
    ints = build_actions(_frame([("t", 0, 1, 42, {"v": 1})]), _config(), True)
    assert ints.actions[0]["_id"] == "42"
    structs = build_actions(_frame([("t", 0, 1, {"id": 1}, {"v": 1})]), _config(), True)
    assert structs.invalid == [(0, "Key is used as document id and can not be of type STRUCT")]


def test_the_retry_budget_counts_failures_then_time():
    from connect_spark.connectors.retry_budget import RetryBudget

    now = [0.0]
    budget = RetryBudget(max_retries=2, timeout_ms=0, clock=lambda: now[0])
    assert [budget.failed(), budget.failed(), budget.failed()] == [True, True, False]
    budget.succeeded()
    assert budget.failed() and budget.failures == 1
    timed = RetryBudget(max_retries=0, timeout_ms=5000, clock=lambda: now[0])
    assert timed.failed()
    now[0] = 4.9
    assert timed.failed()
    now[0] = 5.1
    assert not timed.failed()
    assert RetryBudget(max_retries=0, timeout_ms=-1, clock=lambda: now[0]).failed()


def test_a_password_inside_a_bad_url_is_not_repeated():
    with pytest.raises(ConfigException) as error:
        SearchSinkConfig.parse({"connection.url": "ftp://user:pw-marker-77@host:9200"})
    assert "pw-marker-77" not in str(error.value) and "connection.url" in str(error.value)


def test_headers_are_read_only_when_versions_come_from_one():
    from connect_spark.connectors.search import SearchSinkConnector

    connector = SearchSinkConnector()
    connector.start(dict(URL))
    assert connector.task_class().reads_headers is False
    connector.start({**URL, "external.version.header": "ver"})
    assert connector.task_class().reads_headers is True
