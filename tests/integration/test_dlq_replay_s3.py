"""DLQ replay into the S3 sink (configured for executor mode) on a real broker, real Spark and moto's S3 server.

A validation transform (``Cast`` of a ``check`` field, then the field dropped) fails on 2% of the records, which go
to the dead letter queue; the fix drops the validation. The replayed records must land in the bucket once, with
the others: also when a replay stopped after its upload but before it stored its progress, and when the bucket
is then replayed into again.
"""

from __future__ import annotations

import json
import uuid

import pytest
from test_dlq_replay_delta import _fill, _replay, _replay_without_storing_the_position

from connect_spark.testing.harness import run_connector, worker_properties

_STRING = "org.apache.kafka.connect.storage.StringConverter"
_JSON = "org.apache.kafka.connect.json.JsonConverter"


@pytest.fixture
def bucket(local_s3):
    name = f"replay-{uuid.uuid4().hex[:12]}"
    local_s3.create_bucket(name)
    return name


def _connector(name, topic, local_s3, bucket, fixed):
    props = {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic,
             "tasks.max": "2", "task.execution.mode": "executor", **local_s3.connector_keys(bucket),
             "flush.size": "4", "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
             "key.converter": _STRING, "value.converter": _JSON, "value.converter.schemas.enable": "false",
             "errors.tolerance": "all", "errors.deadletterqueue.topic.name": f"{name}-dlq",
             "errors.deadletterqueue.topic.replication.factor": "1",
             "errors.deadletterqueue.context.headers.enable": "true",
             "transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
             "transforms.drop.exclude": "check"}
    if not fixed:
        props.update({"transforms": "validate,drop",
                      "transforms.validate.type": "org.apache.kafka.connect.transforms.Cast$Value",
                      "transforms.validate.spec": "check:int32"})
    return props


def _ids(local_s3, bucket):
    """Every record id in the bucket's objects, as often as it is there."""
    return sorted(json.loads(line)["id"] for data in local_s3.objects(bucket).values() for line in data.splitlines())


def test_replay_into_s3_writes_each_dead_letter_once(spark, bootstrap_servers, topic_name, work_dir, local_s3,
                                                     bucket):
    total, partitions = 200, 2
    bad = _fill(bootstrap_servers, topic_name, total, partitions)
    worker = worker_properties(bootstrap_servers, work_dir)
    name = f"s3-replay-{topic_name}"
    broken, fixed = (_connector(name, topic_name, local_s3, bucket, fixed) for fixed in (False, True))
    assert run_connector(broken, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert _ids(local_s3, bucket) == sorted(set(range(total)) - bad)
    ordinary = set(local_s3.objects(bucket))

    # The fixed connector's replay uploads the letters, then stops before storing its progress ...
    _replay_without_storing_the_position(spark, worker, fixed)
    objects = local_s3.objects(bucket)
    assert _ids(local_s3, bucket) == list(range(total))
    replayed = sorted(set(objects) - ordinary)
    assert replayed and all(f"+dlq+0-{len(bad)}.json" in key for key in replayed), replayed
    # ... so the next run hands the same letters over: the bucket holds them, nothing is written again.
    again = _replay(spark, worker, fixed)
    assert (again.replayed, again.held) == (0, len(bad))
    assert local_s3.objects(bucket) == objects
    assert _replay(spark, worker, fixed).replayed == 0
    assert _ids(local_s3, bucket) == list(range(total))

    # The connector itself resumes after its own objects: a later run writes nothing more.
    assert run_connector(fixed, bootstrap_servers, work_dir, spark=spark, worker=worker).exit_code == 0
    assert local_s3.objects(bucket) == objects
