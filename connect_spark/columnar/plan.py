"""Compile a connector's converters and transforms to Spark column expressions.

Called by the connector runner: :func:`compile_plan` once when the connector starts (``None``, with
the reason logged, means "use the per-record path for everything"), then :meth:`ColumnarPlan.apply`
once per micro-batch on the raw Kafka DataFrame (columns of
:data:`~connect_spark.streaming.raw_batch.RAW_COLUMNS`).

:meth:`ColumnarPlan.apply` splits the batch in two, and every raw row lands in exactly one part
unless a ``Filter`` dropped it:

* ``good`` — a record frame (``RECORD_FRAME_COLUMNS``) of rows the plan *proved* the per-record path
  would convert without error and to the same values. It is built from column expressions only.
* ``fallback`` — raw rows (``RAW_COLUMNS``) the plan could not prove convertible: bytes that are not
  UTF-8, JSON that does not parse or re-serialize identically, a JSON schema that differs from the
  batch's, a null in a required field, a timestamp below -1, ... The runtime sends them through
  :class:`~connect_spark.runtime.conversion.sink_records.RecordConverter`, which applies ``errors.*`` (tolerance,
  DLQ) exactly as Kafka Connect.

Consumed offsets are *not* part of the output: the runtime computes them from the raw batch
(:func:`consumed_offsets`, ``max(offset) + 1`` per topic-partition), which covers rows dropped by a
``Filter`` as well as good and fallback rows.

Data-dependent pieces (a JsonConverter's shape or schema, an Avro writer schema) are learned from a
sample: rows the caller read itself (``apply(raw, sample)``, the runtime's driver-side read of the batch's
head) or else the batch's first ``SAMPLE_ROWS`` rows (one small job each). What was learned, and the
projection built from it, is reused by the next batches until :meth:`ColumnarPlan.forget_samples`; rows
that differ fall back. Every JSON value is
parsed once per row: the split projection carries a nondeterministic column the filters read, so
Spark cannot re-inline the parse into them. Callers should persist the raw batch first when it is
read more than once (good and fallback each read it). Only the Spark entry point is implemented (no ``apply_arrow``).

Coverage: key/value converters ByteArrayConverter, StringConverter (UTF-8), JsonConverter (with and
without ``schemas.enable``, :mod:`~connect_spark.columnar.json_columns`), Confluent's AvroConverter (:mod:`~connect_spark.columnar.avro`); header converters of any kind (headers stay raw in a frame); transforms
RegexRouter, DropHeaders, Filter, TimestampRouter, InsertHeader (with SimpleHeaderConverter), ValueToKey
and, as $Key and $Value, ReplaceField, InsertField, MaskField, Cast, ExtractField, HoistField, Flatten,
SetSchemaMetadata and TimestampConverter (numeric formats only; see
:mod:`~connect_spark.columnar.transforms`), with the predicates TopicNameMatches, HasHeaderKey and
RecordIsTombstone (negated or not). Anything else (HeaderFrom, custom plugins) makes
:func:`compile_plan` return ``None``. Converters and transforms work on Connect encodings; Debezium's semantic
types are typed last (:mod:`~connect_spark.columnar.semantic_columns`), as the per-record path types them when
it builds a frame.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from connect_spark import plugins
from connect_spark.api.converters import HeaderConverter
from connect_spark.api.data import Schema
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.columnar import variant_schema
from connect_spark.columnar.column_converter import ColumnConverter, Part
from connect_spark.columnar.json_columns import EnvelopeJson, SchemalessJson
from connect_spark.columnar.records import frame_to_records
from connect_spark.columnar.reused_columns import reused_columns
from connect_spark.columnar.semantic_columns import typed_record
from connect_spark.columnar.transforms import TransformStep, transform_step
from connect_spark.converters.avro import AvroConverter
from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.string import StringConverter
from connect_spark.streaming.raw_batch import RAW_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["ColumnarPlan", "PlanOutput", "NEEDS_RECORD_PATH", "FRAME_DATA_COLUMNS", "CACHE_COMPRESSION", "StagedCounts", "NotVectorizable", "SPLIT_FRAME_COLUMNS", "compile_plan", "consumed_offsets", "batch_offset_ranges"]

log = logging.getLogger(__name__)

#: Spark's setting for compressing cached columns, read when a DataFrame is persisted.
CACHE_COMPRESSION = "spark.sql.inMemoryColumnarStorage.compressed"

#: Held while :meth:`PlanOutput.persisted` has the setting switched off: connectors sharing a session
#: persist from their own query threads, and one must not read (and later put back) another's "false".
_CACHE_SETTING_LOCK = threading.Lock()

_OK = "__columnar_ok"
_KEEP = "__columnar_keep"
_BARRIER = "__columnar_barrier"
#: Raw columns a staged row always keeps; the others (bytes) only matter when the row falls back.
_COORDINATES = ("topic", "partition", "offset", "timestamp_ms", "timestamp_type")


_SPLIT_NAMES = ("topic", "partition", "timestamp", "timestamp_type", "key", "value", "headers")
#: The converted columns of :meth:`PlanOutput.split`: ``frame_<name>`` holds the record frame's ``<name>``.
SPLIT_FRAME_COLUMNS = tuple(f"frame_{n}" for n in _SPLIT_NAMES)

NotVectorizable = variant_schema.NotVectorizable

#: In the message of the Spark error :attr:`PlanOutput.guarded` raises for a row that needs the per-record path.
NEEDS_RECORD_PATH = "connect_spark: row needs the per-record conversion path"


# --- the record as columns ---------------------------------------------------------------------


@dataclass(frozen=True)
class RecordColumns:
    """Every column of the record frame under construction, plus the row's ok / keep conditions."""

    topic: "Column"
    partition: "Column"
    key: Part
    value: Part
    headers: "Column"
    ok: "Column"
    keep: "Column"
    #: ``(column name, expression)`` a transform wants computed once per row before the record's columns
    hoisted: tuple[tuple[str, "Column"], ...] = ()

    def require(self, condition: "Column") -> "RecordColumns":
        """Rows where ``condition`` is not true go to the fallback."""
        from pyspark.sql import functions as F

        return replace(self, ok=self.ok & F.coalesce(condition, F.lit(False)))

    def hoist(self, name: str, expression: "Column") -> tuple["RecordColumns", "Column"]:
        """``expression`` computed in a projection column of its own, below the record's columns: the record
        carrying it, and the column that reads it. For a transform reading many fields of a large expression (a
        converted struct): each field read would otherwise copy the whole expression into the plan, and
        Spark does not share a subexpression sitting in conditional branches."""
        from pyspark.sql import functions as F

        return replace(self, hoisted=(*self.hoisted, (name, expression))), F.col(name)


