"""The S3 sink task when an upload fails (refused by the server, through the real boto3 client) and the
runtime delivers the same records again, as Kafka Connect does after a ``RetriableException``: every
record ends in exactly one object, and the objects are those of a run without the failure."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_connector_s3 import JSON, TP, bucket, faults, frame, props, rows, start  # noqa: F401 (fixtures)

from connect_spark.api.errors import RetriableException

HOURLY = "io.confluent.connect.storage.partitioner.HourlyPartitioner"


def through(faults, config):
    """``config`` pointed at the fault front, one attempt per request: a refused request fails the upload."""
    return {**config, "store.url": faults.url, "s3.retry.max.attempts": "1"}


def ids(objects):
    """Object key → the ``id`` of each JSON record in it."""
    return {key: [json.loads(line)["id"] for line in body.splitlines()] for key, body in objects.items()}


def test_a_failed_upload_drops_its_rows_and_the_redelivery_writes_each_record_once(local_s3, bucket, faults):
    config = through(faults, props(local_s3, bucket, flush_size="3", format_class=JSON))
    task, _ = start(config)
    task.put_arrow(frame(rows(range(2))))  # offsets 0 and 1 wait in the open group
    faults.refuse("PUT", "orders+0+0000000000.json")
    batch = frame(rows(range(2, 8)))
    with pytest.raises(RetriableException):
        task.put_arrow(batch)
    assert faults.refused == ["PUT /" + bucket + "/topics/orders/partition=0/orders+0+0000000000.json"] and local_s3.objects(bucket) == {}
    assert task.pre_commit({TP: 2}) == {TP: 0}  # the runtime's offset: the failed put is not accepted
    task.put_arrow(batch)  # delivered again, as the runtime does after a RetriableException
    assert ids(local_s3.objects(bucket)) == {"topics/orders/partition=0/orders+0+0000000000.json": [0, 1, 2],
                                             "topics/orders/partition=0/orders+0+0000000003.json": [3, 4, 5]}
    assert task.pre_commit({TP: 8}) == {TP: 6}

    # A put that uploads a group, then fails on the next one: the uploaded group stays, the rest is redone.
    faults.refuse("PUT", "orders+0+0000000009.json")
    batch = frame(rows(range(8, 14)))
    with pytest.raises(RetriableException):
        task.put_arrow(batch)
    assert sorted(local_s3.objects(bucket))[-1] == "topics/orders/partition=0/orders+0+0000000006.json"
    task.put_arrow(batch)
    assert ids(local_s3.objects(bucket, "topics/orders/partition=0/orders+0+00000000")) == {
        "topics/orders/partition=0/orders+0+0000000000.json": [0, 1, 2],
        "topics/orders/partition=0/orders+0+0000000003.json": [3, 4, 5],
        "topics/orders/partition=0/orders+0+0000000006.json": [6, 7, 8],
        "topics/orders/partition=0/orders+0+0000000009.json": [9, 10, 11]}
    assert task.pre_commit({TP: 14}) == {TP: 12}


def test_records_delivered_again_while_still_open_are_held_once(local_s3, bucket):
    task, _ = start(props(local_s3, bucket, flush_size="4", format_class=JSON))
    task.put_arrow(frame(rows(range(3))))
    task.put_arrow(frame(rows(range(1, 6))))  # 1 and 2 again, e.g. after a seek to the committed offset
    assert ids(local_s3.objects(bucket)) == {"topics/orders/partition=0/orders+0+0000000000.json": [0, 1, 2, 3]}
    assert task.pre_commit({TP: 6}) == {TP: 4}


def test_time_based_cuts_are_the_same_across_a_failure(local_s3, bucket, faults):
    """Records 10 s apart, rotate.interval.ms of 100 s: a group per 10 records whatever the delivery."""
    hourly = dict(flush_size="1000", format_class=JSON, rotate_interval_ms="100000", partitioner_class=HOURLY,
                  locale="en-US", timezone="UTC", timestamp_extractor="Record")
    t0 = 1_700_000_000_000 // 3_600_000 * 3_600_000
    records = rows(range(25), t0=t0, step=10_000)
    clean_bucket = f"{bucket}-clean"
    local_s3.create_bucket(clean_bucket)
    clean, _ = start(props(local_s3, clean_bucket, **hourly))
    clean.put_arrow(frame(records[:5]))
    clean.put_arrow(frame(records[5:]))
    expected = local_s3.objects(clean_bucket)
    assert sorted(ids(expected).values()) == [list(range(0, 10)), list(range(10, 20))]

    task, _ = start(through(faults, props(local_s3, bucket, **hourly)))
    task.put_arrow(frame(records[:5]))
    faults.refuse("PUT", "orders+0+0000000000.json")
    with pytest.raises(RetriableException):
        task.put_arrow(frame(records[5:]))
    task.put_arrow(frame(records[5:]))
    assert local_s3.objects(bucket) == expected
    assert task.pre_commit({TP: 25}) == clean.pre_commit({TP: 25}) == {TP: 20}


def unfinished(local_s3, bucket):
    """The keys of the bucket's multipart uploads never completed nor aborted."""
    return sorted(u["Key"] for u in local_s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads", ()))


def test_open_aborts_the_partitions_unfinished_uploads_and_only_those(local_s3, bucket):
    client = local_s3.client()
    left = ["topics/orders/partition=0/orders+0+0000000000.json",  # a kill -9 in the middle of its parts
            "topics/orders/partition=1/orders+1+0000000000.json",  # a partition this task does not open
            "other/orders/partition=0/orders+0+0000000000.json"]  # another connector's topics.dir
    for key in left:
        upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"x" * 5_242_880)
    assert unfinished(local_s3, bucket) == sorted(left)
    task, _ = start(props(local_s3, bucket, flush_size="3", format_class=JSON))
    assert unfinished(local_s3, bucket) == sorted(left[1:])
    task.put_arrow(frame(rows(range(3))))
    assert ids(local_s3.objects(bucket)) == {left[0]: [0, 1, 2]}


