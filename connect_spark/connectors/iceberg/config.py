"""The Iceberg sink's configuration: Apache Iceberg's Kafka Connect sink keys, declared once, and their typed form.

Users bring the connector file they wrote for Apache Iceberg's own sink (``org.apache.iceberg.connect.
IcebergSinkConnector``); the keys keep their names and meanings. Three kinds of keys:

* declared keys (:data:`ICEBERG_SINK_CONFIG_DEF`), honoured as Iceberg's sink honours them;
* open prefixes: ``iceberg.catalog.*`` (catalog properties), ``iceberg.hadoop.*`` (Hadoop settings of the
  catalog), ``iceberg.tables.auto-create-props.*`` (properties of tables the sink creates),
  ``iceberg.table.<table>.{route-regex,id-columns,partition-by}`` (per table);
* keys that only steer Iceberg's own coordinator (its control topic, its consumer groups, its commit
  threads and timeout, its Kafka clients ``iceberg.kafka.*``): accepted, without effect, because here a
  commit is made by the task itself, once per micro-batch (see ``task.py``).

Any other ``iceberg.*`` key is refused, naming the key. The whole check runs at validation, before Spark
starts (:class:`IcebergConfigDef` adds it to the declared keys' checks), and again in
:meth:`IcebergSinkConfig.parse`, called by the connector's and the task's ``start``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from connect_spark.config.definition import (
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    Range,
    Type,
)

__all__ = [
    "ICEBERG_SINK_CONFIG_DEF",
    "IcebergConfigDef",
    "IcebergSinkConfig",
    "TableSettings",
    "NO_EFFECT_KEYS",
    "split_partition_by",
]

log = logging.getLogger(__name__)

TABLES = "iceberg.tables"
DYNAMIC = "iceberg.tables.dynamic-enabled"
ROUTE_FIELD = "iceberg.tables.route-field"
DEFAULT_ID_COLUMNS = "iceberg.tables.default-id-columns"
CDC_FIELD = "iceberg.tables.cdc-field"
UPSERT_MODE = "iceberg.tables.upsert-mode-enabled"
DEFAULT_PARTITION_BY = "iceberg.tables.default-partition-by"
AUTO_CREATE = "iceberg.tables.auto-create-enabled"
EVOLVE_SCHEMA = "iceberg.tables.evolve-schema-enabled"
CASE_INSENSITIVE = "iceberg.tables.schema-case-insensitive"
FORCE_OPTIONAL = "iceberg.tables.schema-force-optional"
CATALOG = "iceberg.catalog"
COMMIT_INTERVAL = "iceberg.control.commit.interval-ms"
#: How often a commit that conflicts with another writer's commit is retried (after re-reading the table).
COMMIT_RETRIES = 5

CATALOG_PREFIX = "iceberg.catalog."
HADOOP_PREFIX = "iceberg.hadoop."
AUTO_CREATE_PROPS_PREFIX = "iceberg.tables.auto-create-props."
WRITE_PROPS_PREFIX = "iceberg.tables.write-props."
TABLE_PREFIX = "iceberg.table."
TABLE_KEYS = ("route-regex", "id-columns", "partition-by")

#: Keys of Iceberg's coordinator (and its Kafka clients); accepted, no effect here.
NO_EFFECT_KEYS = {
    "iceberg.control.topic": "Iceberg's control topic: commits are made by the task, no control topic is used",
    "iceberg.control.group-id-prefix": "the consumer group of Iceberg's control topic (not used)",
    "iceberg.connect.group-id": "the group Iceberg's coordinator reads offsets from (offsets are in the "
                                "snapshots and the worker's offset store)",
    "iceberg.control.commit.timeout-ms": "how long Iceberg's coordinator waits for its workers (none here)",
    "iceberg.control.commit.threads": "Iceberg's coordinator threads (Spark parallelises the writes)",
    "iceberg.coordinator.transactional.suffix": "Iceberg's coordinator producer id (not used)",
    "iceberg.hadoop-conf-dir": "Hadoop configuration files of Iceberg's own process (Spark's Hadoop "
                               "configuration applies; iceberg.hadoop.* keys are honoured)",
}
NO_EFFECT_PREFIXES = {
    "iceberg.kafka.": "settings of the Kafka clients of Iceberg's control topic (not used)",
    WRITE_PROPS_PREFIX: "writer properties of Iceberg's own writers; here Spark's Iceberg writer reads the table's "
                        "properties (set them with iceberg.tables.auto-create-props.* or ALTER TABLE)",
}
_UNSUPPORTED = {
    "iceberg.tables.default-commit-branch": "commits to a branch other than main are not supported by this sink",
}

_TARGET = "Tables"
_SCHEMA = "Schema"
_COMMIT = "Commits"
_NO_EFFECT = "Iceberg coordinator keys (accepted, no effect)"

_COMMA_OUTSIDE_PARENS = re.compile(r",(?![^()]*\))")


def split_partition_by(text: str | None) -> tuple[str, ...]:
    """``"region, bucket(16, id), days(ts)"`` → ``("region", "bucket(16, id)", "days(ts)")``."""
    if not text:
        return ()
    return tuple(p.strip() for p in _COMMA_OUTSIDE_PARENS.split(text) if p.strip())


def _split_list(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


class IcebergConfigDef(ConfigDef):
    """A ConfigDef that also checks the ``iceberg.*`` keys outside the declared ones (see the module docstring).

    Called by the runtime's validation (``connector.config().validate(props)``) before anything starts.
    """

    def validate(self, props: Mapping[str, Any]) -> list[ConfigIssue]:
        issues = super().validate(props)
        values, _ = self.parse_with_issues(props)
        return issues + undeclared_key_issues(props, self) + cross_check(values)

    def copy(self) -> "IcebergConfigDef":
        clone = IcebergConfigDef()
        clone.define_all(self)
        return clone


def undeclared_key_issues(props: Mapping[str, Any], config_def: ConfigDef) -> list[ConfigIssue]:
    """One issue per ``iceberg.*`` key that is neither declared, nor under an open prefix, nor a no-effect key."""
    issues: list[ConfigIssue] = []
    for key in sorted(k for k in props if k.startswith("iceberg.")):
        if key in config_def or key in NO_EFFECT_KEYS:
            continue
        if any(key.startswith(p) and len(key) > len(p) for p in
               (CATALOG_PREFIX, HADOOP_PREFIX, AUTO_CREATE_PROPS_PREFIX, *NO_EFFECT_PREFIXES)):
            continue
        if key in _UNSUPPORTED:
            issues.append(ConfigIssue(key, props[key], f"{key} is not supported: {_UNSUPPORTED[key]}."))
            continue
        if key.startswith(TABLE_PREFIX):
            table, _, setting = key[len(TABLE_PREFIX):].rpartition(".")
            if table and setting in TABLE_KEYS:
                continue
            if table and setting == "commit-branch":
                issues.append(ConfigIssue(key, props[key], f"{key} is not supported: commits to a branch other "
                                                           "than main are not supported by this sink."))
                continue
            issues.append(ConfigIssue(key, props[key], f"Unknown per-table key {key}: allowed are "
                                      f"{TABLE_PREFIX}<table>.{{{','.join(TABLE_KEYS)}}}."))
            continue
        issues.append(ConfigIssue(key, props[key], f"Unknown Iceberg sink key {key}; see docs/connectors/iceberg.md "
                                  "for the keys this sink accepts."))
    return issues


ICEBERG_SINK_CONFIG_DEF = (
    IcebergConfigDef()
    .define(TABLES, Type.LIST, "", importance=Importance.HIGH, group=_TARGET,
            doc="The destination tables, namespace.table, comma-separated. Without iceberg.tables.route-field every "
                "record goes to every table; with it, a record goes to the tables whose "
                "iceberg.table.<table>.route-regex matches the field's value. Set this or "
                "iceberg.tables.dynamic-enabled.")
    .define(DYNAMIC, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_TARGET,
            doc="Route each record to the table named by its iceberg.tables.route-field value (lower-cased).")
    .define(ROUTE_FIELD, Type.STRING, None, importance=Importance.MEDIUM, group=_TARGET,
            doc="The record value field (dots for nested fields) that routes records. A record without it "
                "goes where errors.* says (DLQ, log, fail).")
    .define(DEFAULT_ID_COLUMNS, Type.STRING, None, importance=Importance.MEDIUM, group=_TARGET,
            doc="Columns identifying a row, comma-separated; when set a table is upserted (MERGE on them, the "
                "last record per id wins) and tombstones delete the row whose id the record key holds. "
                "Per table: iceberg.table.<table>.id-columns.")
    .define(CDC_FIELD, Type.STRING, None, importance=Importance.MEDIUM, group=_TARGET,
            doc="A record value field (dots for nested fields) naming each change's operation: a value starting "
                "with D deletes the row with the record's id; any other value (I, U, c, r, u, ...) inserts or "
                "updates it. With Debezium's ExtractNewRecordState, add.fields=op gives the field __op. Needs id "
                "columns.")
    .define(UPSERT_MODE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_TARGET,
            doc="Write every record as an upsert of its id. Here a table with id columns is always upserted "
                "(one MERGE per commit, the last change per id wins), so true only asserts that id columns are "
                "set, and false does not turn a table with id columns into an append-only one.")
    .define(DEFAULT_PARTITION_BY, Type.STRING, None, importance=Importance.MEDIUM, group=_TARGET,
            doc="Partition spec of tables the sink creates: columns or transforms (bucket(16, id), days(ts), "
                "truncate(4, name), ...), comma-separated. Per table: iceberg.table.<table>.partition-by.")
    .define(AUTO_CREATE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_SCHEMA,
            doc="Create a missing table from the record schema (with the partition spec and "
                "iceberg.tables.auto-create-props.* as table properties; the id columns are not made Iceberg "
                "identifier fields, which need NOT NULL columns). When false a missing table fails the task, "
                "naming the table.")
    .define(EVOLVE_SCHEMA, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_SCHEMA,
            doc="Add columns for record fields the table lacks. When false such a record fails the task with an "
                "error naming the field.")
    .define(CASE_INSENSITIVE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_SCHEMA,
            doc="Match record fields to table columns ignoring case.")
    .define(FORCE_OPTIONAL, Type.BOOLEAN, False, importance=Importance.LOW, group=_SCHEMA,
            doc="Create and add every column as optional, whatever the record schema says.")
    .define(CATALOG, Type.STRING, "iceberg", importance=Importance.MEDIUM, group=_TARGET,
            doc="The catalog's name: registered in Spark as spark.sql.catalog.<name> with the "
                "iceberg.catalog.* properties (type hadoop/hive/jdbc/rest or catalog-impl, warehouse, uri, "
                "io-impl, credential, ...) and iceberg.hadoop.* as its Hadoop settings.")
    .define(COMMIT_INTERVAL, Type.INT, None, Range.at_least(0), importance=Importance.MEDIUM, group=_COMMIT,
            doc="At least this long between two commits of the task: after a commit the task waits out the rest "
                "of the interval, and the next micro-batch takes every record that arrived meanwhile. Unset: one "
                "commit per micro-batch (the worker's trigger). Iceberg's own sink defaults to 300000.")
)
for _key, _why in NO_EFFECT_KEYS.items():
    ICEBERG_SINK_CONFIG_DEF.define(_key, Type.STRING, None, importance=Importance.LOW, group=_NO_EFFECT,
                                   doc=f"Accepted, no effect: {_why}.")


@dataclass(frozen=True)
class TableSettings:
    """One table's settings (per-table keys over the defaults)."""

    route_regex: "re.Pattern[str] | None"
    id_columns: tuple[str, ...]
    partition_by: tuple[str, ...]