# --- converters ----------------------------------------------------------------------------------


class _ByteArray(ColumnConverter):
    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        return Part(F.col(name), Schema.OPTIONAL_BYTES_SCHEMA, Schema.OPTIONAL_BYTES_SCHEMA, T.BinaryType()), F.lit(True)


class _Utf8String(ColumnConverter):
    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        c = F.col(name)
        return (Part(c.cast("string"), Schema.OPTIONAL_STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA, T.StringType()),
                c.isNull() | F.expr(f"is_valid_utf8(`{name}`)"))


def _converter(converter: Any, which: str, fitted_to_frame: bool) -> ColumnConverter:
    kind = type(converter)
    if kind is ByteArrayConverter:
        return _ByteArray()
    if kind is StringConverter:
        if converter.encoding != "utf-8":
            raise NotVectorizable(f"{which} StringConverter encoding {converter.encoding} (only UTF-8 is vectorized)")
        return _Utf8String()
    if kind is JsonConverter:
        return EnvelopeJson(converter) if converter.schemas_enabled else SchemalessJson(fitted_to_frame)
    if kind is AvroConverter:  # Confluent's Avro: its own step, connect_spark.columnar.avro
        from connect_spark.columnar.avro import AvroColumns

        return AvroColumns(converter)
    raise NotVectorizable(f"{which} {kind.__name__} has no vectorized form")


# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StagedCounts:
    """What one pass over a staged batch tells: offset ranges, rows, and rows for the per-record path."""

    ranges: dict[TopicPartition, tuple[int, int]]
    rows: int
    fallback_rows: int


@dataclass
class PlanOutput:
    """One batch split by a plan.

    Attributes:
        staged: one row per raw row that a ``Filter`` kept: the raw columns (``RAW_COLUMNS``), the
            converted record's columns and the row's ok flag. ``good`` and ``fallback`` are read from
            it, so a caller that persists it (:meth:`persisted`) converts every row once per batch.
        key_schema, value_schema: Connect schemas of the non-null keys / values in ``good``
            (``None``: schemaless).
        null_key_schema, null_value_schema: the schemas records with a null key / value carry.
        header_converter: converts the raw headers when records are built.
    """

    staged: "DataFrame"
    key_schema: Schema | None
    value_schema: Schema | None
    null_key_schema: Schema | None
    null_value_schema: Schema | None
    header_converter: HeaderConverter | None = None

    @property
    def good(self) -> "DataFrame":
        """The record frame (``RECORD_FRAME_COLUMNS``) of rows converted by column expressions."""
        from pyspark.sql import functions as F

        return self._record_frame(self.staged.where(F.col(_OK) & F.col(_KEEP) & (F.col(_BARRIER) >= 0)))

    @staticmethod
    def _record_frame(staged: "DataFrame") -> "DataFrame":
        return staged.select(*reused_columns("plan.record_frame", _record_frame_columns))

    @property
    def guarded(self) -> "DataFrame":
        """:attr:`good` for a one-pass write: the same rows and columns, but computing it raises (a Spark
        error whose message holds :data:`NEEDS_RECORD_PATH`) as soon as one row needs the per-record
        path, instead of leaving that row out. Nothing is persisted; the rows are parsed once."""
        return self._record_frame(self.staged.where(reused_columns("plan.guard", _guard_condition)))

    def converted_in_write(self, convert: Callable[["Column"], "Column"]) -> "DataFrame":
        """:attr:`good` and the rows that fall back in one record frame, for a one-pass write that converts the
        latter itself (:mod:`connect_spark.runtime.processors.fallback_in_write`).

        ``convert`` maps a struct column of a row's raw columns (``RAW_COLUMNS``; null for every row Spark
        converted) to a struct column of ``keep`` (whether the row is written) and the record frame's columns
        ``topic`` … ``headers`` in :attr:`good`'s types. Rows a ``Filter`` dropped are left out, as in :attr:`good`.
        """
        from pyspark.sql import functions as F

        falls_back = ~F.col(_OK)
        converted = "__columnar_converted"
        staged = self.staged.where(F.col(_BARRIER) >= 0).withColumn(
            converted, convert(F.when(falls_back, F.struct(*[F.col(c) for c in RAW_COLUMNS]))))
        kept = F.when(falls_back, F.coalesce(F.col(f"{converted}.keep"), F.lit(False))).otherwise(F.col(_KEEP))
        columns = [F.when(falls_back, F.col(f"{converted}.{name}")).otherwise(source).alias(name)
                   if name in FRAME_DATA_COLUMNS else source.alias(name)
                   for name, source in _record_frame_sources()]
        return staged.where(kept).select(*columns)

    @property
    def fallback(self) -> "DataFrame":
        """The raw rows (``RAW_COLUMNS``) the per-record path converts."""
        from pyspark.sql import functions as F

        return self.staged.where(~F.col(_OK) & (F.col(_BARRIER) >= 0)).select(*RAW_COLUMNS)

    def falls_back(self) -> bool:
        """Whether any row needs the per-record path: for a small local batch (a sample read on the driver),
        whose projection Spark evaluates on the driver without a job."""
        from pyspark.sql import functions as F

        return bool(self.staged.where(~F.col(_OK)).select("offset").limit(1).collect())

    def offset_ranges(self) -> "StagedCounts":
        """First and next offset per topic-partition of the raw batch, its rows, and how many fall back.

        One aggregation over ``staged`` (on a persisted output it is the pass that converts the batch).
        Rows a ``Filter`` dropped count too: the ranges include them, as :func:`batch_offset_ranges`.
        """
        from pyspark.sql import functions as F

        return _counted_ranges(self.staged, ~F.col(_OK))

    def split(self) -> "DataFrame":
        """Every staged row in one DataFrame, for a runtime that separates good from fallback rows itself
        (executor mode's Arrow tasks, :mod:`connect_spark.runtime.processors.executor_vectorized`).

        Columns: ``RAW_COLUMNS`` (key, value and headers only where the row falls back: null key and value
        and no headers elsewhere), the record
        frame's converted columns :data:`SPLIT_FRAME_COLUMNS` (read only where the row is good) and
        ``row_kind``: 1 good, 0 falls back, -1 dropped by a ``Filter`` (its offset still counts as consumed).
        """
        from pyspark.sql import functions as F

        kind = F.when(~F.col(_OK), F.lit(0)).when(F.col(_KEEP), F.lit(1)).otherwise(F.lit(-1))
        # the raw headers of a converted row as an empty list, not null: Spark's Arrow writer spends ~12 µs
        # of JVM CPU a row on a null list of structs (JDBC bench: 16.7 -> 4.0 µs a row for the whole frame)
        raw = [F.when(F.col(_OK), F.array()).otherwise(F.col(c)).alias(c) if c == "headers" else F.col(c)
               for c in RAW_COLUMNS]
        return self.staged.select(*raw, *[F.col(f"__{n}").alias(f"frame_{n}") for n in _SPLIT_NAMES],
                                  kind.cast("int").alias("row_kind"))

    def persisted(self) -> "PlanOutput":
        """The same output with ``staged`` persisted on the executors' local disks, uncompressed; call
        :meth:`unpersist` after.

        On disk, not in memory: a batch of a million rows would otherwise hold hundreds of megabytes of
        executor memory (the driver's, in a local session) for the time of one write. Uncompressed: the
        cache is written once and read once, and Spark's columnar compression (each column's encodings
        tried on every value) cost 3-5 µs of JVM CPU a row for it, of the 7-11 µs the checked way adds to
        one pass (docs/performance.md, docs/benchmarks.md). Spark reads the setting when the cache is declared, so it is
        switched off for the ``persist`` call only and the session's own value is put back (under a lock, as
        connectors sharing the session persist from their own threads).
        """
        from pyspark import StorageLevel

        conf = self.staged.sparkSession.conf
        with _CACHE_SETTING_LOCK:
            before = conf.get(CACHE_COMPRESSION)
            conf.set(CACHE_COMPRESSION, "false")
            try:
                staged = self.staged.persist(StorageLevel.DISK_ONLY)
            finally:
                conf.set(CACHE_COMPRESSION, before)
        return replace(self, staged=staged)

    def unpersist(self) -> None:
        self.staged.unpersist()

    def to_records(self, table: "pa.Table") -> list[SinkRecord]:
        """``SinkRecord``s of an Arrow table of ``good`` rows (e.g. ``good.toArrow()`` or a mapInArrow batch)."""
        return frame_to_records(table, self.key_schema, self.value_schema, null_key_schema=self.null_key_schema,
                                null_value_schema=self.null_value_schema, header_converter=self.header_converter)


