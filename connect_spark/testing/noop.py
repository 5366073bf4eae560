"""A sink that accepts every record and does nothing: the baseline for runtime benchmarks."""

from __future__ import annotations

from connect_spark.api import ArrowSinkTask, SinkConnector, SinkTask

__all__ = ["NoopSinkConnector", "NoopSinkTask", "NoopArrowSinkConnector", "NoopArrowSinkTask"]


class NoopSinkTask(SinkTask):
    reads_headers = False

    def version(self) -> str:
        return "1.0"

    def start(self, props):
        self.count = 0

    def put(self, records):
        self.count += len(records)

    def stop(self):
        pass


class NoopSinkConnector(SinkConnector):
    def version(self) -> str:
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return NoopSinkTask

    def task_configs(self, max_tasks):
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self):
        pass


class NoopArrowSinkTask(ArrowSinkTask):
    """Accepts every Arrow record frame and does nothing: the baseline for the bulk path."""

    reads_headers = False

    def version(self) -> str:
        return "1.0"

    def start(self, props):
        self.count = 0

    def put_arrow(self, table):
        self.count += table.num_rows

    def stop(self):
        pass


class NoopArrowSinkConnector(NoopSinkConnector):
    def task_class(self):
        return NoopArrowSinkTask