@dataclass(frozen=True)
class IcebergSinkConfig:
    """The parsed keys of one Iceberg sink (see :data:`ICEBERG_SINK_CONFIG_DEF` for each key's meaning)."""

    connector_name: str
    tables: tuple[str, ...]
    dynamic: bool
    route_field: str | None
    default_id_columns: tuple[str, ...]
    default_partition_by: tuple[str, ...]
    auto_create: bool
    evolve_schema: bool
    case_insensitive: bool
    force_optional: bool
    catalog: str
    catalog_properties: dict[str, str]
    hadoop_properties: dict[str, str]
    auto_create_properties: dict[str, str]
    commit_interval_ms: int | None
    per_table: dict[str, dict[str, str]] = field(default_factory=dict)
    cdc_field: str | None = None

    def table_settings(self, table: str) -> TableSettings:
        """The settings of ``table`` (a name from iceberg.tables or a dynamic route value)."""
        own = self.per_table.get(table, {})
        regex = own.get("route-regex")
        id_columns = _split_list(own["id-columns"]) if "id-columns" in own else self.default_id_columns
        partition_by = split_partition_by(own["partition-by"]) if "partition-by" in own else self.default_partition_by
        return TableSettings(re.compile(regex) if regex else None, id_columns, partition_by)

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "IcebergSinkConfig":
        """Parse and cross-check ``props``; logs the accepted keys that have no effect.

        Raises:
            ConfigValidationError: every problem, each naming its key and value.
        """
        values, issues = ICEBERG_SINK_CONFIG_DEF.parse_with_issues(props)
        issues += undeclared_key_issues(props, ICEBERG_SINK_CONFIG_DEF)
        issues += cross_check(values)
        per_table: dict[str, dict[str, str]] = {}
        for key, value in props.items():
            if key.startswith(TABLE_PREFIX):
                table, _, setting = key[len(TABLE_PREFIX):].rpartition(".")
                if setting in TABLE_KEYS:
                    per_table.setdefault(table, {})[setting] = str(value)
                    if setting == "route-regex":
                        try:
                            re.compile(str(value))
                        except re.error as e:
                            issues.append(ConfigIssue(key, value, f"Invalid value {value} for configuration {key}: "
                                                                  f"not a regular expression ({e})."))
        has_ids = bool(values.get(DEFAULT_ID_COLUMNS)) or any("id-columns" in own for own in per_table.values())
        for key in (CDC_FIELD, UPSERT_MODE):
            if values.get(key) and not has_ids:
                issues.append(ConfigIssue(key, values[key], f"Invalid value {values[key]} for configuration {key}: "
                                          f"it needs id columns ({DEFAULT_ID_COLUMNS} or "
                                          f"{TABLE_PREFIX}<table>.id-columns) to find the rows it changes."))
        if issues:
            raise ConfigValidationError(issues)
        ignored = sorted(k for k in props if k in NO_EFFECT_KEYS or k.startswith(tuple(NO_EFFECT_PREFIXES)))
        if ignored:
            log.info("Iceberg sink keys accepted without effect here: %s", ", ".join(ignored))
        return cls(
            connector_name=str(props.get("name") or "iceberg-sink"),
            tables=tuple(values[TABLES]),
            dynamic=values[DYNAMIC],
            route_field=values[ROUTE_FIELD] or None,
            default_id_columns=_split_list(values[DEFAULT_ID_COLUMNS]),
            default_partition_by=split_partition_by(values[DEFAULT_PARTITION_BY]),
            auto_create=values[AUTO_CREATE],
            evolve_schema=values[EVOLVE_SCHEMA],
            case_insensitive=values[CASE_INSENSITIVE],
            force_optional=values[FORCE_OPTIONAL],
            catalog=values[CATALOG],
            catalog_properties=_with_prefix(props, CATALOG_PREFIX),
            hadoop_properties=_with_prefix(props, HADOOP_PREFIX),
            auto_create_properties=_with_prefix(props, AUTO_CREATE_PROPS_PREFIX),
            commit_interval_ms=values[COMMIT_INTERVAL],
            per_table=per_table,
            cdc_field=values[CDC_FIELD] or None,
        )