#: The record frame's columns a per-record conversion decides (the ``original_*`` ones are the raw row's):
#: what :meth:`PlanOutput.converted_in_write`'s ``convert`` returns beside ``keep``.
FRAME_DATA_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers")


def _record_frame_sources() -> list[tuple[str, "Column"]]:
    """Each record frame column's name and its source in the staged projection."""
    from pyspark.sql import functions as F

    return [
        ("topic", F.col("__topic")), ("partition", F.col("__partition")), ("offset", F.col("offset")),
        ("timestamp", F.col("__timestamp")), ("timestamp_type", F.col("__timestamp_type")),
        ("key", F.col("__key")), ("value", F.col("__value")), ("headers", F.col("__headers")),
        ("original_topic", F.col("topic")), ("original_partition", F.col("partition")),
        ("original_offset", F.col("offset")),
    ]


def _record_frame_columns() -> list["Column"]:
    """The record frame's columns over the staged projection (see :meth:`PlanOutput.good`)."""
    return [source.alias(name) for name, source in _record_frame_sources()]


def _guard_condition() -> "Column":
    """The staged row is kept, dropped by a ``Filter``, or raises naming it (see :attr:`PlanOutput.guarded`)."""
    from pyspark.sql import functions as F

    row = F.concat(F.lit(NEEDS_RECORD_PATH + ": "), F.col("topic"), F.lit("["), F.col("partition").cast("string"),
                   F.lit("]@"), F.col("offset").cast("string"))
    return F.when(F.col(_OK), F.col(_KEEP) & (F.col(_BARRIER) >= 0)).otherwise(F.raise_error(row))


