"""The search sink's keys: Confluent's ``ElasticsearchSinkConnector`` keys and defaults, declared once.

``SEARCH_SINK_CONFIG_DEF`` is what :meth:`SearchSinkConnector.config` returns, so the runtime validates each
key before Spark starts. :meth:`SearchSinkConfig.parse` is called by the connector's and the task's ``start``
and adds the checks that span several keys. Where a key means something else here than in Confluent's
connector, its doc says so (and ``docs/connectors/search.md`` lists every difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import (
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    Password,
    Range,
    Type,
    ValidString,
)
from connect_spark.config.secrets import without_embedded_secrets
from connect_spark.connectors.search.tls import KEY_LOCATION, kafka_settings
from connect_spark.kafka.tls_stores import STORE_TYPES

__all__ = ["SEARCH_SINK_CONFIG_DEF", "SearchSinkConfig", "TlsSettings"]

CONNECTION_URL = "connection.url"
CONNECTION_USERNAME = "connection.username"
CONNECTION_PASSWORD = "connection.password"
KEY_IGNORE = "key.ignore"
SCHEMA_IGNORE = "schema.ignore"
TOPIC_KEY_IGNORE = "topic.key.ignore"
TOPIC_SCHEMA_IGNORE = "topic.schema.ignore"
COMPACT_MAP_ENTRIES = "compact.map.entries"
WRITE_METHOD = "write.method"
BEHAVIOR_ON_NULL_VALUES = "behavior.on.null.values"
BEHAVIOR_ON_MALFORMED = "behavior.on.malformed.documents"
DROP_INVALID_MESSAGE = "drop.invalid.message"
BATCH_SIZE = "batch.size"
BULK_SIZE_BYTES = "bulk.size.bytes"
MAX_IN_FLIGHT = "max.in.flight.requests"
LINGER_MS = "linger.ms"
FLUSH_TIMEOUT_MS = "flush.timeout.ms"
MAX_RETRIES = "max.retries"
RETRY_BACKOFF_MS = "retry.backoff.ms"
CONNECTION_TIMEOUT_MS = "connection.timeout.ms"
READ_TIMEOUT_MS = "read.timeout.ms"
SECURITY_PROTOCOL = "elastic.security.protocol"
SSL = "elastic.https.ssl."
DATA_STREAM_TYPE = "data.stream.type"
DATA_STREAM_DATASET = "data.stream.dataset"
DATA_STREAM_TIMESTAMP_FIELD = "data.stream.timestamp.field"
EXTERNAL_VERSION_HEADER = "external.version.header"
ENGINE = "search.engine"

_CONNECTOR = "Connector"
_CONVERSION = "Data Conversion"
_SECURITY = "Security"
_DATA_STREAM = "Data Stream"


class _Urls:
    def __call__(self, name: str, value: Any) -> None:
        if not value:
            raise ConfigException("At least one URL is needed", name, value)
        for url in value:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                shown = without_embedded_secrets(url)
                error = ConfigException(f"{shown!r} is not an http:// or https:// URL", name,
                                        without_embedded_secrets(",".join(value)))
                error.key = f"{name} (password hidden)"  # keeps ConfigDef from repeating the raw value
                raise error

    def __str__(self) -> str:
        return "http(s)://host:port, comma separated"


class _StoreType:
    """Kafka's store types, as ``connect_spark.kafka.tls`` reads them (JCEKS is read as JKS is)."""

    def __call__(self, name: str, value: Any) -> None:
        if value is None or str(value).strip().upper() not in (*STORE_TYPES, "JCEKS"):
            raise ConfigException(f"Unknown store type; allowed: {', '.join(STORE_TYPES)}", name, value)

    def __str__(self) -> str:
        return ", ".join(STORE_TYPES)


