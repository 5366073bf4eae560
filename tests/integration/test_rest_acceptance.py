"""REST acceptance: one real `connect-spark distributed` process, driven by an HTTP client through Kafka
Connect's connector lifecycle — create, RUNNING (REST and connect-status), pause/resume, stop, PATCH
offsets back and re-delivery, metrics, a FAILED task with its trace, restart onlyFailed, DELETE."""


from kafka import KafkaConsumer

from connect_spark.config.properties import format_properties
from connect_spark.status.records import connector_config_key, connector_status_key, decode_status
from connect_spark.testing.harness import worker_properties
from connect_spark.testing.kafka import create_topic, produce
from connect_spark.testing.recording import read_recorded_records

from test_distributed import call, free_port, start_worker, stop_worker, wait_for


def latest_by_key(bootstrap_servers, topic):
    """The last value of every key of a compacted store topic (None for a tombstone)."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        return {m.key.decode(): m.value for m in consumer}
    finally:
        consumer.close()


def produce_range(bootstrap_servers, topic, partition, start, stop):
    produce(bootstrap_servers, topic, [(partition, None, f"v{i}".encode(), []) for i in range(start, stop)])


def test_connector_lifecycle_over_rest(bootstrap_servers, topic_name, work_dir):
    create_topic(bootstrap_servers, topic_name, partitions=2)
    for p in (0, 1):
        produce_range(bootstrap_servers, topic_name, p, 0, 150)
    port, suffix = free_port(), topic_name[-6:]
    configs, statuses = f"acc-configs-{suffix}", f"acc-status-{suffix}"
    worker = worker_properties(bootstrap_servers, work_dir, **{
        "listeners": f"http://127.0.0.1:{port}", "trigger": "300ms",
        "config.storage.topic": configs, "config.storage.replication.factor": "1",
        "status.storage.topic": statuses, "status.storage.replication.factor": "1",
        "offset.storage.topic": f"acc-offsets-{suffix}",
        "spark.master": "local[2]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
        "spark.driver.memory": "1g",
    })
    worker_file = work_dir / "worker.properties"
    worker_file.write_text(format_properties(worker))
    url, log_file = f"http://127.0.0.1:{port}", work_dir / "distributed.log"
    out = work_dir / "recorded"
    records = lambda: read_recorded_records(out)  # noqa: E731
    state = lambda name: call(f"{url}/connectors/{name}/status")[1]["connector"]["state"]  # noqa: E731

    proc = start_worker(worker_file, log_file)
    try:
        wait_for(lambda: call(url + "/")[0] == 200, 180, "the REST API", proc)

        # Create → RUNNING in REST and in connect-status; every record delivered.
        code, body = call(url + "/connectors", "POST", {"name": "acc", "config": {
            "connector.class": "RecordingSink", "topics": topic_name, "tasks.max": "1", "recording.dir": str(out)}})
        assert code == 201 and body["name"] == "acc", body
        wait_for(lambda: len(records()) >= 300, 300, "the first 300 records", proc)
        wait_for(lambda: state("acc") == "RUNNING", 60, "RUNNING", proc)
        status = decode_status(connector_status_key("acc"),
                               latest_by_key(bootstrap_servers, statuses)[connector_status_key("acc")])
        assert status.state.value == "RUNNING" and status.worker_id == f"127.0.0.1:{port}"

        # Metrics (extension): Kafka's names per task, lag per partition, and Prometheus text.
        metrics = wait_for(lambda: (lambda m: m if m["tasks"]["0"]["sink-record-read-total"] >= 300
                                    and m["committed"] else None)(call(url + "/connectors/acc/metrics")[1]),
                           60, "metrics", proc)
        task = metrics["tasks"]["0"]
        assert task["sink-record-send-total"] >= 300 and task["partition-count"] == 2
        assert task["offset-commit-completion-total"] >= 1 and task["total-record-errors"] == 0
        assert {(p["topic"], p["partition"]) for p in metrics["lag"]["partitions"]} == {(topic_name, 0), (topic_name, 1)}
        prometheus = urlopen_text(url + "/metrics")
        assert 'kafka_connect_sink_task_metrics_sink_record_read_total{connector="acc",task="0"}' in prometheus
        assert f'connect_spark_records_lag{{connector="acc",topic="{topic_name}",partition="0"}}' in prometheus

        # Pause: records keep arriving in Kafka, none reaches the task; resume delivers them. PAUSED is
        # reported once the runner has stopped its query between batches, so from then on no batch runs:
        # what the task received and what its metrics read is final until the resume.
        assert call(url + "/connectors/acc/pause", "PUT")[0] == 202
        wait_for(lambda: state("acc") == "PAUSED", 60, "PAUSED", proc)
        read_at_pause = call(url + "/connectors/acc/metrics")[1]["tasks"]["0"]["sink-record-read-total"]
        produce_range(bootstrap_servers, topic_name, 0, 150, 200)
        assert len(records()) == 300
        assert call(url + "/connectors/acc/metrics")[1]["tasks"]["0"]["sink-record-read-total"] == read_at_pause
        assert call(url + "/connectors/acc/resume", "PUT")[0] == 202
        wait_for(lambda: len(records()) >= 350, 120, "the records produced while paused", proc)
        assert state("acc") == "RUNNING"

        # Stop → PATCH offsets of partition 0 back by 100 → resume: those 100 are delivered again.
        assert call(url + "/connectors/acc/stop", "PUT")[0] == 204
        wait_for(lambda: state("acc") == "STOPPED", 120, "STOPPED", proc)
        code, offsets = call(url + "/connectors/acc/offsets")
        committed = {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in offsets["offsets"]}
        assert committed == {0: 200, 1: 150}, offsets
        code, body = call(url + "/connectors/acc/offsets", "PATCH", {"offsets": [
            {"partition": {"kafka_topic": topic_name, "kafka_partition": 0}, "offset": {"kafka_offset": 100}}]})
        assert code == 200, body
        assert call(url + "/connectors/acc/resume", "PUT")[0] == 202
        wait_for(lambda: len(records()) >= 450, 120, "the 100 re-delivered records", proc)
        p0 = sorted(r["offset"] for r in records() if r["partition"] == 0)
        assert p0 == sorted(list(range(200)) + list(range(100, 200)))
        assert sorted(r["offset"] for r in records() if r["partition"] == 1) == list(range(150))

        # DELETE removes it and tombstones its config.
        assert call(url + "/connectors/acc", "DELETE")[0] == 204
        wait_for(lambda: call(url + "/connectors")[1] == [], 60, "the deletion", proc)
        assert call(url + "/connectors/acc/status")[0] == 404
        stored = wait_for(lambda: (lambda s: s if s.get(connector_config_key("acc"), b"") is None else None)(
            latest_by_key(bootstrap_servers, configs)), 30, "the config tombstone", proc)
        assert stored[connector_config_key("acc")] is None

        # A failing task shows FAILED with its trace; restart onlyFailed brings it back.
        faulty_out = work_dir / "faulty"
        code, body = call(url + "/connectors", "POST", {"name": "bad", "config": {
            "connector.class": "connect_spark.testing.recording.FaultySinkConnector", "topics": topic_name,
            "tasks.max": "1", "recording.dir": str(faulty_out), "faulty.fail.on.put": "2"}})
        assert code == 201, body
        wait_for(lambda: len(read_recorded_records(faulty_out)) >= 350, 300, "the faulty sink's first put", proc)
        produce_range(bootstrap_servers, topic_name, 1, 150, 160)  # its second put fails
        failed = wait_for(lambda: (lambda s: s if s["tasks"] and s["tasks"][0]["state"] == "FAILED" else None)(
            call(url + "/connectors/bad/status")[1]), 120, "the FAILED task", proc)
        assert "RuntimeError" in failed["tasks"][0]["trace"], failed
        code, body = call(url + "/connectors/bad/restart?includeTasks=true&onlyFailed=true", "POST")
        assert code == 202, body
        wait_for(lambda: (lambda s: s["connector"]["state"] == "RUNNING" and s["tasks"][0]["state"] == "RUNNING")(
            call(url + "/connectors/bad/status")[1]), 120, "the restarted task RUNNING", proc)
        wait_for(lambda: {(r["partition"], r["offset"]) for r in read_recorded_records(faulty_out)}
                 >= {(1, o) for o in range(150, 160)}, 120, "the records the failed put missed", proc)
        assert call(url + "/connectors/bad", "DELETE")[0] == 204
    finally:
        code = stop_worker(proc)
    assert code == 0, log_file.read_text()[-3000:]
    log_text = log_file.read_text()
    assert "acc: batch" in log_text and f"committed {topic_name}[0]@" in log_text  # the progress lines


def urlopen_text(url):
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()
