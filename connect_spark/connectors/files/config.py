"""The files sink's configuration keys, declared once, and their typed form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from connect_spark.config.definition import ConfigDef, Importance, NonEmptyString, Range, Type, ValidString

__all__ = ["FILES_SINK_CONFIG_DEF", "FilesSinkConfig"]

DIRECTORY = "files.dir"
FORMAT = "files.format"
ROTATE_RECORDS = "files.rotate.records"
ROTATE_INTERVAL = "files.rotate.interval.ms"

FILES_SINK_CONFIG_DEF = (
    ConfigDef()
    .define(DIRECTORY, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            doc="Base folder: a local path or a URI pyarrow.fs opens (file://, s3://, gs://, abfs://, hdfs:// "
                "with libhdfs). Files go to <files.dir>/<topic>/. The publishing rename is atomic on local "
                "and HDFS filesystems only.")
    .define(FORMAT, Type.STRING, "parquet", ValidString.in_("parquet", "json"), importance=Importance.HIGH,
            doc="parquet: the value's fields as columns (a primitive value as column 'value'). json: one JSON "
                "document per line (.jsonl).")
    .define(ROTATE_RECORDS, Type.INT, 1000, Range.at_least(1), importance=Importance.MEDIUM,
            doc="Publish a partition's file when it holds this many records.")
    .define(ROTATE_INTERVAL, Type.LONG, 0, Range.at_least(0), importance=Importance.MEDIUM,
            doc="Publish a partition's file when a record's timestamp is this many ms or more after the file's "
                "first record (record time, not the wall clock; 0: off). The record starts the next file.")
)


@dataclass(frozen=True)
class FilesSinkConfig:
    """The parsed keys (see :data:`FILES_SINK_CONFIG_DEF`)."""

    directory: str
    file_format: str
    rotate_records: int
    rotate_interval_ms: int

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "FilesSinkConfig":
        """Raises ConfigValidationError listing every bad key."""
        values = FILES_SINK_CONFIG_DEF.parse(props)
        return cls(values[DIRECTORY], values[FORMAT], values[ROTATE_RECORDS], values[ROTATE_INTERVAL])