SEARCH_SINK_CONFIG_DEF = (
    ConfigDef()
    .define(CONNECTION_URL, Type.LIST, validator=_Urls(), importance=Importance.HIGH, group=_CONNECTOR,
            doc="The cluster's HTTP(S) URLs, comma separated, e.g. http://es1:9200,http://es2:9200. Requests are "
                "spread over them.")
    .define(CONNECTION_USERNAME, Type.STRING, None, importance=Importance.MEDIUM, group=_CONNECTOR,
            doc="User for HTTP basic authentication (used when the password is set too).")
    .define(CONNECTION_PASSWORD, Type.PASSWORD, None, importance=Importance.MEDIUM, group=_CONNECTOR,
            doc="Password for HTTP basic authentication. Never shown.")
    .define(ENGINE, Type.STRING, "auto", ValidString.in_("auto", "opensearch", "elasticsearch", case_insensitive=True),
            importance=Importance.LOW, group=_CONNECTOR,
            doc="Which official client talks to the cluster: opensearch (opensearch-py), elasticsearch "
                "(elasticsearch-py, Elasticsearch 8 and 9), or auto: chosen from the cluster's own answer to GET /. "
                "Not a Confluent key.")
    .define(BATCH_SIZE, Type.INT, 2000, Range.between(1, 1_000_000), importance=Importance.MEDIUM, group=_CONNECTOR,
            doc="At most this many documents per bulk request.")
    .define(BULK_SIZE_BYTES, Type.LONG, 5 * 1024 * 1024, Range.at_least(1), importance=Importance.LOW,
            group=_CONNECTOR, doc="At most this many bytes of actions per bulk request.")
    .define(MAX_IN_FLIGHT, Type.INT, 5, Range.between(1, 1000), importance=Importance.MEDIUM, group=_CONNECTOR,
            doc="Bulk requests a task sends in parallel. Safe for ordering: a put sends at most one action per "
                "document id (the newest), so parallel requests never race on one document.")
    .define(LINGER_MS, Type.LONG, 1, Range.between(0, 86_400_000), importance=Importance.LOW, group=_CONNECTOR,
            doc="Accepted for compatibility. Each micro-batch is one put whose documents go out in full bulk "
                "requests at once, so there is nothing to linger for.")
    .define(FLUSH_TIMEOUT_MS, Type.LONG, 180_000, Range.at_least(1000), importance=Importance.LOW, group=_CONNECTOR,
            doc="Upper bound, in milliseconds, on the time one put may spend sending its documents and retrying "
                "(429 and 5xx answers); past it the put gives up as after max.retries.")
    .define(MAX_RETRIES, Type.INT, 5, Range.at_least(0), importance=Importance.LOW, group=_CONNECTOR,
            doc="Retries of the documents of a bulk request that got 429 (throttling), a 5xx answer or no answer, "
                "within one put, with exponential back-off and jitter. When they are used up the batch is "
                "delivered again while errors.retry.timeout allows, then the task fails.")
    .define(RETRY_BACKOFF_MS, Type.LONG, 100, Range.at_least(0), importance=Importance.LOW, group=_CONNECTOR,
            doc="The first retry waits up to this many milliseconds (full jitter); each next one up to twice "
                "the previous bound, capped at 60 s.")
    .define(CONNECTION_TIMEOUT_MS, Type.INT, 1000, Range.at_least(0), importance=Importance.LOW, group=_CONNECTOR,
            doc="Milliseconds to wait for a connection to the cluster (the Python clients use one timeout for "
                "connecting and reading: the larger of this and read.timeout.ms).")
    .define(READ_TIMEOUT_MS, Type.INT, 3000, Range.at_least(0), importance=Importance.LOW, group=_CONNECTOR,
            doc="Milliseconds to wait for the cluster's answer to a request; a request that times out is retried "
                "like a 5xx answer.")
    .define(KEY_IGNORE, Type.BOOLEAN, False, importance=Importance.HIGH, group=_CONVERSION,
            doc="true: document ids are topic+partition+offset. false: the record key (a string or an integer) is "
                "the id, and the document's version is the record's offset (external versioning), so an older "
                "record delivered again never replaces a newer document.")
    .define(SCHEMA_IGNORE, Type.BOOLEAN, False, importance=Importance.LOW, group=_CONVERSION,
            doc="Accepted for compatibility: this sink creates no mappings, so the cluster maps documents "
                "dynamically or from your index templates either way.")
    .define(TOPIC_KEY_IGNORE, Type.LIST, "", importance=Importance.LOW, group=_CONVERSION,
            doc="Topics for which key.ignore is true.")
    .define(TOPIC_SCHEMA_IGNORE, Type.LIST, "", importance=Importance.LOW, group=_CONVERSION,
            doc="Topics for which schema.ignore is true (accepted for compatibility, see schema.ignore).")
    .define(COMPACT_MAP_ENTRIES, Type.BOOLEAN, True, importance=Importance.LOW, group=_CONVERSION,
            doc="true: map entries with string keys are written as \"key\": value. false, and always for other "
                "keys: as an array of {\"key\": k, \"value\": v} documents.")
    .define(WRITE_METHOD, Type.STRING, "insert", ValidString.in_("insert", "upsert", case_insensitive=True),
            importance=Importance.LOW, group=_CONVERSION,
            doc="insert: index whole documents. upsert: update the document with the record's fields, creating "
                "it when missing (updates carry no external version: the newest record of a put wins, puts "
                "apply in offset order).")
    .define(BEHAVIOR_ON_NULL_VALUES, Type.STRING, "fail", ValidString.in_("ignore", "delete", "fail",
                                                                          case_insensitive=True),
            importance=Importance.LOW, group=_CONVERSION,
            doc="Records with a null value (tombstones): ignore them, delete the document with their id, or "
                "treat them as invalid (errors.* decides: dead letter queue, log, or fail).")
    .define(BEHAVIOR_ON_MALFORMED, Type.STRING, "fail", ValidString.in_("ignore", "warn", "fail",
                                                                        case_insensitive=True),
            importance=Importance.LOW, group=_CONVERSION,
            doc="Documents the cluster rejects (a mapping conflict, a parse error): ignore them; warn (logged, "
                "and sent to the errant record reporter when errors.tolerance=all); or fail: a record error "
                "through errors.* (with errors.tolerance=all the dead letter queue gets the cluster's reason, "
                "otherwise the task fails).")
    .define(DROP_INVALID_MESSAGE, Type.BOOLEAN, False, importance=Importance.LOW, group=_CONVERSION,
            doc="true: records that cannot become a document (a null or structured key as id, a bad version "
                "header) are logged and dropped. false: they are record errors through errors.*.")
    .define(EXTERNAL_VERSION_HEADER, Type.STRING, "", importance=Importance.LOW, group=_CONVERSION,
            doc="A header holding the document's external version (a decimal integer), used instead of the "
                "record's offset when key.ignore is false.")
    .define(SECURITY_PROTOCOL, Type.STRING, "PLAINTEXT", ValidString.in_("PLAINTEXT", "SSL", case_insensitive=True),
            importance=Importance.MEDIUM, group=_SECURITY,
            doc="SSL: every connection.url is https://; the cluster's certificate is verified against "
                "elastic.https.ssl.truststore.location (else the system's CAs) and a client certificate is "
                "presented when elastic.https.ssl.keystore.location is set. https:// URLs use TLS either way.")
    .define(SSL + "truststore.location", Type.STRING, None, importance=Importance.MEDIUM, group=_SECURITY,
            doc="The trust store: the CA certificates to trust, in a JKS, PKCS12 or PEM file.")
    .define(SSL + "truststore.password", Type.PASSWORD, None, importance=Importance.LOW, group=_SECURITY,
            doc="The trust store's password (JKS and PKCS12; a PEM trust store has none). Never shown.")
    .define(SSL + "truststore.type", Type.STRING, "JKS", _StoreType(), importance=Importance.LOW, group=_SECURITY,
            doc="JKS, PKCS12 or PEM. As Java 17 does, a binary store is read by its content whichever of JKS and "
                "PKCS12 is named; left unset, a PEM file is read as PEM too. Reading JKS needs the JDK's keytool "
                "(it is converted in memory).")
    .define(SSL + "keystore.location", Type.STRING, None, importance=Importance.MEDIUM, group=_SECURITY,
            doc="The key store: the client certificate's private key and chain (mutual TLS), in a JKS, PKCS12 or "
                "PEM file (with elastic.https.ssl.key.location: a PEM file of the chain only).")
    .define(KEY_LOCATION, Type.STRING, None, importance=Importance.LOW, group=_SECURITY,
            doc="A PEM file holding the client certificate's private key, the chain being the PEM file "
                "elastic.https.ssl.keystore.location. Not a Confluent key.")
    .define(SSL + "keystore.password", Type.PASSWORD, None, importance=Importance.LOW, group=_SECURITY,
            doc="The key store's password (JKS and PKCS12). Never shown.")
    .define(SSL + "key.password", Type.PASSWORD, None, importance=Importance.LOW, group=_SECURITY,
            doc="The private key's password: of the key entry in a JKS store, or of an encrypted PEM key. "
                "Never shown.")
    .define(SSL + "keystore.type", Type.STRING, "JKS", _StoreType(), importance=Importance.LOW, group=_SECURITY,
            doc="JKS, PKCS12 or PEM (see elastic.https.ssl.truststore.type).")
    .define(SSL + "endpoint.identification.algorithm", Type.STRING, "https", importance=Importance.LOW,
            group=_SECURITY, doc="https: check that the cluster's certificate names the URL's host; empty: do not.")
    .define(SSL + "protocol", Type.STRING, "TLSv1.3", importance=Importance.LOW, group=_SECURITY,
            doc="Accepted, as for the runtime's Kafka clients: Python negotiates the newest version both sides "
                "speak, within elastic.https.ssl.enabled.protocols.")
    .define(SSL + "enabled.protocols", Type.STRING, None, importance=Importance.LOW, group=_SECURITY,
            doc="TLS versions allowed, comma separated (TLSv1.2, TLSv1.3); the lowest and highest listed bound "
                "the version. Unset: TLS 1.2 and newer.")
    .define(SSL + "cipher.suites", Type.STRING, None, importance=Importance.LOW, group=_SECURITY,
            doc="TLS 1.2 cipher suites by OpenSSL's names, comma separated (Java's names are not translated: a "
                "list OpenSSL does not know leaves its defaults, with a warning). Unset: OpenSSL's defaults.")
    .define(DATA_STREAM_TYPE, Type.STRING, "NONE", ValidString.in_("NONE", "LOGS", "METRICS", case_insensitive=True),
            importance=Importance.LOW, group=_DATA_STREAM,
            doc="LOGS or METRICS: write to the data stream <type>-<dataset>-<topic> with create actions (needs a "
                "matching index template with data streams enabled). NONE: write to the index named after the "
                "topic (lower-cased).")
    .define(DATA_STREAM_DATASET, Type.STRING, "", importance=Importance.LOW, group=_DATA_STREAM,
            doc="The dataset part of data stream names (needed with data.stream.type).")
    .define(DATA_STREAM_TIMESTAMP_FIELD, Type.LIST, "", importance=Importance.LOW, group=_DATA_STREAM,
            doc="Value fields copied into @timestamp (the first present one); empty: the record's timestamp.")
)