@dataclass
class ColumnarPlan:
    """A connector's converters and transforms as column expressions (see the module docstring)."""

    key: ColumnConverter
    value: ColumnConverter
    steps: list[TransformStep]
    header_converter: HeaderConverter | None = None
    #: Per-batch failures to vectorize (all rows fall back), with their reasons, most recent last.
    batch_fallback_reasons: list[str] = field(default_factory=list)
    #: The staged projection and the frame's schemas built from the shapes learned last, reused while they
    #: hold: building them again costs about a thousand round trips to the JVM per batch.
    _built: "_BuiltProjection | None" = field(default=None, repr=False)
    _last_reused: bool = field(default=False, repr=False)

    @property
    def reused_samples(self) -> bool:
        """True when the last :meth:`apply` reused a shape learned from an earlier batch."""
        return self._last_reused

    def forget_samples(self) -> None:
        """Make the next :meth:`apply` learn the batch's shapes from a sample again."""
        self.key.forget()
        self.value.forget()
        self._built = None

    def needs_sample(self) -> bool:
        """True when the next :meth:`apply` learns a shape from a sample (see its ``sample`` argument)."""
        return self.key.needs_sample() or self.value.needs_sample()

    def apply(self, raw: "DataFrame", sample: "DataFrame | None" = None) -> PlanOutput:
        """Split a raw batch into good (record frame) and fallback (raw) rows.

        Args:
            raw: the batch (``RAW_COLUMNS``).
            sample: rows of the batch (``RAW_COLUMNS``) to learn shapes from, e.g. a small local frame the
                caller read from Kafka itself; ``None``: the head of ``raw``, which costs a small Spark job
                per data-dependent converter. Only read when :meth:`needs_sample`.

        Learns a JSON or Avro converter's shape from the sample when it has none (none is read when it
        reuses what an earlier batch taught, see :meth:`forget_samples`); the returned DataFrames are lazy.
        Never raises for data: a batch the plan cannot handle falls back whole.
        """
        from pyspark.sql import functions as F

        built = self._built
        if built is not None and not self.needs_sample():
            self._last_reused = built.learned
            return PlanOutput(_project(raw, built.stages), *built.schemas, self.header_converter)
        learns = self.needs_sample()
        source = raw if sample is None else sample
        try:
            key, key_ok = self.key.resolve(source, "key")
            value, value_ok = self.value.resolve(source, "value")
            ts = F.col("timestamp_ms")
            record = RecordColumns(
                topic=F.col("topic"), partition=F.col("partition"), key=key, value=value,
                headers=F.col("headers"), ok=F.lit(True), keep=F.lit(True),
            ).require(key_ok).require(value_ok).require(ts.isNull() | (ts >= -1))
            for step in self.steps:
                record = step.run(record)
            record = typed_record(record)  # Debezium's semantic types, from their encoding to typed columns
        except NotVectorizable as e:
            self._built, self._last_reused = None, self.key.reused or self.value.reused
            self.batch_fallback_reasons.append(str(e))
            log.info("Batch not vectorizable (%s); every row takes the per-record path", e)
            return PlanOutput(_project(raw, _staged_stages(_unconverted_columns(), F.lit(False), F.lit(True), [])),
                              None, None, None, None, self.header_converter)
        self._last_reused = self.key.reused or self.value.reused
        no_timestamp = ts.isNull() | (ts == -1)
        converted = [
            record.topic.alias("__topic"),
            record.partition.alias("__partition"),
            F.when(no_timestamp, F.lit(None)).otherwise(F.timestamp_millis(ts)).alias("__timestamp"),
            F.when(no_timestamp | ~F.col("timestamp_type").isin(0, 1), F.lit(-1))
            .otherwise(F.col("timestamp_type")).cast("int").alias("__timestamp_type"),
            record.key.column.alias("__key"),
            record.value.column.alias("__value"),
            record.headers.alias("__headers"),
        ]
        schemas = (record.key.schema, record.value.schema, record.key.null_schema, record.value.null_schema)
        hoisted = [[expression.alias(n) for n, expression in (*self.key.hoisted, *self.value.hoisted)],
                   [expression.alias(n) for n, expression in (*self.key.hoisted_derived, *self.value.hoisted_derived)],
                   [expression.alias(n) for n, expression in record.hoisted]]
        stages = _staged_stages(converted, record.ok, record.keep, hoisted)
        # kept only when every shape is learned (a converter that samples each batch is not cached)
        self._built = None if self.needs_sample() else _BuiltProjection(stages, schemas, learns or self._last_reused)
        return PlanOutput(_project(raw, stages), *schemas, self.header_converter)


