"""What Confluent's schema-registry converters share: their keys, the wire format, the registry lookups.

Used by :class:`~connect_spark.converters.avro.AvroConverter` and
:class:`~connect_spark.converters.json_schema.JsonSchemaConverter` (and the vectorized Avro step), never
by users directly.

The wire format (Confluent's): byte 0 is the magic byte ``0``, bytes 1-4 the writer schema's id in the
registry (big-endian), the rest the payload in that schema. A writer schema is fetched by id once and
kept (``schemas.cache.config`` entries); so is the version it has under the record's subject (the
Connect schema's version, as Confluent's deserializer sets it).

How registry failures reach the runtime:

* the id is unknown to the registry (HTTP 404): :class:`DataException`, a bad record (``errors.*``
  decides, the dead letter queue gets its original bytes);
* the registry cannot be reached, times out, answers 5xx/429, or refuses the credentials:
  :class:`UnavailableException`, retried under ``errors.retry.timeout`` and, when that runs out, the
  task fails; the record is never skipped nor sent to the dead letter queue for it.

The HTTP client is confluent-kafka's ``SchemaRegistryClient`` (several URLs with fail over, basic
authentication, TLS). It is built on first use in the process that converts, so a converter pickled to a
Spark executor carries its settings, not a connection.
"""

from __future__ import annotations

import logging
import re
import struct
import threading
from typing import Any, Callable, Mapping

from connect_spark.api.errors import ConfigException, DataException, UnavailableException
from connect_spark.config.definition import ConfigDef, Importance, Password, Type, ValidString

__all__ = [
    "MAGIC_BYTE",
    "WIRE_HEADER_SIZE",
    "registry_config_def",
    "split_wire_format",
    "RegistrySettings",
    "SchemaRegistryLookup",
]

log = logging.getLogger(__name__)

MAGIC_BYTE = 0
WIRE_HEADER_SIZE = 5
_HEADER = struct.Struct(">bI")

URL_CONFIG = "schema.registry.url"
CREDENTIALS_SOURCE_CONFIG = "basic.auth.credentials.source"
USER_INFO_CONFIG = "basic.auth.user.info"
LEGACY_USER_INFO_CONFIG = "schema.registry.basic.auth.user.info"
CACHE_CONFIG = "schemas.cache.config"
KEY_STRATEGY_CONFIG = "key.subject.name.strategy"
VALUE_STRATEGY_CONFIG = "value.subject.name.strategy"
TIMEOUT_CONFIG = "schema.registry.request.timeout.ms"
SSL_PREFIX = "schema.registry.ssl."

_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")

#: Keys of Confluent's serializers that only matter when writing: accepted and ignored when reading.
SERIALIZER_ONLY_KEYS = (
    "auto.register.schemas",
    "use.latest.version",
    "use.schema.id",
    "latest.compatibility.strict",
    "normalize.schemas",
    "avro.remove.java.properties",
    "avro.reflection.allow.null",
    "avro.use.logical.type.converters",
    "json.fail.invalid.schema",
    "json.write.dates.iso8601",
    "json.oneof.for.nullables",
    "json.fail.unknown.properties",
    "context.name.strategy",
    "id.compatibility.strict",
    "latest.cache.size",
    "latest.cache.ttl.sec",
)


def _valid_urls(name: str, value: Any) -> None:
    if value is None:
        return
    urls = [u.strip() for u in value] if isinstance(value, list) else [str(value)]
    if not urls or not all(urls):
        raise ConfigException("Give one or more registry URLs, comma-separated", name, value)
    for url in urls:
        if not (url.startswith("http://") or url.startswith("https://")):
            raise ConfigException("Each registry URL must start with http:// or https://", name, value)


def _valid_strategy(name: str, value: Any) -> None:
    short = str(value).rpartition(".")[2]
    if short not in _STRATEGIES:
        raise ConfigException(
            f"Unknown subject name strategy; use one of {', '.join(_STRATEGY_PACKAGE + s for s in _STRATEGIES)}",
            name, value)


