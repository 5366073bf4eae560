"""The Delta sink's configuration keys, declared once, and their typed, cross-checked form.

``DELTA_SINK_CONFIG_DEF`` is what :meth:`DeltaSinkConnector.config` returns (the runtime validates
each key before Spark starts); :meth:`DeltaSinkConfig.parse` is called by the connector's and the
task's ``start`` and adds the checks that span several keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from connect_spark.config.definition import (
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    Range,
    Type,
    ValidString,
)
from connect_spark.connectors.changes import DELETED_FIELD, ChangeRules

__all__ = ["DELTA_SINK_CONFIG_DEF", "DeltaSinkConfig", "TOPIC_PLACEHOLDER"]

#: Replaced by the record's topic (after transformations) in the table path or name.
TOPIC_PLACEHOLDER = "${topic}"

TABLE_PATH = "delta.table.path"
TABLE_NAME = "delta.table.name"
INSERT_MODE = "insert.mode"
PK_MODE = "pk.mode"
PK_FIELDS = "pk.fields"
DELETE_ENABLED = "delete.enabled"
AUTO_EVOLVE = "auto.evolve"
PARTITION_BY = "partition.by"
COLUMN_TOPIC = "delta.column.topic"
COLUMN_PARTITION = "delta.column.partition"
COLUMN_OFFSET = "delta.column.offset"
COLUMN_TIMESTAMP = "delta.column.timestamp"
WRITE_FILES = "delta.write.files.per.commit"
OPTIMIZE_EVERY = "delta.optimize.every.commits"

_TARGET = "Target"
_WRITE = "Writes"
_LAYOUT = "Table layout"

DELTA_SINK_CONFIG_DEF = (
    ConfigDef()
    .define(TABLE_PATH, Type.STRING, None, importance=Importance.HIGH, group=_TARGET,
            doc="The Delta table's location: a local path or any Hadoop-supported URI (s3a://, abfss://, hdfs://). "
                f"May contain {TOPIC_PLACEHOLDER} to write one table per topic. Set this or delta.table.name.")
    .define(TABLE_NAME, Type.STRING, None, importance=Importance.HIGH, group=_TARGET,
            doc="A catalog table name (db.table) instead of a path; created as a managed Delta table when "
                f"missing. May contain {TOPIC_PLACEHOLDER}; characters of the topic that are not letters, "
                "digits or _ become _.")
    .define(INSERT_MODE, Type.STRING, "append", ValidString.in_("append", "upsert"),
            importance=Importance.HIGH, group=_WRITE,
            doc="append: every record becomes a row. upsert: MERGE on the primary key; within a batch the "
                "record with the highest offset per key wins.")
    .define(PK_MODE, Type.STRING, "none", ValidString.in_("none", "record_key", "record_value"),
            importance=Importance.HIGH, group=_WRITE,
            doc="Where the upsert key comes from: record_key (the key's fields, or the key itself for a "
                "primitive key) or record_value (fields of the value). Required for upsert.")
    .define(PK_FIELDS, Type.LIST, "", importance=Importance.MEDIUM, group=_WRITE,
            doc="record_key: the key fields to use (default all), or for a primitive key the one column name "
                "it is stored under (default 'key'). record_value: the value fields forming the key (required).")
    .define(DELETE_ENABLED, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_WRITE,
            doc="Tombstones (null values) and values whose " + DELETED_FIELD + " field is 'true' (Debezium's "
                "ExtractNewRecordState in a rewrite mode) delete the row with their key; that field is then not a "
                "column. Needs insert.mode=upsert and pk.mode=record_key. Otherwise tombstones are skipped.")
    .define(AUTO_EVOLVE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_WRITE,
            doc="Add columns for new top-level record fields. When false a record with a field the table "
                "lacks fails the task with an error naming the field.")
    .define(WRITE_FILES, Type.INT, 0, Range.at_least(0), importance=Importance.LOW, group=_LAYOUT,
            doc="Coalesce each batch to at most this many Spark partitions before writing, so a commit adds "
                "at most this many files per table partition (0: as read, one per Kafka partition). With "
                "consumer.override.max.poll.records / maxOffsetsPerTrigger and the trigger interval this sets "
                "the file size.")
    .define(OPTIMIZE_EVERY, Type.INT, 0, Range.at_least(0), importance=Importance.LOW, group=_LAYOUT,
            doc="Compact small files (Delta OPTIMIZE) of a table after every N commits this task makes to "
                "it (0: never).")
    .define(PARTITION_BY, Type.LIST, "", importance=Importance.MEDIUM, group=_LAYOUT,
            doc="Columns to partition a new table by (applies when the sink creates the table).")
    .define(COLUMN_TOPIC, Type.STRING, "", importance=Importance.LOW, group=_LAYOUT,
            doc="Column name for the record's topic (after transformations); empty: not written.")
    .define(COLUMN_PARTITION, Type.STRING, "", importance=Importance.LOW, group=_LAYOUT,
            doc="Column name for the record's Kafka partition; empty: not written.")
    .define(COLUMN_OFFSET, Type.STRING, "", importance=Importance.LOW, group=_LAYOUT,
            doc="Column name for the record's Kafka offset; empty: not written.")
    .define(COLUMN_TIMESTAMP, Type.STRING, "", importance=Importance.LOW, group=_LAYOUT,
            doc="Column name for the record's Kafka timestamp; empty: not written.")
)


@dataclass(frozen=True)
class DeltaSinkConfig:
    """The parsed keys of one Delta sink (see :data:`DELTA_SINK_CONFIG_DEF` for each key's meaning)."""

    connector_name: str
    table_path: str | None
    table_name: str | None
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    delete_enabled: bool
    auto_evolve: bool
    partition_by: tuple[str, ...]
    coordinate_columns: dict[str, str]
    files_per_commit: int
    optimize_every: int

    @property
    def upsert(self) -> bool:
        return self.insert_mode == "upsert"

    @property
    def change_rules(self) -> ChangeRules:
        """Which records delete (:mod:`connect_spark.connectors.changes`)."""
        return ChangeRules(deletes=self.delete_enabled)

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "DeltaSinkConfig":
        """Parse and cross-check ``props``.

        Raises:
            ConfigValidationError: every problem, each naming its key and value.
        """
        values, issues = DELTA_SINK_CONFIG_DEF.parse_with_issues(props)
        issues.extend(_cross_check(values))
        if issues:
            raise ConfigValidationError(issues)
        coordinates = {
            source: values[key]
            for source, key in (("topic", COLUMN_TOPIC), ("partition", COLUMN_PARTITION),
                                ("offset", COLUMN_OFFSET), ("timestamp", COLUMN_TIMESTAMP))
            if values[key]
        }
        return cls(
            connector_name=str(props.get("name") or "delta-sink"),
            table_path=values[TABLE_PATH] or None,
            table_name=values[TABLE_NAME] or None,
            insert_mode=values[INSERT_MODE],
            pk_mode=values[PK_MODE],
            pk_fields=tuple(values[PK_FIELDS]),
            delete_enabled=values[DELETE_ENABLED],
            auto_evolve=values[AUTO_EVOLVE],
            partition_by=tuple(values[PARTITION_BY]),
            coordinate_columns=coordinates,
            files_per_commit=values[WRITE_FILES],
            optimize_every=values[OPTIMIZE_EVERY],
        )


def _cross_check(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The rules that involve more than one key (only over keys that parsed)."""
    issues: list[ConfigIssue] = []
    if TABLE_PATH in values and TABLE_NAME in values:
        path, name = values[TABLE_PATH], values[TABLE_NAME]
        if bool(path) == bool(name):
            issues.append(ConfigIssue(TABLE_PATH, path,
                                      f"Exactly one of {TABLE_PATH} and {TABLE_NAME} must be set "
                                      f"(got {TABLE_PATH}={path!r}, {TABLE_NAME}={name!r})."))
    mode, pk_mode = values.get(INSERT_MODE), values.get(PK_MODE)
    if mode == "upsert" and pk_mode == "none":
        issues.append(ConfigIssue(PK_MODE, pk_mode,
                                  f"Invalid value none for configuration {PK_MODE}: insert.mode=upsert needs "
                                  "pk.mode record_key or record_value."))
    if pk_mode == "record_value" and not values.get(PK_FIELDS):
        issues.append(ConfigIssue(PK_FIELDS, "",
                                  f"Invalid value \"\" for configuration {PK_FIELDS}: pk.mode=record_value needs "
                                  "the value fields that form the key."))
    if values.get(DELETE_ENABLED) and (mode != "upsert" or pk_mode != "record_key"):
        issues.append(ConfigIssue(DELETE_ENABLED, True,
                                  f"Invalid value true for configuration {DELETE_ENABLED}: deletes need "
                                  f"insert.mode=upsert and pk.mode=record_key (got {mode}, {pk_mode})."))
    coordinate_names = [values.get(k) for k in (COLUMN_TOPIC, COLUMN_PARTITION, COLUMN_OFFSET, COLUMN_TIMESTAMP)]
    named = [n for n in coordinate_names if n]
    if len(named) != len(set(named)):
        issues.append(ConfigIssue(COLUMN_TOPIC, ",".join(named),
                                  "The delta.column.* keys must name distinct columns (got "
                                  f"{', '.join(named)})."))
    return issues
