"""The JDBC sink's configuration keys (Confluent's ``JdbcSinkConnector`` keys and defaults), declared once.

``JDBC_SINK_CONFIG_DEF`` is what :meth:`JdbcSinkConnector.config` returns, so the runtime validates each
key before Spark starts; Confluent keys this sink does not implement are declared too, with a validator
that refuses them by name. :meth:`JdbcSinkConfig.parse` is called by the connector's and the task's
``start`` and adds the checks that span several keys (pk.mode against insert.mode, delete.enabled, ...).
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import parse_qsl, unquote

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import (
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    Password,
    Range,
    Type,
    ValidList,
    ValidString,
)
from connect_spark.config.secrets import without_embedded_secrets
from connect_spark.connectors.changes import DELETED_FIELD, ChangeRules

__all__ = ["JDBC_SINK_CONFIG_DEF", "JdbcSinkConfig", "ConnectionSettings", "parse_jdbc_url", "redacted_url", "TOPIC_PLACEHOLDER",
           "KAFKA_PK_DEFAULT_NAMES"]

TOPIC_PLACEHOLDER = "${topic}"
#: pk.mode=kafka columns when pk.fields is empty (Confluent's names).
KAFKA_PK_DEFAULT_NAMES = ("__connect_topic", "__connect_partition", "__connect_offset")

CONNECTION_URL = "connection.url"
CONNECTION_USER = "connection.user"
CONNECTION_PASSWORD = "connection.password"
DIALECT_NAME = "dialect.name"
CONNECTION_ATTEMPTS = "connection.attempts"
CONNECTION_BACKOFF = "connection.backoff.ms"
INSERT_MODE = "insert.mode"
BATCH_SIZE = "batch.size"
DELETE_ENABLED = "delete.enabled"
TABLE_TYPES = "table.types"
TABLE_NAME_FORMAT = "table.name.format"
PK_MODE = "pk.mode"
PK_FIELDS = "pk.fields"
FIELDS_WHITELIST = "fields.whitelist"
DB_TIMEZONE = "db.timezone"
AUTO_CREATE = "auto.create"
AUTO_EVOLVE = "auto.evolve"
QUOTE_IDENTIFIERS = "quote.sql.identifiers"
MAX_RETRIES = "max.retries"
RETRY_BACKOFF = "retry.backoff.ms"
OFFSETS_TABLE = "offsets.table.name"

#: Dialect names accepted in dialect.name (empty: chosen from the URL).
SUPPORTED_DIALECTS = ("", "PostgreSqlDatabaseDialect")


class _Refused:
    """Validator of a Confluent key this sink does not implement: any value is refused, naming why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, name: str, value: Any) -> None:
        raise ConfigException(f"This sink does not support {name}: {self.reason}", name, value)

    def __str__(self) -> str:
        return "not supported"


class _TimeZone:
    def __call__(self, name: str, value: Any) -> None:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise ConfigException("Not a valid time zone id (e.g. UTC, Europe/Paris)", name, value) from e

    def __str__(self) -> str:
        return "a time zone id (UTC, Europe/Paris, ...)"


class _PostgresUrl:
    def __call__(self, name: str, value: Any) -> None:
        parse_jdbc_url(value)

    def __str__(self) -> str:
        return "jdbc:postgresql://host[:port]/database[?user=..&password=..]"


_CONNECTION = "Connection"
_WRITES = "Writes"
_MAPPING = "Data Mapping"
_DDL = "DDL Support"
_RETRIES = "Retries"
_EXACTLY_ONCE = "Exactly once"