def registry_config_def(config: ConfigDef) -> ConfigDef:
    """Add the registry keys of Confluent's ``AbstractKafkaSchemaSerDeConfig`` to ``config``."""
    (config
     .define(URL_CONFIG, Type.LIST, None, validator=_valid_urls, importance=Importance.HIGH, group="Schema Registry",
             doc="Comma-separated URLs of the schema registry (Confluent's API). When one cannot be reached the "
                 "next is tried. Required.")
     .define(CREDENTIALS_SOURCE_CONFIG, Type.STRING, "URL",
             validator=ValidString.in_("URL", "USER_INFO", case_insensitive=True),
             importance=Importance.MEDIUM, group="Schema Registry",
             doc="Where the HTTP basic credentials come from: URL (user:password@ in the URL) or USER_INFO "
                 "(basic.auth.user.info). SASL_INHERIT is not supported.")
     .define(USER_INFO_CONFIG, Type.PASSWORD, None, importance=Importance.MEDIUM, group="Schema Registry",
             doc="user:password for HTTP basic authentication when basic.auth.credentials.source=USER_INFO. "
                 "A secret: never shown in logs, status or the REST API.")
     .define(LEGACY_USER_INFO_CONFIG, Type.PASSWORD, None, importance=Importance.LOW, group="Schema Registry",
             doc="Older name of basic.auth.user.info (used when that one is not set).")
     .define(CACHE_CONFIG, Type.INT, 1000, importance=Importance.LOW, group="Schema Registry",
             doc="How many writer schemas (and Connect schemas built from them) are kept in memory.")
     .define(KEY_STRATEGY_CONFIG, Type.STRING, _STRATEGY_PACKAGE + "TopicNameStrategy", validator=_valid_strategy,
             importance=Importance.LOW, group="Schema Registry",
             doc="How the subject of a key schema is named (TopicNameStrategy: <topic>-key); the Connect "
                 "schema's version is the writer schema's version under that subject.")
     .define(VALUE_STRATEGY_CONFIG, Type.STRING, _STRATEGY_PACKAGE + "TopicNameStrategy", validator=_valid_strategy,
             importance=Importance.LOW, group="Schema Registry",
             doc="How the subject of a value schema is named (TopicNameStrategy: <topic>-value, "
                 "RecordNameStrategy: <record full name>, TopicRecordNameStrategy: <topic>-<record full name>).")
     .define(TIMEOUT_CONFIG, Type.INT, 10000, importance=Importance.LOW, group="Schema Registry",
             doc="How long one HTTP request to the registry may take, in milliseconds.")
     .define(SSL_PREFIX + "truststore.location", Type.STRING, None, importance=Importance.LOW, group="Schema Registry",
             doc="CA certificates (PEM file) that verify the registry's certificate; the truststore type must be "
                 "PEM. Not set: the system's CAs.")
     .define(SSL_PREFIX + "truststore.type", Type.STRING, "PEM", validator=ValidString.in_("PEM", case_insensitive=True),
             importance=Importance.LOW, group="Schema Registry",
             doc="Only PEM files are read (convert a JKS or PKCS12 store with keytool/openssl).")
     .define(SSL_PREFIX + "keystore.location", Type.STRING, None, importance=Importance.LOW, group="Schema Registry",
             doc="Client certificate chain (PEM file) for mutual TLS; the key may be in the same file.")
     .define(SSL_PREFIX + "keystore.type", Type.STRING, "PEM", validator=ValidString.in_("PEM", case_insensitive=True),
             importance=Importance.LOW, group="Schema Registry", doc="Only PEM files are read.")
     .define(SSL_PREFIX + "key.location", Type.STRING, None, importance=Importance.LOW, group="Schema Registry",
             doc="Client private key (PEM file), when it is not in the keystore file.")
     .define(SSL_PREFIX + "key.password", Type.PASSWORD, None, importance=Importance.LOW, group="Schema Registry",
             doc="Password of the client private key. A secret.")
     .define(SSL_PREFIX + "endpoint.identification.algorithm", Type.STRING, "https",
             validator=ValidString.in_("https", "", case_insensitive=True), importance=Importance.LOW,
             group="Schema Registry", doc="https checks the registry's host name against its certificate; empty "
                                          "turns verification of the certificate off."))
    for key in SERIALIZER_ONLY_KEYS:
        config.define(key, Type.STRING, None, importance=Importance.LOW, group="Serializer only",
                      doc="Only used by Confluent's serializers when writing; accepted and ignored when reading.")
    return config