@dataclass(frozen=True)
class _BuiltProjection:
    """What :meth:`ColumnarPlan.apply` built from learned shapes: the staged projection's stages (columns of
    unbound expressions, valid over any raw batch), the frame's schemas, and whether a shape was learned from data."""

    stages: list[list["Column"]]
    schemas: tuple[Schema | None, Schema | None, Schema | None, Schema | None]
    learned: bool


def _project(raw: "DataFrame", stages: list[list["Column"]]) -> "DataFrame":
    """``raw`` through the staged projection's stages, one ``select`` each."""
    for columns in stages:
        raw = raw.select(*columns)
    return raw


def _staged_stages(converted: list["Column"], ok: "Column", keep: "Column",
                   hoisted: list[list["Column"]]) -> list[list["Column"]]:
    """The staged projection: the raw columns (bytes only where ``ok`` is false), the converted record's
    columns and the row's flags; below it, in projections of their own, each layer of ``hoisted`` (the
    converters' hoisted parses, what the converters derive from them, the transforms' hoisted expressions; each
    layer reads the ones before it) and the ok flag (every later reference reads the column: Spark does not
    share a subexpression sitting in conditional branches, so each reference would parse or check the row
    again)."""
    from pyspark.sql import functions as F

    stages = [[F.col("*"), *layer] for layer in hoisted if layer]
    stages.append([F.col("*"), ok.alias(_OK)])
    # the raw bytes are kept for the rows that fall back only (the frame reads the converted columns)
    raw_kept = [c if c in _COORDINATES else F.when(F.col(_OK), F.lit(None)).otherwise(F.col(c)).alias(c)
                for c in RAW_COLUMNS]
    return stages + [[
        *raw_kept, *converted, F.col(_OK), keep.alias(_KEEP),
        # nondeterministic, so the optimizer keeps the filters of ``good``/``fallback`` above this
        # projection instead of re-inlining its expensive expressions (JSON parsing) into them
        F.spark_partition_id().alias(_BARRIER),
    ]]


def _unconverted_columns() -> list["Column"]:
    """The converted columns of a batch nothing was converted in (typed as a frame, never read as one)."""
    from pyspark.sql import functions as F

    return [F.col("topic").alias("__topic"), F.col("partition").alias("__partition"),
            F.timestamp_millis(F.col("timestamp_ms")).alias("__timestamp"),
            F.col("timestamp_type").cast("int").alias("__timestamp_type"), F.col("key").alias("__key"),
            F.col("value").alias("__value"), F.col("headers").alias("__headers")]