def test_open_aborts_unfinished_uploads_of_field_partitioned_objects(local_s3, bucket):
    client = local_s3.client()
    keys = ["topics/orders/region=eu/orders+0+0000000004.json", "topics/orders/region=eu/orders+0+0000000004.keys.json",
            "topics/orders/region=us/orders+10+0000000000.json"]
    for key in keys:
        client.create_multipart_upload(Bucket=bucket, Key=key)
    start(props(local_s3, bucket, flush_size="3", format_class=JSON,
                partitioner_class="io.confluent.connect.storage.partitioner.FieldPartitioner",
                partition_field_name="region"))
    assert unfinished(local_s3, bucket) == keys[2:]


CHILD = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from test_connector_s3 import frame, start
task, _ = start(json.loads(sys.argv[3]))
task.put_arrow(frame([(o, 0, {"id": o, "name": "x" * 1000, "region": "eu"}) for o in range(6000)]))
"""


def test_kill_9_in_the_middle_of_a_multipart_upload_leaves_no_parts_after_the_restart(local_s3, bucket, faults):
    """A task process uploads a 6 MB object in 5 MB parts; it is killed -9 once its parts are in, while it
    waits for the completion, which the server holds: the parts stay, until a task opens the partition."""
    config = through(faults, props(local_s3, bucket, flush_size="6000", format_class=JSON, s3_part_size="5242880"))
    key = "topics/orders/partition=0/orders+0+0000000000.json"
    faults.stall("POST", f"{key}?uploadId=")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(Path(__file__).parent),
                              str(Path(__file__).parents[1]), json.dumps(config)])
    try:
        deadline = time.monotonic() + 120
        while not faults.stalled and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert faults.stalled, "the upload never reached its completion"
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert unfinished(local_s3, bucket) == [key]
    start(config)
    assert unfinished(local_s3, bucket) == [] and local_s3.objects(bucket) == {}


def test_s3_retry_max_attempts_counts_every_request_sent(local_s3, bucket, faults):
    config = {**through(faults, props(local_s3, bucket, flush_size="1", format_class=JSON)),
              "s3.retry.max.attempts": "2"}
    task, _ = start(config)
    faults.refuse("PUT", "orders+0+0000000000.json", times=2)
    with pytest.raises(RetriableException):
        task.put_arrow(frame(rows([0])))
    faults.refuse("PUT", "orders+0+0000000000.json")
    task.put_arrow(frame(rows([0])))  # refused once, accepted on the second attempt
    assert len(faults.refused) == 3 and ids(local_s3.objects(bucket)) == {
        "topics/orders/partition=0/orders+0+0000000000.json": [0]}
