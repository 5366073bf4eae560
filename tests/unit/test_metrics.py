"""Metrics without a JVM: windowed rates, put timings and commit counts, lag from Spark's progress, the
Prometheus text, the progress line, and WorkerSinkTask feeding its SinkTaskMetrics."""

from connect_spark.api.records import TopicPartition
from connect_spark.api.task import SinkTask
from connect_spark.metrics.lag import latest_offsets, partition_lag, source_lag_metrics
from connect_spark.metrics.names import ERROR_METRICS, SINK_TASK_METRICS
from connect_spark.metrics.prometheus import render
from connect_spark.metrics.sink_task import SinkTaskMetrics, WindowedRate
from connect_spark.metrics.snapshot import connector_snapshot, progress_line
from connect_spark.runtime.tasks.worker_task import WorkerSinkTask


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


PROGRESS = {
    "name": "connect-spark-orders", "batchId": 7, "numInputRows": 120, "processedRowsPerSecond": 240.0,
    "durationMs": {"triggerExecution": 500},
    "sources": [{
        "description": "KafkaV2[Subscribe[orders]]",
        "endOffset": {"orders": {"0": 100, "1": 60}},
        "latestOffset": {"orders": {"0": 150, "1": 60}},
        "metrics": {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "50", "avgOffsetsBehindLatest": "25.0"},
    }],
}
T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def test_windowed_rate_averages_over_its_window_and_forgets_old_events():
    clock = Clock()
    rate = WindowedRate(clock, window=10)
    rate.record(50)
    clock.now += 5
    assert rate.rate() == 10.0  # 50 events over the 5 s since creation
    clock.now += 10
    rate.record(20)
    assert rate.rate() == 2.0  # the first 50 left the 10 s window


def test_sink_task_metrics_use_kafka_names_and_count_everything():
    clock = Clock()
    metrics = SinkTaskMetrics(clock)
    metrics.record_read(30)
    metrics.record_sent(25)
    metrics.record_put_time(10)
    metrics.record_put_time(30)
    metrics.record_commit_completed(1)
    metrics.record_commit_skipped(2)
    clock.now += 10
    values = metrics.as_dict()
    assert set(values) == set(SINK_TASK_METRICS)
    assert values["sink-record-read-total"] == 30 and values["sink-record-read-rate"] == 3.0
    assert values["sink-record-send-total"] == 25 and values["sink-record-send-rate"] == 2.5
    assert values["put-batch-avg-time-ms"] == 20 and values["put-batch-max-time-ms"] == 30
    assert values["offset-commit-completion-total"] == 1 and values["offset-commit-skip-total"] == 1
    assert values["offset-commit-seq-no"] == 2 and values["sink-record-active-count"] == 0


def test_lag_is_latest_minus_committed_per_partition():
    assert latest_offsets(PROGRESS) == {T0: 150, T1: 60}
    assert partition_lag(latest_offsets(PROGRESS), {T0: 90, T1: 60}) == {T0: 60, T1: 0}
    assert partition_lag({T0: 5}, {}) == {T0: 5}
    as_strings = {"sources": [{"latestOffset": '{"orders":{"0":7}}'}]}  # Spark's JSON as a string
    assert latest_offsets(as_strings) == {T0: 7}
    assert source_lag_metrics(PROGRESS) == {"min-offsets-behind-latest": 0.0, "max-offsets-behind-latest": 50.0,
                                            "avg-offsets-behind-latest": 25.0}
    assert latest_offsets(None) == {} and source_lag_metrics({}) == {}


def test_snapshot_and_prometheus_text():
    task = {**SinkTaskMetrics(Clock()).as_dict(), "sink-record-read-total": 120,
            **{name: 0 for name in ERROR_METRICS}, "total-record-errors": 3}
    snapshot = connector_snapshot("orders", "RUNNING", "driver", 2, 120, {0: task}, {T0: 90, T1: 60}, PROGRESS)
    assert snapshot["lag"]["partitions"] == [{"topic": "orders", "partition": 0, "lag": 60},
                                             {"topic": "orders", "partition": 1, "lag": 0}]
    assert snapshot["lag"]["records-lag-max"] == 60 and snapshot["last_batch"]["records"] == 120
    assert snapshot["committed"][0] == {"topic": "orders", "partition": 0, "offset": 90}
    text = render([snapshot])
    assert '# TYPE kafka_connect_sink_task_metrics_sink_record_read_total counter' in text
    assert 'kafka_connect_sink_task_metrics_sink_record_read_total{connector="orders",task="0"} 120' in text
    assert 'kafka_connect_task_error_metrics_total_record_errors{connector="orders",task="0"} 3' in text
    assert 'connect_spark_records_lag{connector="orders",topic="orders",partition="0"} 60' in text
    assert 'connect_spark_max_offsets_behind_latest{connector="orders"} 50' in text
    assert "# TYPE kafka_connect_sink_task_metrics_put_batch_avg_time_ms gauge" in text
    for line in text.splitlines():  # every sample line is "name{labels} number"
        if not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])
    assert render([{"connector": 'we"ird', "tasks": {"0": {"partition-count": 1}}}]).count('connector="we\\"ird"') == 1


def test_progress_line_names_records_rate_lag_and_commits():
    line = progress_line("orders", PROGRESS, {T0: 90, T1: 60})
    assert line == ("orders: batch 7: 120 records (240.0 rec/s), lag orders[0]=60 orders[1]=0 (max 60), "
                    "committed orders[0]@90 orders[1]@60")


class _Task(SinkTask):
    def __init__(self):
        self.offsets_answer = None

    def version(self):
        return "1"

    def start(self, props):
        pass

    def put(self, records):
        pass

    def pre_commit(self, offsets):
        return offsets if self.offsets_answer is None else self.offsets_answer

    def stop(self):
        pass


def test_worker_sink_task_feeds_its_metrics():
    clock = Clock()
    commits = []
    task = _Task()
    worker_task = WorkerSinkTask("c", 0, task, {}, commits.append, 1000, clock=clock)
    worker_task.start()
    worker_task.open({T0: 0})
    assert worker_task.deliver(["r1", "r2", "r3"], {T0: 3})
    worker_task.commit_offsets(closing=False)
    worker_task.commit_offsets(closing=False)  # nothing changed: skipped
    task.offsets_answer = {}
    assert worker_task.deliver(["r4"], {T0: 4})
    worker_task.commit_offsets(closing=False)  # the task opts out: skipped
    values = worker_task.metrics.as_dict()
    assert commits == [{T0: 3}]
    assert values["sink-record-send-total"] == 4
    assert values["offset-commit-completion-total"] == 1 and values["offset-commit-skip-total"] == 2
    assert values["offset-commit-seq-no"] == 3