def batch_offset_ranges(raw: "DataFrame") -> dict[TopicPartition, tuple[int, int]]:
    """First offset and next offset (``max + 1``) per topic-partition of a raw batch, in one aggregation.

    Covers good, fallback and filtered rows alike; persist ``raw`` when it is read again.
    """
    from pyspark.sql import functions as F

    return _counted_ranges(raw, F.lit(False)).ranges


def _counted_ranges(rows: "DataFrame", falls_back: "Column") -> StagedCounts:
    """One aggregation: offset range per topic-partition, row count, and rows where ``falls_back`` holds."""
    from pyspark.sql import functions as F

    groups = (rows.groupBy("topic", "partition")
              .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"),
                   F.count_if(falls_back).alias("bad"))
              .collect())
    return StagedCounts({TopicPartition(g["topic"], g["partition"]): (g["lo"], g["hi"] + 1) for g in groups},
                        sum(g["n"] for g in groups), sum(g["bad"] for g in groups))


def consumed_offsets(raw: "DataFrame") -> dict[TopicPartition, int]:
    """Next offset per topic-partition of a raw batch (``max(offset) + 1``): what the batch consumed."""
    return {tp: end for tp, (_, end) in batch_offset_ranges(raw).items()}


def build_plan(key_converter: Any, value_converter: Any, header_converter: Any,
               stages: list[tuple[str, Any, dict[str, Any], Any, dict[str, Any], bool]],
               frame_task: bool = False) -> ColumnarPlan:
    """A plan from configured instances.

    ``stages``: (alias, transform, transform props, predicate or None, predicate props, negate).
    ``frame_task``: the task takes the batch as a frame (a DataFrame task), where every row converted per
    record is cast to the frame's types. Without transforms, schemaless JSON then proves integers of up to 15
    digits where its shape has DOUBLE (per record an INT64, which the DOUBLE column holds exactly), and objects
    that leave out some of the shape's fields or hold nulls in them (per record a missing key, which the frame
    holds as a null column): a producer that writes ``12`` for 12.0, or leaves out an optional field, costs
    nothing. Records built from the frame would carry 12.0 where the per-record converter gives 12, and a
    ``None`` for a key the value does not have, and a transform could see the difference, so neither gets this.

    Raises:
        NotVectorizable: naming the first piece with no vectorized form.
    """
    fitted_to_frame = frame_task and not stages
    key = _converter(key_converter, "key.converter", fitted_to_frame)
    value = _converter(value_converter, "value.converter", fitted_to_frame)
    steps = [transform_step(*stage, header_converter=header_converter) for stage in stages]
    return ColumnarPlan(key, value, steps, header_converter)


def compile_plan(connector: "ConnectorConfig", worker: "WorkerConfig", frame_task: bool = False) -> ColumnarPlan | None:
    """The vectorized plan of a connector, or ``None`` (reason logged at INFO) when a piece has none;
    ``frame_task``: see :func:`build_plan`.

    Converters, transforms and predicates are instantiated and configured as ``runtime/tasks/builder``
    does; the plan keeps them only to read their settings (and the header converter, for records).
    """
    try:
        converters = [plugins.configured_converter(which, connector, worker)
                      for which in ("key.converter", "value.converter", "header.converter")]
        predicates = {}
        for p in connector.predicate_configs():
            instance = plugins.instantiate("predicate", p.type, key=f"predicates.{p.alias}.type")
            instance.configure(p.props)
            predicates[p.alias] = (instance, p.props)
        stages = []
        for t in connector.transform_configs():
            instance = plugins.instantiate("transform", t.type, key=f"transforms.{t.alias}.type")
            instance.configure(t.props)
            predicate, predicate_props = predicates[t.predicate] if t.predicate else (None, {})
            stages.append((t.alias, instance, t.props, predicate, predicate_props, t.negate))
        return build_plan(converters[0], converters[1], converters[2], stages, frame_task)
    except NotVectorizable as e:
        log.info("Connector %s uses the per-record conversion path: %s", connector.name, e)
        return None