def _with_prefix(props: Mapping[str, Any], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: str(v) for k, v in props.items() if k.startswith(prefix) and len(k) > len(prefix)}


_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def cross_check(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The rules that involve more than one key (only over keys that parsed)."""
    issues: list[ConfigIssue] = []
    tables, dynamic, route = values.get(TABLES), values.get(DYNAMIC), values.get(ROUTE_FIELD)
    if tables and dynamic:
        issues.append(ConfigIssue(DYNAMIC, True, f"Invalid value true for configuration {DYNAMIC}: the tables are "
                                                 f"either listed ({TABLES}={','.join(tables)}) or dynamic, not both."))
    elif dynamic and not route:
        issues.append(ConfigIssue(ROUTE_FIELD, route, f"Missing {ROUTE_FIELD}: {DYNAMIC}=true routes each record "
                                                      "to the table its route field names."))
    elif tables is not None and dynamic is not None and not tables and not dynamic:
        issues.append(ConfigIssue(TABLES, "", f"Missing {TABLES}: name the destination table(s), or set "
                                              f"{DYNAMIC}=true with {ROUTE_FIELD}."))
    catalog = values.get(CATALOG)
    if catalog is not None and not _CATALOG_NAME.match(catalog):
        issues.append(ConfigIssue(CATALOG, catalog, f"Invalid value {catalog} for configuration {CATALOG}: a "
                                                    "catalog name is letters, digits and _ (it becomes "
                                                    "spark.sql.catalog.<name>)."))
    if catalog == "spark_catalog":
        issues.append(ConfigIssue(CATALOG, catalog, f"Invalid value spark_catalog for configuration {CATALOG}: "
                                                    "Spark's session catalog is Delta's here; name another catalog."))
    return issues