JDBC_SINK_CONFIG_DEF = (
    ConfigDef()
    .define(CONNECTION_URL, Type.STRING, validator=_PostgresUrl(), importance=Importance.HIGH, group=_CONNECTION,
            doc="JDBC connection URL, e.g. jdbc:postgresql://db.example.com:5432/shop?user=sink&password=secret "
                "(PostgreSQL only for now). Query parameters user, password, sslmode, sslrootcert, sslcert, "
                "sslkey, connectTimeout, ApplicationName and currentSchema are understood.")
    .define(CONNECTION_USER, Type.STRING, None, importance=Importance.HIGH, group=_CONNECTION,
            doc="JDBC connection user (overrides a user in the URL).")
    .define(CONNECTION_PASSWORD, Type.PASSWORD, None, importance=Importance.HIGH, group=_CONNECTION,
            doc="JDBC connection password (overrides a password in the URL). Never shown.")
    .define(DIALECT_NAME, Type.STRING, "", ValidString.in_(*SUPPORTED_DIALECTS), importance=Importance.LOW,
            group=_CONNECTION,
            doc="The database dialect; empty: chosen from the URL. Only PostgreSqlDatabaseDialect is available.")
    .define(CONNECTION_ATTEMPTS, Type.INT, 3, Range.at_least(1), importance=Importance.LOW, group=_CONNECTION,
            doc="How many times to try to open a connection before failing.")
    .define(CONNECTION_BACKOFF, Type.LONG, 10000, Range.at_least(0), importance=Importance.LOW, group=_CONNECTION,
            doc="Milliseconds to wait between connection attempts.")
    .define(INSERT_MODE, Type.STRING, "insert", ValidString.in_("insert", "upsert", "update", case_insensitive=True),
            importance=Importance.HIGH, group=_WRITES,
            doc="insert: COPY the rows in (a duplicate key is a rejected row). upsert: INSERT ... ON CONFLICT "
                "(pk) DO UPDATE. update: UPDATE the rows whose key exists. In upsert and update mode the last "
                "record of a key in a batch wins.")
    .define(BATCH_SIZE, Type.INT, 3000, Range.at_least(1), importance=Importance.MEDIUM, group=_WRITES,
            doc="At most this many records per database transaction (one COPY per table). Larger batches are "
                "faster; the records a put receives are split into transactions of this size.")
    .define(DELETE_ENABLED, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_WRITES,
            doc="Tombstones (null values) and values whose " + DELETED_FIELD + " field is 'true' (Debezium's "
                "ExtractNewRecordState in a rewrite mode) delete the row with their key; that field is then not a "
                "column. Needs pk.mode=record_key. Otherwise tombstones are skipped.")
    .define(TABLE_TYPES, Type.LIST, "TABLE", ValidList.in_("TABLE", "PARTITIONED_TABLE", allow_empty=False),
            importance=Importance.LOW, group=_WRITES,
            doc="Kinds of tables the sink may write: TABLE, PARTITIONED_TABLE (writing to a VIEW is not "
                "supported).")
    .define(TABLE_NAME_FORMAT, Type.STRING, TOPIC_PLACEHOLDER, importance=Importance.MEDIUM, group=_MAPPING,
            doc=f"The destination table, where {TOPIC_PLACEHOLDER} is the record's topic (after "
                "transformations); may be schema-qualified (archive.kafka_${topic}).")
    .define(PK_MODE, Type.STRING, "none", ValidString.in_("none", "kafka", "record_key", "record_value",
                                                          case_insensitive=True),
            importance=Importance.HIGH, group=_MAPPING,
            doc="Where the primary key comes from: none; kafka (topic, partition, offset columns); record_key "
                "(the key's fields, or a primitive key); record_value (fields of the value).")
    .define(PK_FIELDS, Type.LIST, "", importance=Importance.MEDIUM, group=_MAPPING,
            doc="kafka: three column names (default __connect_topic,__connect_partition,__connect_offset). "
                "record_key: the key fields (default all), or for a primitive key the one column name (required). "
                "record_value: the value fields forming the key (default all).")
    .define(FIELDS_WHITELIST, Type.LIST, "", importance=Importance.MEDIUM, group=_MAPPING,
            doc="The value fields written as columns (empty: all). It is also the explicit column list that "
                "lets schemaless values (JSON without schemas) be written.")
    .define(DB_TIMEZONE, Type.STRING, "UTC", _TimeZone(), importance=Importance.MEDIUM, group=_MAPPING,
            doc="Time zone in which Connect Timestamp values are written to timestamp columns.")
    .define(AUTO_CREATE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_DDL,
            doc="CREATE TABLE from the record schema when the table is missing.")
    .define(AUTO_EVOLVE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group=_DDL,
            doc="ALTER TABLE ADD COLUMN (nullable) for record fields the table lacks. When false such a record "
                "fails the task with an error naming the field.")
    .define(QUOTE_IDENTIFIERS, Type.STRING, "always", ValidString.in_("always", "never", case_insensitive=True),
            importance=Importance.MEDIUM, group=_DDL,
            doc="always: table and column names are quoted (case kept). never: names are folded to lower case, "
                "as unquoted SQL names are.")
    .define(MAX_RETRIES, Type.INT, 10, Range.at_least(0), importance=Importance.MEDIUM, group=_RETRIES,
            doc="How many times a batch is retried after a lost connection, a deadlock or a serialization "
                "failure before failing the task (longer when errors.retry.timeout allows).")
    .define(RETRY_BACKOFF, Type.INT, 3000, Range.at_least(0), importance=Importance.MEDIUM, group=_RETRIES,
            doc="Milliseconds to wait before retrying a batch.")
    .define(OFFSETS_TABLE, Type.STRING, "connect_offsets", importance=Importance.MEDIUM, group=_EXACTLY_ONCE,
            doc="The table in the target database holding the Kafka offsets each transaction covers (created "
                "when missing; may be schema-qualified). It makes the sink exactly once.")
    .define("mssql.use.merge.holdlock", Type.STRING, None, _Refused("it applies to SQL Server only"),
            importance=Importance.LOW, group=_WRITES, doc="Not supported (SQL Server only).")
    .define("trim.sensitive.log", Type.STRING, None,
            _Refused("this sink never logs record values; the database's error message goes to the dead "
                     "letter queue headers"),
            importance=Importance.LOW, group=_WRITES, doc="Not supported: values are never logged.")
    .define("db.timezone.date", Type.STRING, None, _Refused("Date values are written as the date they hold"),
            importance=Importance.LOW, group=_MAPPING, doc="Not supported.")
)


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect: libpq keywords (never shown; see :meth:`describe`)."""

    params: dict[str, str]

    def describe(self) -> str:
        """host:port/database, for log lines (no user, no password)."""
        return f"{self.params.get('host', 'localhost')}:{self.params.get('port', '5432')}/{self.params.get('dbname', '')}"


_URL = re.compile(r"^jdbc:postgresql:(?://(?P<hosts>[^/?]*)/?)?(?P<db>[^?]*)(?:\?(?P<query>.*))?$")
_QUERY_KEYWORDS = {
    "user": "user", "password": "password", "sslmode": "sslmode", "sslrootcert": "sslrootcert",
    "sslcert": "sslcert", "sslkey": "sslkey", "connectTimeout": "connect_timeout",
    "ApplicationName": "application_name", "applicationName": "application_name",
}


def redacted_url(url: str) -> str:
    """``url`` with the value of a ``password`` parameter replaced by ``[hidden]``."""
    return without_embedded_secrets(url)


def _url_error(reason: str, url: str) -> ConfigException:
    """A connection.url error whose message shows the URL with its password hidden."""
    error = ConfigException(reason, CONNECTION_URL, redacted_url(url))
    error.key = f"{CONNECTION_URL} (password hidden)"  # keeps ConfigDef from repeating the raw value
    return error


def parse_jdbc_url(url: str) -> ConnectionSettings:
    """libpq keywords for a ``jdbc:postgresql:`` URL.

    Raises:
        ConfigException: naming connection.url (the value is not repeated: it may hold a password).
    """
    match = _URL.match(url.strip())
    if not match:
        raise _url_error("Expected a PostgreSQL JDBC URL: jdbc:postgresql://host[:port]/database[?params] "
                         "(only PostgreSQL is supported)", url)
    params: dict[str, str] = {}
    hosts = match.group("hosts") or ""
    if hosts:
        if "," in hosts:
            raise _url_error("Several hosts in one URL are not supported", url)
        host, _, port = hosts.rpartition(":") if hosts.count(":") == 1 or hosts.startswith("[") else (hosts, "", "")
        if not host:
            host, port = port, ""
        params["host"] = host.strip("[]") or "localhost"
        if port:
            if not port.isdigit():
                raise _url_error(f"Port {port!r} is not a number", url)
            params["port"] = port
    else:
        params["host"] = "localhost"
    if match.group("db"):
        params["dbname"] = unquote(match.group("db"))
    for key, value in parse_qsl(match.group("query") or "", keep_blank_values=True):
        if key in _QUERY_KEYWORDS:
            params[_QUERY_KEYWORDS[key]] = value
        elif key == "ssl":
            if value.lower() == "true":
                params.setdefault("sslmode", "verify-full")
        elif key == "currentSchema":
            params["options"] = f"-c search_path={value}"
        else:
            raise _url_error(f"URL parameter {key!r} is not supported (supported: "
                             f"{', '.join(sorted(set(_QUERY_KEYWORDS) | {'ssl', 'currentSchema'}))})", url)
    return ConnectionSettings(params)


@dataclass(frozen=True)
class JdbcSinkConfig:
    """The parsed keys of one JDBC sink (see :data:`JDBC_SINK_CONFIG_DEF` for each key's meaning)."""

    connector_name: str
    connection: ConnectionSettings
    connection_attempts: int
    connection_backoff_ms: int
    insert_mode: str
    batch_size: int
    delete_enabled: bool
    table_name_format: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_whitelist: tuple[str, ...]
    db_timezone: str
    auto_create: bool
    auto_evolve: bool
    quote_identifiers: bool
    max_retries: int
    retry_backoff_ms: int
    offsets_table: str
    errors_retry_timeout_ms: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def change_rules(self) -> ChangeRules:
        """Which records delete (:mod:`connect_spark.connectors.changes`)."""
        return ChangeRules(deletes=self.delete_enabled)

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "JdbcSinkConfig":
        """Parse and cross-check ``props``.

        Raises:
            ConfigValidationError: every problem, each naming its key and value.
        """
        values, issues = JDBC_SINK_CONFIG_DEF.parse_with_issues(props)
        issues.extend(_cross_check(values))
        if issues:
            raise ConfigValidationError(issues)
        settings = parse_jdbc_url(values[CONNECTION_URL])
        if values[CONNECTION_USER]:
            settings.params["user"] = values[CONNECTION_USER]
        password = values[CONNECTION_PASSWORD]
        if password is not None:
            settings.params["password"] = password.value if isinstance(password, Password) else str(password)
        retry_timeout = props.get("errors.retry.timeout", 0)
        return cls(
            connector_name=str(props.get("name") or "jdbc-sink"),
            connection=settings,
            connection_attempts=values[CONNECTION_ATTEMPTS],
            connection_backoff_ms=values[CONNECTION_BACKOFF],
            insert_mode=values[INSERT_MODE].lower(),
            batch_size=values[BATCH_SIZE],
            delete_enabled=values[DELETE_ENABLED],
            table_name_format=values[TABLE_NAME_FORMAT],
            pk_mode=values[PK_MODE].lower(),
            pk_fields=tuple(values[PK_FIELDS]),
            fields_whitelist=tuple(values[FIELDS_WHITELIST]),
            db_timezone=values[DB_TIMEZONE],
            auto_create=values[AUTO_CREATE],
            auto_evolve=values[AUTO_EVOLVE],
            quote_identifiers=values[QUOTE_IDENTIFIERS].lower() == "always",
            max_retries=values[MAX_RETRIES],
            retry_backoff_ms=values[RETRY_BACKOFF],
            offsets_table=values[OFFSETS_TABLE],
            errors_retry_timeout_ms=int(retry_timeout) if str(retry_timeout).lstrip("-").isdigit() else 0,
        )


def _cross_check(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The rules that involve more than one key (only over keys that parsed)."""
    issues: list[ConfigIssue] = []
    mode = str(values.get(INSERT_MODE, "")).lower()
    pk_mode = str(values.get(PK_MODE, "")).lower()
    pk_fields = values.get(PK_FIELDS) or []
    if mode in ("upsert", "update") and pk_mode == "none":
        issues.append(ConfigIssue(PK_MODE, pk_mode,
                                  f"Invalid value none for configuration {PK_MODE}: insert.mode={mode} needs a "
                                  "primary key (pk.mode kafka, record_key or record_value)."))
    if pk_mode == "kafka" and pk_fields and len(pk_fields) != 3:
        issues.append(ConfigIssue(PK_FIELDS, ",".join(pk_fields),
                                  f"Invalid value {','.join(pk_fields)} for configuration {PK_FIELDS}: pk.mode=kafka "
                                  "takes exactly three names (topic, partition, offset columns) or none."))
    if values.get(DELETE_ENABLED) and pk_mode != "record_key":
        issues.append(ConfigIssue(DELETE_ENABLED, True,
                                  f"Invalid value true for configuration {DELETE_ENABLED}: deletes need "
                                  f"pk.mode=record_key (got {pk_mode})."))
    fmt = values.get(TABLE_NAME_FORMAT)
    if fmt is not None and (not fmt.strip() or len(fmt.split(".")) > 2):
        issues.append(ConfigIssue(TABLE_NAME_FORMAT, fmt,
                                  f"Invalid value {fmt} for configuration {TABLE_NAME_FORMAT}: expected [schema.]table, "
                                  f"where {TOPIC_PLACEHOLDER} stands for the topic."))
    offsets = values.get(OFFSETS_TABLE)
    if offsets is not None and (not offsets.strip() or len(offsets.split(".")) > 2):
        issues.append(ConfigIssue(OFFSETS_TABLE, offsets,
                                  f"Invalid value {offsets} for configuration {OFFSETS_TABLE}: expected [schema.]table."))
    return issues