@dataclass(frozen=True)
class TlsSettings:
    """The sink's TLS keys as Kafka's ``ssl.*`` settings (see :mod:`connect_spark.connectors.search.tls`).

    Attributes:
        kafka: the settings :func:`~connect_spark.connectors.search.tls.search_ssl_context` reads; holds the
            passwords, so it is never shown.
        check_hostname: whether the cluster's certificate must name the URL's host.
    """

    kafka: Mapping[str, Any] = field(repr=False)
    check_hostname: bool = True


@dataclass(frozen=True)
class SearchSinkConfig:
    """The parsed keys of one search sink (see :data:`SEARCH_SINK_CONFIG_DEF` for each key's meaning)."""

    connector_name: str
    urls: tuple[str, ...]
    username: str | None
    password: str | None = field(repr=False)  # never shown
    engine: str
    batch_size: int
    bulk_size_bytes: int
    max_in_flight: int
    flush_timeout_ms: int
    max_retries: int
    retry_backoff_ms: int
    timeout_ms: int
    key_ignore: bool
    topic_key_ignore: frozenset[str]
    compact_map_entries: bool
    write_method: str
    behavior_on_null_values: str
    behavior_on_malformed: str
    drop_invalid_message: bool
    external_version_header: str
    tls: TlsSettings | None
    data_stream_type: str
    data_stream_dataset: str
    data_stream_timestamp_fields: tuple[str, ...]
    errors_retry_timeout_ms: int = 0

    def ignores_key(self, topic: str) -> bool:
        """True when documents of ``topic`` take topic+partition+offset ids."""
        return self.key_ignore or topic in self.topic_key_ignore

    def index_name(self, topic: str) -> str:
        """The index (or data stream) a record of ``topic`` goes to, as Confluent names it."""
        if self.data_stream_type != "none":
            return f"{self.data_stream_type}-{self.data_stream_dataset}-{topic.lower()}"
        return topic.lower()

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "SearchSinkConfig":
        """Parse and cross-check ``props``.

        Raises:
            ConfigValidationError: every problem, each naming its key and value.
        """
        values, issues = SEARCH_SINK_CONFIG_DEF.parse_with_issues(props)
        issues.extend(_cross_check(values))
        if issues:
            raise ConfigValidationError(issues)
        tls = None
        if values[SECURITY_PROTOCOL].upper() == "SSL" or any(u.startswith("https:") for u in values[CONNECTION_URL]):
            kafka = kafka_settings(values, frozenset(props))
            tls = TlsSettings(kafka, check_hostname=kafka.get("ssl.endpoint.identification.algorithm") != "")
        retry_timeout = str(props.get("errors.retry.timeout", 0))
        return cls(
            connector_name=str(props.get("name") or "search-sink"),
            urls=tuple(values[CONNECTION_URL]),
            username=values[CONNECTION_USERNAME],
            password=_secret(values[CONNECTION_PASSWORD]),
            engine=values[ENGINE].lower(),
            batch_size=values[BATCH_SIZE],
            bulk_size_bytes=values[BULK_SIZE_BYTES],
            max_in_flight=values[MAX_IN_FLIGHT],
            flush_timeout_ms=values[FLUSH_TIMEOUT_MS],
            max_retries=values[MAX_RETRIES],
            retry_backoff_ms=values[RETRY_BACKOFF_MS],
            timeout_ms=max(values[READ_TIMEOUT_MS], values[CONNECTION_TIMEOUT_MS]),
            key_ignore=values[KEY_IGNORE],
            topic_key_ignore=frozenset(values[TOPIC_KEY_IGNORE]),
            compact_map_entries=values[COMPACT_MAP_ENTRIES],
            write_method=values[WRITE_METHOD].lower(),
            behavior_on_null_values=values[BEHAVIOR_ON_NULL_VALUES].lower(),
            behavior_on_malformed=values[BEHAVIOR_ON_MALFORMED].lower(),
            drop_invalid_message=values[DROP_INVALID_MESSAGE],
            external_version_header=values[EXTERNAL_VERSION_HEADER],
            tls=tls,
            data_stream_type=values[DATA_STREAM_TYPE].lower(),
            data_stream_dataset=values[DATA_STREAM_DATASET],
            data_stream_timestamp_fields=tuple(values[DATA_STREAM_TIMESTAMP_FIELD]),
            errors_retry_timeout_ms=int(retry_timeout) if retry_timeout.lstrip("-").isdigit() else 0,
        )


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    return value.value if isinstance(value, Password) else str(value)