def split_wire_format(data: bytes) -> tuple[int, memoryview]:
    """``(schema id, payload)`` of a record in Confluent's wire format.

    Raises:
        DataException: the bytes are shorter than the 5-byte header or do not start with magic byte 0.
    """
    if len(data) < WIRE_HEADER_SIZE:
        raise DataException(f"Unknown magic byte! (the record has {len(data)} bytes, fewer than the 5-byte header)")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC_BYTE:
        raise DataException(f"Unknown magic byte! (got {magic}, expected {MAGIC_BYTE})")
    return schema_id, memoryview(data)[WIRE_HEADER_SIZE:]


class RegistrySettings:
    """The parsed registry keys, enough to build a client anywhere (picklable: no connection)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        urls = values.get(URL_CONFIG)
        if not urls:
            raise ConfigException("Missing required configuration; set it to the registry's URL(s)", URL_CONFIG, None)
        self.urls = [u.strip().rstrip("/") for u in urls]
        self.cache_size = values.get(CACHE_CONFIG, 1000)
        self.key_strategy = str(values.get(KEY_STRATEGY_CONFIG) or "TopicNameStrategy").rpartition(".")[2]
        self.value_strategy = str(values.get(VALUE_STRATEGY_CONFIG) or "TopicNameStrategy").rpartition(".")[2]
        self.timeout_s = values.get(TIMEOUT_CONFIG, 10000) / 1000.0
        source = str(values.get(CREDENTIALS_SOURCE_CONFIG) or "URL").upper()
        user_info = values.get(USER_INFO_CONFIG) or values.get(LEGACY_USER_INFO_CONFIG)
        self._user_info: Password | None = None
        if source == "USER_INFO":
            if user_info is None:
                raise ConfigException("basic.auth.credentials.source=USER_INFO needs basic.auth.user.info "
                                      "(user:password)", USER_INFO_CONFIG, None)
            if ":" not in user_info.value:
                raise ConfigException("Expected user:password", USER_INFO_CONFIG, user_info)
            self._user_info = user_info
        self.ssl: dict[str, Any] = {
            "ca": values.get(SSL_PREFIX + "truststore.location"),
            "certificate": values.get(SSL_PREFIX + "keystore.location"),
            "key": values.get(SSL_PREFIX + "key.location"),
            "key_password": values.get(SSL_PREFIX + "key.password"),
            "verify": str(values.get(SSL_PREFIX + "endpoint.identification.algorithm", "https")).lower() == "https",
        }

    def client_config(self) -> dict[str, Any]:
        """The configuration of confluent-kafka's ``SchemaRegistryClient`` (holds the secret: never log it)."""
        config: dict[str, Any] = {
            "url": ",".join(self.urls),
            "timeout": self.timeout_s,
            "cache.capacity": self.cache_size,
            "max.retries": 2,
            "retries.wait.ms": 200,
            "retries.max.wait.ms": 2000,
        }
        if self._user_info is not None:
            config["basic.auth.user.info"] = self._user_info.value
        if not self.ssl["verify"]:
            config["ssl.ca.location"] = False
        elif self.ssl["ca"]:
            config["ssl.ca.location"] = self.ssl["ca"]
        if self.ssl["certificate"]:
            config["ssl.certificate.location"] = self.ssl["certificate"]
        if self.ssl["key"]:
            config["ssl.key.location"] = self.ssl["key"]
        if self.ssl["key_password"] is not None:
            config["ssl.key.password"] = self.ssl["key_password"].value
        return config

    def subject(self, topic: str, is_key: bool, record_name: str | None) -> str:
        """The subject a schema of ``topic`` is registered under, by the configured naming strategy."""
        strategy = self.key_strategy if is_key else self.value_strategy
        if strategy == "TopicNameStrategy" or record_name is None:
            return f"{topic}-{'key' if is_key else 'value'}"
        if strategy == "RecordNameStrategy":
            return record_name
        return f"{topic}-{record_name}"

    @property
    def shown_urls(self) -> str:
        """The URLs for messages and logs, credentials in them (``user:password@``) hidden."""
        return ", ".join(re.sub(r"//[^/@]*@", "//[hidden]@", url) for url in self.urls)

    def __repr__(self) -> str:
        return f"RegistrySettings(urls={self.shown_urls})"


