"""The S3 sink connector: Confluent's ``io.confluent.connect.s3.S3SinkConnector`` (alias ``S3Sink``)."""

from __future__ import annotations

import logging

from connect_spark.api.connector import SinkConnector
from connect_spark.api.task import SinkTask
from connect_spark.config.definition import ConfigDef
from connect_spark.connectors.s3.config import NO_EFFECT_KEYS, S3_SINK_CONFIG_DEF, S3SinkConfig
from connect_spark.connectors.s3.task import VERSION, S3SinkTask

__all__ = ["S3SinkConnector"]

log = logging.getLogger(__name__)


class S3SinkConnector(SinkConnector):
    """Writes Confluent's S3 objects exactly once (see ``connect_spark.connectors.s3.task``)."""

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Called by the runtime once, on the driver: checks the keys together and warns about the settings
        that make object names depend on the wall clock."""
        config = S3SinkConfig.parse(props)
        self.props = dict(props)
        wall_clock = config.wall_clock_settings
        if wall_clock:
            log.warning("%s: %s make object names depend on the wall clock: after a crash, re-delivered records "
                        "may land in other objects than the first time (duplicates across objects). Use "
                        "flush.size, rotate.interval.ms and timestamp.extractor=Record or RecordField for "
                        "exactly-once.", config.connector_name, " and ".join(wall_clock))
        if config.rotate_interval_ms > 0 and not config.time_based:
            log.warning("%s: rotate.interval.ms=%d is ignored: the partitioner is not time-based (as in Confluent's "
                        "connector)", config.connector_name, config.rotate_interval_ms)
        ignored = sorted(k for k in NO_EFFECT_KEYS if k in props)
        if ignored:
            log.info("%s: accepted with no effect (they tune Confluent's Java client): %s", config.connector_name,
                     ", ".join(ignored))

    def task_class(self) -> type[SinkTask]:
        return S3SinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return S3_SINK_CONFIG_DEF
