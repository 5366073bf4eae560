"""The S3 sink's configuration keys (Confluent's S3 sink connector's names and defaults), declared once.

``S3_SINK_CONFIG_DEF`` is what :meth:`S3SinkConnector.config` returns (the runtime validates every key
before Spark starts); :meth:`S3SinkConfig.parse` is called by the connector's and the task's ``start`` and
adds the checks that span several keys. Keys that only tune Confluent's Java client are accepted and
documented as having no effect, so a Confluent properties file runs unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from connect_spark.config.definition import (
    ConfigDef,
    ConfigIssue,
    ConfigValidationError,
    Importance,
    NonEmptyString,
    Range,
    Type,
    ValidString,
)

__all__ = ["S3_SINK_CONFIG_DEF", "S3SinkConfig", "FORMATS", "PARTITIONERS", "EXTRACTORS", "NO_EFFECT_KEYS",
           "WALL_CLOCK_SETTINGS"]

_FORMAT_PACKAGE = "io.confluent.connect.s3.format."
_PARTITIONER_PACKAGE = "io.confluent.connect.storage.partitioner."

#: format.class (Confluent's class name or its short name) → format id.
FORMATS = {
    f"{_FORMAT_PACKAGE}avro.AvroFormat": "avro", "AvroFormat": "avro",
    f"{_FORMAT_PACKAGE}json.JsonFormat": "json", "JsonFormat": "json",
    f"{_FORMAT_PACKAGE}parquet.ParquetFormat": "parquet", "ParquetFormat": "parquet",
    f"{_FORMAT_PACKAGE}bytearray.ByteArrayFormat": "bytearray", "ByteArrayFormat": "bytearray",
}

#: partitioner.class → partitioner id.
PARTITIONERS = {
    f"{_PARTITIONER_PACKAGE}DefaultPartitioner": "default", "DefaultPartitioner": "default",
    f"{_PARTITIONER_PACKAGE}FieldPartitioner": "field", "FieldPartitioner": "field",
    f"{_PARTITIONER_PACKAGE}TimeBasedPartitioner": "time", "TimeBasedPartitioner": "time",
    f"{_PARTITIONER_PACKAGE}HourlyPartitioner": "hourly", "HourlyPartitioner": "hourly",
    f"{_PARTITIONER_PACKAGE}DailyPartitioner": "daily", "DailyPartitioner": "daily",
}

#: timestamp.extractor → extractor id.
EXTRACTORS = {
    "Record": "record", f"{_PARTITIONER_PACKAGE}TimeBasedPartitioner$RecordTimestampExtractor": "record",
    "RecordField": "field", f"{_PARTITIONER_PACKAGE}TimeBasedPartitioner$RecordFieldTimestampExtractor": "field",
    "Wallclock": "wallclock", f"{_PARTITIONER_PACKAGE}TimeBasedPartitioner$WallclockTimestampExtractor": "wallclock",
}

#: Confluent's path.format / partition.duration.ms for its two fixed time partitioners.
FIXED_TIME_PARTITIONERS = {
    "hourly": ("'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", 3_600_000),
    "daily": ("'year'=YYYY/'month'=MM/'day'=dd", 86_400_000),
}

_PARQUET_CODECS = ("none", "snappy", "gzip", "lz4", "zstd", "brotli")
_AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")

#: Keys that only tune Confluent's Java S3 client or its Hive integration: accepted, no effect here.
NO_EFFECT_KEYS = (
    "storage.class", "schema.generator.class", "s3.ssea.name", "s3.sse.customer.key", "s3.sse.kms.key.id",
    "s3.acl.canned", "s3.wan.mode", "s3.http.send.expect.continue", "s3.proxy.url", "s3.proxy.user",
    "s3.proxy.password", "s3.credentials.provider.class", "s3.object.tagging", "s3.elastic.buffer.enable",
    "s3.elastic.buffer.init.capacity", "s3.compression.level", "s3.path.style.access.enabled",
    "hive.integration", "enhanced.avro.schema.support", "connect.meta.data", "avro.cache.size",
    "retry.backoff.ms", "s3.part.retries", "s3.retry.backoff.ms", "s3.ssl.protocol", "shutdown.timeout.ms",
    "s3.object.behavior.on.tagging.error", "format.class.config", "s3.send.digest",
)

#: The settings that make object names depend on the wall clock (never deterministic on re-delivery).
WALL_CLOCK_SETTINGS = ("rotate.schedule.interval.ms > 0", "timestamp.extractor=Wallclock with a time partitioner")

BUCKET = "s3.bucket.name"
REGION = "s3.region"
STORE_URL = "store.url"
TOPICS_DIR = "topics.dir"
DIRECTORY_DELIM = "directory.delim"
FILE_DELIM = "file.delim"
FLUSH_SIZE = "flush.size"
ROTATE_INTERVAL = "rotate.interval.ms"
ROTATE_SCHEDULE = "rotate.schedule.interval.ms"
FORMAT_CLASS = "format.class"
PARTITIONER_CLASS = "partitioner.class"
PATH_FORMAT = "path.format"
PARTITION_DURATION = "partition.duration.ms"
LOCALE = "locale"
TIMEZONE = "timezone"
TIMESTAMP_EXTRACTOR = "timestamp.extractor"
TIMESTAMP_FIELD = "timestamp.field"
PARTITION_FIELDS = "partition.field.name"
COMPRESSION = "s3.compression.type"
PARQUET_CODEC = "parquet.codec"
AVRO_CODEC = "avro.codec"
PART_SIZE = "s3.part.size"
NULL_VALUES = "behavior.on.null.values"
STORE_KEYS = "store.kafka.keys"
STORE_HEADERS = "store.kafka.headers"
KEYS_FORMAT = "keys.format.class"
HEADERS_FORMAT = "headers.format.class"
ZERO_PAD = "filename.offset.zero.pad.width"
SCHEMA_COMPATIBILITY = "schema.compatibility"
ACCESS_KEY = "aws.access.key.id"
SECRET_KEY = "aws.secret.access.key"
RETRIES = "s3.retry.max.attempts"
BYTEARRAY_EXTENSION = "format.bytearray.extension"
BYTEARRAY_SEPARATOR = "format.bytearray.separator"

_STORE = "Storage"
_LAYOUT = "Object names"
_FORMAT = "Object contents"
_AUTH = "Credentials"

_DEFAULT_PARTITIONER = f"{_PARTITIONER_PACKAGE}DefaultPartitioner"


def _define_keys() -> ConfigDef:
    definition = (
        ConfigDef()
        .define(BUCKET, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH, group=_STORE,
                doc="The bucket objects are written to (it must exist).")
        .define(REGION, Type.STRING, "us-west-2", importance=Importance.MEDIUM, group=_STORE,
                doc="The bucket's AWS region.")
        .define(STORE_URL, Type.STRING, None, importance=Importance.MEDIUM, group=_STORE,
                doc="The endpoint of an S3-compatible store (MinIO, Ceph, a local server), e.g. "
                    "http://127.0.0.1:9000; unset: AWS S3 in s3.region. Path-style addressing is used for it.")
        .define(PART_SIZE, Type.INT, 26_214_400, Range.between(5_242_880, 2_147_483_647), importance=Importance.LOW,
                group=_STORE, doc="Objects larger than this are uploaded in parts of this size (multipart "
                                  "upload, completed only when every part is in: no torn object is ever visible).")
        .define(RETRIES, Type.INT, 10, Range.at_least(1), importance=Importance.LOW, group=_STORE,
                doc="connect_spark only: attempts per S3 request, with exponential back-off, on throttling, "
                    "5xx and connection errors (botocore's standard retry mode).")
        .define(ACCESS_KEY, Type.STRING, "", importance=Importance.HIGH, group=_AUTH,
                doc="The access key id; empty: the standard AWS credential chain (environment, profile, "
                    "instance or container role).")
        .define(SECRET_KEY, Type.PASSWORD, "", importance=Importance.HIGH, group=_AUTH,
                doc="The secret access key (masked in logs, status and REST output).")
        .define(TOPICS_DIR, Type.STRING, "topics", importance=Importance.HIGH, group=_LAYOUT,
                doc="The top-level folder of every object name.")
        .define(DIRECTORY_DELIM, Type.STRING, "/", NonEmptyString(), importance=Importance.LOW, group=_LAYOUT,
                doc="The delimiter between the parts of an object's folder.")
        .define(FILE_DELIM, Type.STRING, "+", NonEmptyString(), importance=Importance.LOW, group=_LAYOUT,
                doc="The delimiter between topic, Kafka partition and start offset in an object's file name.")
        .define(ZERO_PAD, Type.INT, 10, Range.at_least(0), importance=Importance.LOW, group=_LAYOUT,
                doc="The start offset in a file name is zero-padded to this many digits.")
        .define(FLUSH_SIZE, Type.INT, validator=Range.at_least(1), importance=Importance.HIGH, group=_LAYOUT,
                doc="A Kafka partition's open objects are uploaded once it has this many records in them.")
        .define(ROTATE_INTERVAL, Type.LONG, -1, Range.at_least(-1), importance=Importance.HIGH, group=_LAYOUT,
                doc="With a time-based partitioner: upload a Kafka partition's open objects when a record's "
                    "timestamp (from timestamp.extractor) is this many ms or more after the first one's, or "
                    "when a record falls in another time partition (-1: off). Ignored by other partitioners.")
        .define(ROTATE_SCHEDULE, Type.LONG, -1, Range.at_least(-1), importance=Importance.MEDIUM, group=_LAYOUT,
                doc="Upload open objects on a wall-clock schedule of this many ms (-1: off). Not deterministic: "
                    "a crash may leave an object that the re-delivered records do not recreate exactly.")
        .define(PARTITIONER_CLASS, Type.STRING, _DEFAULT_PARTITIONER, ValidString.in_(*PARTITIONERS),
                importance=Importance.HIGH, group=_LAYOUT,
                doc="How records map to folders: DefaultPartitioner (partition=<kafka partition>), "
                    "FieldPartitioner (<field>=<value> per partition.field.name), TimeBasedPartitioner "
                    "(path.format of the record's time bucket), HourlyPartitioner, DailyPartitioner.")
        .define(PARTITION_FIELDS, Type.LIST, "", importance=Importance.MEDIUM, group=_LAYOUT,
                doc="FieldPartitioner: the value fields forming the folder, in order.")
        .define(PATH_FORMAT, Type.STRING, "", importance=Importance.MEDIUM, group=_LAYOUT,
                doc="TimeBasedPartitioner: a Joda-Time pattern of the folder, e.g. "
                    "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH.")
        .define(PARTITION_DURATION, Type.LONG, -1, Range.at_least(-1), importance=Importance.MEDIUM,
                group=_LAYOUT, doc="TimeBasedPartitioner: the width of a time bucket in ms.")
        .define(LOCALE, Type.STRING, "", importance=Importance.LOW, group=_LAYOUT,
                doc="Time partitioners: the locale of path.format (required as in Confluent's connector; "
                    "the numeric patterns it supports do not depend on it).")
        .define(TIMEZONE, Type.STRING, "", importance=Importance.MEDIUM, group=_LAYOUT,
                doc="Time partitioners: the time zone the buckets are formatted in (an IANA name or UTC).")
        .define(TIMESTAMP_EXTRACTOR, Type.STRING, "Wallclock", ValidString.in_(*EXTRACTORS),
                importance=Importance.MEDIUM, group=_LAYOUT,
                doc="Time partitioners: Record (the Kafka timestamp), RecordField (timestamp.field of the "
                    "value) or Wallclock (the time of writing: not deterministic).")
        .define(TIMESTAMP_FIELD, Type.STRING, "timestamp", importance=Importance.LOW, group=_LAYOUT,
                doc="RecordField: the value field holding the time (a Timestamp, epoch ms, or an ISO-8601 "
                    "string); dotted names reach nested fields.")
        .define(FORMAT_CLASS, Type.STRING, validator=ValidString.in_(*FORMATS), importance=Importance.HIGH,
                group=_FORMAT, doc="AvroFormat (.avro, the Connect schema mapped as Confluent's AvroData does), "
                                   "JsonFormat (.json, one JSON value per line), ParquetFormat (.parquet), "
                                   "ByteArrayFormat (.bin, the raw value bytes and a separator).")
        .define(COMPRESSION, Type.STRING, "none", ValidString.in_("none", "gzip"), importance=Importance.LOW,
                group=_FORMAT, doc="JSON and ByteArray objects: gzip adds .gz to the name.")
        .define(PARQUET_CODEC, Type.STRING, "snappy", ValidString.in_(*_PARQUET_CODECS), importance=Importance.LOW,
                group=_FORMAT, doc="Parquet compression; it names the extension as in Confluent's connector "
                                   "(.snappy.parquet, .gz.parquet, .zstd.parquet, ...).")
        .define(AVRO_CODEC, Type.STRING, "null", ValidString.in_(*_AVRO_CODECS), importance=Importance.LOW,
                group=_FORMAT, doc="Avro container compression.")
        .define(BYTEARRAY_EXTENSION, Type.STRING, ".bin", importance=Importance.LOW, group=_FORMAT,
                doc="ByteArrayFormat: the object extension.")
        .define(BYTEARRAY_SEPARATOR, Type.STRING, None, importance=Importance.LOW, group=_FORMAT,
                doc="ByteArrayFormat: written after each value (unset: a line feed).")
        .define(NULL_VALUES, Type.STRING, "fail", ValidString.in_("fail", "ignore", case_insensitive=True),
                importance=Importance.LOW, group=_FORMAT,
                doc="A tombstone (null value): fail the task, or ignore (skip) it.")
        .define(SCHEMA_COMPATIBILITY, Type.STRING, "NONE",
                ValidString.in_("NONE", "BACKWARD", "FORWARD", "FULL", case_insensitive=True),
                importance=Importance.LOW, group=_FORMAT,
                doc="A change of the value schema uploads the open objects and starts new ones. NONE: on any "
                    "change. BACKWARD/FORWARD/FULL: on a change to a newer schema version (records are not "
                    "projected to the newer schema; an older version also starts new objects).")
        .define(STORE_KEYS, Type.BOOLEAN, False, importance=Importance.LOW, group=_FORMAT,
                doc="Also write each object's record keys, in keys.format.class, to an object of the same name "
                    "with .keys before the extension (uploaded before the values' object). A null key goes "
                    "where errors.* says.")
        .define(STORE_HEADERS, Type.BOOLEAN, False, importance=Importance.LOW, group=_FORMAT,
                doc="Not supported yet: true is refused.")
        .define(KEYS_FORMAT, Type.STRING, f"{_FORMAT_PACKAGE}avro.AvroFormat", ValidString.in_(*FORMATS),
                importance=Importance.LOW, group=_FORMAT, doc="With store.kafka.keys: the keys' format.")
        .define(HEADERS_FORMAT, Type.STRING, None, importance=Importance.LOW, group=_FORMAT,
                doc="With store.kafka.headers (not supported yet): accepted, no effect.")
    )
    for key in NO_EFFECT_KEYS:
        key_type = Type.PASSWORD if ("password" in key or key.endswith(".key")) else Type.STRING
        definition.define(key, key_type, None, importance=Importance.LOW, group="Accepted, no effect",
                          doc="Tunes Confluent's Java client or Hive integration: accepted so Confluent's "
                              "properties run unchanged, no effect here.")
    return definition


S3_SINK_CONFIG_DEF = _define_keys()


@dataclass(frozen=True)
class S3SinkConfig:
    """The parsed keys of one S3 sink (see :data:`S3_SINK_CONFIG_DEF` for each key's meaning)."""

    connector_name: str
    bucket: str
    region: str
    store_url: str | None
    access_key: str
    secret_key: str = field(repr=False)
    part_size: int
    max_attempts: int
    topics_dir: str
    directory_delim: str
    file_delim: str
    zero_pad: int
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_ms: int
    partitioner: str
    partition_fields: tuple[str, ...]
    path_format: str
    partition_duration_ms: int
    timezone: str
    extractor: str
    timestamp_field: str
    format: str
    compression: str
    parquet_codec: str
    avro_codec: str
    bytearray_extension: str
    bytearray_separator: str
    ignore_nulls: bool
    schema_compatibility: str
    store_keys: bool = False
    keys_format: str = "avro"

    @property
    def time_based(self) -> bool:
        return self.partitioner in ("time", "hourly", "daily")

    @property
    def wall_clock_settings(self) -> list[str]:
        """The settings in use that make object names depend on the wall clock (warned about at start)."""
        found = []
        if self.rotate_schedule_ms > 0:
            found.append(f"{ROTATE_SCHEDULE}={self.rotate_schedule_ms}")
        if self.time_based and self.extractor == "wallclock":
            found.append(f"{TIMESTAMP_EXTRACTOR}=Wallclock")
        return found

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> "S3SinkConfig":
        """Parse and cross-check ``props``.

        Raises:
            ConfigValidationError: every problem, each naming its key and value.
        """
        values, issues = S3_SINK_CONFIG_DEF.parse_with_issues(props)
        issues.extend(_cross_check(values))
        if issues:
            raise ConfigValidationError(issues)
        partitioner = PARTITIONERS[values[PARTITIONER_CLASS]]
        path_format, duration = values[PATH_FORMAT], values[PARTITION_DURATION]
        if partitioner in FIXED_TIME_PARTITIONERS:
            path_format, duration = FIXED_TIME_PARTITIONERS[partitioner]
        secret = values[SECRET_KEY]
        separator = values[BYTEARRAY_SEPARATOR]
        return cls(
            connector_name=str(props.get("name") or "s3-sink"),
            bucket=values[BUCKET], region=values[REGION], store_url=values[STORE_URL] or None,
            access_key=values[ACCESS_KEY], secret_key=secret.value if secret else "",
            part_size=values[PART_SIZE], max_attempts=values[RETRIES],
            topics_dir=values[TOPICS_DIR], directory_delim=values[DIRECTORY_DELIM], file_delim=values[FILE_DELIM],
            zero_pad=values[ZERO_PAD], flush_size=values[FLUSH_SIZE], rotate_interval_ms=values[ROTATE_INTERVAL],
            rotate_schedule_ms=values[ROTATE_SCHEDULE], partitioner=partitioner,
            partition_fields=tuple(values[PARTITION_FIELDS]), path_format=path_format,
            partition_duration_ms=duration, timezone=values[TIMEZONE] or "UTC",
            extractor=EXTRACTORS[values[TIMESTAMP_EXTRACTOR]], timestamp_field=values[TIMESTAMP_FIELD],
            format=FORMATS[values[FORMAT_CLASS]], compression=values[COMPRESSION],
            parquet_codec=values[PARQUET_CODEC], avro_codec=values[AVRO_CODEC],
            bytearray_extension=values[BYTEARRAY_EXTENSION],
            bytearray_separator="\n" if separator is None else separator.encode().decode("unicode_escape"),
            ignore_nulls=values[NULL_VALUES].lower() == "ignore",
            schema_compatibility=values[SCHEMA_COMPATIBILITY].upper(),
            store_keys=values[STORE_KEYS], keys_format=FORMATS[values[KEYS_FORMAT]],
        )


def _cross_check(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The rules that involve more than one key (only over keys that parsed)."""
    issues: list[ConfigIssue] = []
    partitioner = PARTITIONERS.get(values.get(PARTITIONER_CLASS, ""))
    if partitioner == "field" and not values.get(PARTITION_FIELDS):
        issues.append(ConfigIssue(PARTITION_FIELDS, "", f"Invalid value \"\" for configuration {PARTITION_FIELDS}: "
                                                        "FieldPartitioner needs the fields to partition by."))
    if partitioner == "time":
        if not values.get(PATH_FORMAT):
            issues.append(ConfigIssue(PATH_FORMAT, "", f"Invalid value \"\" for configuration {PATH_FORMAT}: "
                                                       "TimeBasedPartitioner needs a path format."))
        if values.get(PARTITION_DURATION, 0) <= 0:
            issues.append(ConfigIssue(PARTITION_DURATION, values.get(PARTITION_DURATION),
                                      f"Invalid value for configuration {PARTITION_DURATION}: "
                                      "TimeBasedPartitioner needs a bucket width in ms (> 0)."))
    if partitioner in ("time", "hourly", "daily"):
        if not values.get(LOCALE):
            issues.append(ConfigIssue(LOCALE, "", f"Invalid value \"\" for configuration {LOCALE}: time "
                                                  "partitioners need a locale (e.g. en-US), as in Confluent's."))
        if not values.get(TIMEZONE):
            issues.append(ConfigIssue(TIMEZONE, "", f"Invalid value \"\" for configuration {TIMEZONE}: time "
                                                    "partitioners need a time zone (e.g. UTC)."))
        else:
            try:
                import zoneinfo

                zoneinfo.ZoneInfo(values[TIMEZONE])
            except Exception:
                issues.append(ConfigIssue(TIMEZONE, values[TIMEZONE],
                                          f"Invalid value {values[TIMEZONE]} for configuration {TIMEZONE}: "
                                          "not a time zone name known to the IANA database."))
    if values.get(STORE_HEADERS):
        issues.append(ConfigIssue(STORE_HEADERS, True, f"Invalid value true for configuration {STORE_HEADERS}: "
                                                       "storing Kafka headers beside the values is not supported yet."))
    return issues