class SchemaRegistryLookup:
    """Writer schemas by id and their versions by subject, each fetched once and cached.

    Thread-safe. The client is built on first use in the current process (and again after unpickling).

    Args:
        settings: the parsed registry keys.
        schema_type: ``AVRO`` or ``JSON``: a writer schema of another type is a bad record.
    """

    def __init__(self, settings: RegistrySettings, schema_type: str) -> None:
        self.settings = settings
        self.schema_type = schema_type
        self._client: Any = None
        self._schemas: dict[int, str] = {}
        self._versions: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "schema_type": self.schema_type}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"], state["schema_type"])  # type: ignore[misc]

    def _registry(self) -> Any:
        if self._client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            try:
                self._client = SchemaRegistryClient(self.settings.client_config())
            except (ValueError, TypeError) as e:
                raise ConfigException(f"Cannot configure the schema registry client: {e}", URL_CONFIG,
                                      self.settings.shown_urls) from None
        return self._client

    def schema_text(self, schema_id: int) -> str:
        """The writer schema registered under ``schema_id``, as its JSON text.

        Raises:
            DataException: the registry does not know the id, or the schema is of another type.
            UnavailableException: the registry could not be asked.
        """
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        schema = self._call(lambda: self._registry().get_schema(schema_id), f"schema id {schema_id}")
        schema_type = (schema.schema_type or "AVRO").upper()
        if schema_type != self.schema_type:
            raise DataException(f"Schema id {schema_id} is a {schema_type} schema, not {self.schema_type}")
        with self._lock:
            if len(self._schemas) >= self.settings.cache_size:
                self._schemas.pop(next(iter(self._schemas)))
            self._schemas[schema_id] = schema.schema_str
        return schema.schema_str

    def version(self, subject: str, schema_id: int) -> int:
        """The version of writer schema ``schema_id`` under ``subject`` (Confluent's deserializer's lookup).

        Raises:
            DataException: the schema is not registered under that subject.
            UnavailableException: the registry could not be asked.
        """
        key = (subject, schema_id)
        cached = self._versions.get(key)
        if cached is not None:
            return cached
        from confluent_kafka.schema_registry import Schema

        text = self.schema_text(schema_id)
        registered = self._call(lambda: self._registry().lookup_schema(subject, Schema(text, self.schema_type)),
                                f"the version of schema id {schema_id} under subject {subject}")
        with self._lock:
            if len(self._versions) >= self.settings.cache_size:
                self._versions.pop(next(iter(self._versions)))
            self._versions[key] = registered.version
        return registered.version

    def _call(self, request: Callable[[], Any], what: str) -> Any:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return request()
        except SchemaRegistryError as e:
            status = e.http_status_code
            if status == 404:
                raise DataException(f"Error retrieving {what}: not found in the schema registry "
                                    f"(error code {e.error_code})") from None
            if status in (401, 403):
                raise UnavailableException(
                    f"The schema registry refused the request for {what} (HTTP {status}): check "
                    "basic.auth.credentials.source and basic.auth.user.info") from None
            if status == 429 or status >= 500 or status < 0:
                raise UnavailableException(f"The schema registry failed the request for {what}: {e}") from None
            raise DataException(f"Error retrieving {what}: {e}") from None
        except (DataException, ConfigException):
            raise
        except Exception as e:  # connection refused, timeouts, TLS: httpx's transport errors and OSError
            raise UnavailableException(
                f"The schema registry at {self.settings.shown_urls} could not be reached for {what}: "
                f"{type(e).__name__}: {e}") from None