def _cross_check(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The rules that involve more than one key (only over keys that parsed)."""
    issues: list[ConfigIssue] = []
    stream = str(values.get(DATA_STREAM_TYPE, "NONE")).upper()
    dataset = values.get(DATA_STREAM_DATASET, "")
    if stream != "NONE" and not dataset:
        issues.append(ConfigIssue(DATA_STREAM_DATASET, dataset,
                                  f"Invalid value '' for configuration {DATA_STREAM_DATASET}: "
                                  f"{DATA_STREAM_TYPE}={stream} needs a dataset."))
    if stream != "NONE" and str(values.get(WRITE_METHOD, "")).lower() == "upsert":
        issues.append(ConfigIssue(WRITE_METHOD, "upsert",
                                  f"Invalid value upsert for configuration {WRITE_METHOD}: data streams only take "
                                  "new documents (insert)."))
    if str(values.get(SECURITY_PROTOCOL, "")).upper() == "SSL":
        plain = [u for u in values.get(CONNECTION_URL) or [] if not u.startswith("https:")]
        if plain:
            shown = without_embedded_secrets(",".join(plain))
            issues.append(ConfigIssue(CONNECTION_URL, shown,
                                      f"Invalid value {shown} for configuration {CONNECTION_URL}: "
                                      f"{SECURITY_PROTOCOL}=SSL needs https:// URLs."))
    key_location = values.get(KEY_LOCATION)
    if key_location and not values.get(SSL + "keystore.location"):
        issues.append(ConfigIssue(KEY_LOCATION, key_location,
                                  f"Invalid value {key_location} for configuration {KEY_LOCATION}: the certificate "
                                  f"chain goes in {SSL}keystore.location (a PEM file)."))
    return issues
