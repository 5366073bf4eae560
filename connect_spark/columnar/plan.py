"""Compile a connector's converters and transforms to Spark column expressions.

Called by the connector runner: :func:`compile_plan` once when the connector starts (``None``, with
the reason logged, means "use the per-record path for everything"), then :meth:`ColumnarPlan.apply`
once per micro-batch on the raw Kafka DataFrame (columns of
:data:`~connect_spark.runtime.conversion.RAW_COLUMNS`).

:meth:`ColumnarPlan.apply` splits the batch in two, and every raw row lands in exactly one part
unless a ``Filter`` dropped it:

* ``good`` — a record frame (``RECORD_FRAME_COLUMNS``) of rows the plan *proved* the per-record path
  would convert without error and to the same values. It is built from column expressions only.
* ``fallback`` — raw rows (``RAW_COLUMNS``) the plan could not prove convertible: bytes that are not
  UTF-8, JSON that does not parse or re-serialize identically, a JSON schema that differs from the
  batch's, a null in a required field, a timestamp below -1, ... The runtime sends them through
  :class:`~connect_spark.runtime.conversion.RecordConverter`, which applies ``errors.*`` (tolerance,
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
without ``schemas.enable``), Confluent's AvroConverter (:mod:`~connect_spark.columnar.avro`); header converters of any kind (headers stay raw in a frame); transforms
RegexRouter, DropHeaders, Filter, TimestampRouter, InsertHeader (with SimpleHeaderConverter), ValueToKey
and, as $Key and $Value, ReplaceField, InsertField, MaskField, Cast, ExtractField, HoistField, Flatten,
SetSchemaMetadata and TimestampConverter (numeric formats only; see
:mod:`~connect_spark.columnar.transforms`), with the predicates TopicNameMatches, HasHeaderKey and
RecordIsTombstone (negated or not). Anything else (HeaderFrom, custom plugins) makes
:func:`compile_plan` return ``None``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from connect_spark import plugins
from connect_spark.api.converters import HeaderConverter
from connect_spark.api.data import Schema, Type
from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
)
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord, TopicPartition
from connect_spark.columnar import variant_schema
from connect_spark.columnar.column_converter import ColumnConverter, Part
from connect_spark.columnar.exact_text import payload_fields_regex, payload_regex, shape_regex
from connect_spark.columnar.records import frame_to_records
from connect_spark.columnar.reused_columns import reused_columns
from connect_spark.columnar.transforms import TransformStep, transform_step
from connect_spark.columnar.types import to_spark_type
from connect_spark.converters.avro import AvroConverter
from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.string import StringConverter
from connect_spark.runtime.conversion import RAW_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = ["ColumnarPlan", "PlanOutput", "NEEDS_RECORD_PATH", "StagedCounts", "NotVectorizable", "SPLIT_FRAME_COLUMNS", "compile_plan", "consumed_offsets", "batch_offset_ranges"]

log = logging.getLogger(__name__)

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

    def require(self, condition: "Column") -> "RecordColumns":
        """Rows where ``condition`` is not true go to the fallback."""
        from pyspark.sql import functions as F

        return replace(self, ok=self.ok & F.coalesce(condition, F.lit(False)))


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


def _json_text(name: str) -> tuple["Column", "Column", "Column"]:
    """(text, is-null-or-empty, is-valid-utf8) for a JSON bytes column."""
    from pyspark.sql import functions as F

    c = F.col(name)
    return c.cast("string"), c.isNull() | (F.length(c) == 0), F.expr(f"is_valid_utf8(`{name}`)")


#: Rows a JSON converter samples (from the head of the batch) to pick the batch's shape or schema.
SAMPLE_ROWS = 1000


def _dominant(raw: "DataFrame", name: str, key: "Column", example: "Column | None" = None) -> list[tuple[str, int, Any]]:
    """Distinct non-null values of ``key`` over the first :data:`SAMPLE_ROWS` rows of ``raw`` whose column
    ``name`` is valid UTF-8, with their counts (and one ``example`` value of a row with that key, when
    asked for), most frequent first.

    One small job that reads the head of the batch's first partition and collects the sample's keys
    (no aggregation, so no shuffle stage); the counting happens here.
    """
    from pyspark.sql import functions as F

    picked = raw.select(key.alias("k"), (example if example is not None else F.lit(None)).alias("e"),
                        F.expr(f"is_valid_utf8(`{name}`)").alias("u")).limit(SAMPLE_ROWS)
    counts: dict[str, int] = {}
    examples: dict[str, Any] = {}
    for row in picked.collect():
        k = row["k"]
        if k is None or not row["u"]:
            continue
        counts[k] = counts.get(k, 0) + 1
        examples.setdefault(k, row["e"])
    return sorted(((k, n, examples[k]) for k, n in counts.items()), key=lambda kv: -kv[1])


def _ordered_like(text: str, spark_type: Any) -> Any:
    """``spark_type`` (a struct from a variant shape, fields sorted by name) with the fields of every
    object in the order ``text`` (a JSON document of that shape) writes them; ``None`` when the
    document does not have exactly those fields."""
    from pyspark.sql import types as T

    def order(value: Any, t: Any) -> Any:
        if isinstance(t, T.StructType):
            if not isinstance(value, list) or sorted(k for k, _ in value) != sorted(t.fieldNames()):
                return None
            fields = []
            for name, child in value:
                child_type = order(child, t[name].dataType)
                if child_type is None:
                    return None
                fields.append(T.StructField(name, child_type, True))
            return T.StructType(fields)
        return t

    try:
        document = json.loads(text, object_pairs_hook=list)
    except ValueError:
        return None
    return order(document, spark_type)


#: Trailing zeros of a fraction's digits (``12.40`` → ``12.4``, ``5.00`` → ``5.0``) before a delimiter.
_TRAILING_ZEROS = r"(\.[0-9]*?[0-9])0+(?=[,}\]])"


def _without_trailing_zeros(text: "Column") -> "Column":
    """JSON text with the fractions' trailing zeros removed, as Java prints doubles (``12.40`` → ``12.4``)."""
    from pyspark.sql import functions as F

    return F.regexp_replace(text, _TRAILING_ZEROS, "$1")


def _written_compactly(text: str) -> bool:
    """True when ``text`` looks as Spark's ``to_json`` would write it (no spaces between tokens, characters
    unescaped; trailing zeros of fractions aside), so the cheap exactness check can pass for such rows."""
    try:
        compact = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        return False
    return compact == re.sub(_TRAILING_ZEROS, r"\1", text)


def _reordered(c: "Column", source: Any, target: Any) -> "Column":
    """A struct column of type ``source`` rebuilt with the field order of ``target`` (same fields)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not isinstance(target, T.StructType) or source == target:
        return c
    return F.struct(*[_reordered(c[f.name], source[f.name].dataType, f.dataType).alias(f.name) for f in target.fields])


class _SchemalessJson(ColumnConverter):
    """``schemas.enable=false``: the most frequent JSON shape (``schema_of_variant``) of a sample wins.

    The shape is chosen on the first :data:`SAMPLE_ROWS` rows (one small job); every row is then
    checked against it. A row converts exactly when its own shape is that shape: same keys, no nulls
    where the shape has a type, integers where it has BIGINT, fractions where it has DECIMAL/DOUBLE
    (both FLOAT64, as the per-record converter reads them). Shapes whose values cannot be told apart
    after parsing (arrays mixing integers and fractions, arrays of objects, integers beyond 64 bits)
    are never chosen.

    Two checks prove a row exact. The cheap one, for objects written compactly: the row is parsed with
    ``from_json`` into the shape's types with the fields in the order the sample's first row of that
    shape writes them, and its text matches the shape's regular expression
    (:func:`~connect_spark.columnar.exact_text.shape_regex`: the keys in that order, each value a token
    both readers read alike); for shapes the expression does not cover (arrays, keys with escapes), the
    parsed row must re-serialize (``to_json``) to exactly its own text instead. ``NaN``, single quotes
    and ``-0.0`` never pass either. Rows that fail it (other spacing or key order, escapes, exponents)
    take the general check: the row's variant shape equals the chosen one, and its value is the variant
    cast to the shape's types. Spark evaluates the general check only for those rows.
    """

    def __init__(self) -> None:
        self._learned: tuple[str, Any, str] | None = None  # (shape, its Spark type, an example text)

    def forget(self) -> None:
        self._learned = None

    def needs_sample(self) -> bool:
        return self._learned is None

    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        text, empty, utf8 = _json_text(name)
        parsed = F.expr(f"try_parse_json(cast(`{name}` as string))")
        shape = variant_schema.normalized(F.expr(f"schema_of_variant(try_parse_json(cast(`{name}` as string)))"))
        usable = self._learned
        self.reused = usable is not None
        if usable is None:
            for candidate, _, example in _dominant(raw, name, shape, text):
                if candidate == "VOID":
                    continue
                try:
                    spark_type = variant_schema.to_spark(variant_schema.parse(candidate))
                    # columns in the order the records write their fields, not the shape's (sorted) order
                    usable = (candidate, _ordered_like(example, spark_type) or spark_type, example)
                    break
                except NotVectorizable as e:
                    log.debug("JSON shape %s is not vectorizable: %s", candidate, e)
            self._learned = usable
        if usable is None:
            null_part = Part(F.lit(None).cast("string"), None, None, T.StringType())
            return null_part, empty | (utf8 & (shape == F.lit("VOID")))
        candidate, spark_type, example = usable
        general_ok = shape.isin(candidate, "VOID")
        general = F.when(empty | (shape != F.lit(candidate)), F.lit(None).cast(spark_type)).otherwise(
            parsed.cast(spark_type))
        text_order = (_ordered_like(example, spark_type)
                      if isinstance(spark_type, T.StructType) and _written_compactly(example) else None)
        if text_order is None:  # e.g. JSON written with spaces: the cheap check would never pass
            return Part(general, None, None, spark_type), empty | (utf8 & general_ok)
        # options keep Spark from splitting the parse into pruned per-field parses, and refuse NaN and
        # single quotes, which Spark would otherwise read and the per-record converter does not
        fast = F.from_json(text, text_order, {"mode": "PERMISSIVE", "allowNonNumericNumbers": "false",
                                              "allowSingleQuotes": "false"})
        regex = shape_regex(text_order, variant_schema.parse(candidate))
        if regex is not None:  # the cheap proof: the text itself says the parse is exact
            fast_ok = F.coalesce(text.rlike(regex), F.lit(False))
        else:  # arrays, keys with escapes: the parsed row must print back as its own text
            # -0.0 prints back as itself but reads as 0.0 per record (Kafka reads numbers as BigDecimal)
            # Java writes a double without trailing zeros, so a text written with them (12.40) matches once
            # they are dropped; the regular expression runs only for rows that do not match as they are
            written = F.to_json(fast, {"ignoreNullFields": "false"})
            same_text = (written == text) | (written == _without_trailing_zeros(text))
            fast_ok = F.coalesce(same_text & ~text.contains("-0.0"), F.lit(False))
        # the UTF-8 check stays apart: keeping U+FFFD (what Spark reads malformed UTF-8 as) out of the regular
        # expression's string class instead made the match three times slower (2.2 -> 6.7 µs a row, Java regex)
        ok = empty | (utf8 & (fast_ok | general_ok))
        column = F.when(fast_ok, _reordered(fast, text_order, spark_type)).otherwise(general)
        return Part(column, None, None, spark_type), ok


# JSON's whitespace only (``\s`` would take U+00A0 and others, which no JSON reader accepts)
_ENVELOPE_HEAD = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
_ENVELOPE_MIDDLE = re.compile(r'[ \t\n\r]*,[ \t\n\r]*"payload"[ \t\n\r]*:[ \t\n\r]*')


#: Structs of at most this many integer or boolean fields are read by regular expression (one match per field)
_EXTRACTED_FIELDS = 3


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity, which Python's json reads and Kafka's does not


def envelope_prefix(text: str) -> tuple[str, Any] | None:
    """``(prefix, schema JSON)`` of an envelope written schema first, or ``None``.

    The prefix is the exact text up to the payload value (``{"schema":<schema>,"payload":``, with
    the writer's spacing); rows starting with it carry byte for byte the same schema.
    """
    head = _ENVELOPE_HEAD.match(text)
    if head is None:
        return None
    try:
        schema, end = json.JSONDecoder(parse_constant=_no_constants).raw_decode(text, head.end())
    except ValueError:
        return None
    middle = _ENVELOPE_MIDDLE.match(text, end)
    return None if middle is None else (text[:middle.end()], schema)


class _EnvelopeJson(ColumnConverter):
    """``schemas.enable=true``: one JSON schema per batch, the most frequent of a sample.

    Fast form (envelopes written schema first, as Kafka's JsonConverter does): the sample's most
    frequent *prefix* ``{"schema":<schema>,"payload":`` is found on the driver, and a row converts
    exactly when it starts with that prefix (same schema, compared as bytes), ends with ``}``, its
    payload text (between the two) is parsed to the Spark type exactly, and required fields are non-null.
    The parse is proved exact by the payload text matching the schema's regular expression
    (:func:`~connect_spark.columnar.exact_text.payload_regex`: fields in the schema's order, tokens both
    readers read alike, any JSON spacing) or, for rows it refuses and schemas it does not cover (arrays,
    maps, FLOAT32), by the parsed payload re-serializing to the same JSON (so no lenient coercion went
    unnoticed; text spaced differently is compared with ``get_json_object`` and the envelope's keys
    checked instead). Other layouts use the
    generic form: the batch's most frequent ``schema`` part, the envelope parsed per row. Only STRUCT
    schemas are vectorized; Decimal and maps with non-string keys are not.
    """

    def __init__(self, converter: JsonConverter) -> None:
        self.converter = converter
        self._learned: tuple[str, Any] | None = None  # the fast form's envelope prefix and its schema JSON

    def forget(self) -> None:
        self._learned = None

    def needs_sample(self) -> bool:
        return self._learned is None

    def _schema(self, schema_json: Any) -> tuple[Schema, Any]:
        schema = self.converter.as_connect_schema(schema_json)
        if schema is None or schema.type is not Type.STRUCT:
            raise NotVectorizable(f"payload schema is not a struct: {schema}")
        return schema, _json_parse_type(schema)

    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F

        self.reused = self._learned is not None
        self.hoisted = ()
        if self._learned is None:
            prefixes: dict[str, int] = {}
            schemas: dict[str, Any] = {}
            rows = raw.select(name).where(F.col(name).isNotNull()).limit(SAMPLE_ROWS).collect()
            for row in rows:
                try:
                    found = envelope_prefix(bytes(row[0]).decode("utf-8"))
                except UnicodeDecodeError:
                    continue
                if found is not None:
                    prefixes[found[0]] = prefixes.get(found[0], 0) + 1
                    schemas[found[0]] = found[1]
            if not prefixes:
                return self._generic(raw, name)
            prefix = max(prefixes, key=lambda p: prefixes[p])
            learned = (prefix, schemas[prefix])
        else:
            learned = self._learned
        prefix = learned[0]
        try:
            schema, parse_type = self._schema(learned[1])
        except Exception as e:
            log.info("JSON schema of this batch is not vectorizable (%s); using the per-record path", e)
            return self._generic(raw, name)
        self._learned = learned
        text, empty, _ = _json_text(name)
        # the payload's text cut from the bytes: a string's substr counts characters, scanning the whole
        # row twice (6 µs a row for the bench's 500-byte values, against 0.1 µs for the bytes)
        start = len(prefix.encode("utf-8")) + 1
        payload_bytes = f"substr(`{name}`, {start}, octet_length(`{name}`) - {start})"
        payload_text = F.expr(f"cast({payload_bytes} as string)")
        # only the payload's bytes need the UTF-8 check: a good row starts with the prefix's bytes (valid
        # UTF-8, ending on an ASCII character) and ends with "}"
        utf8 = F.expr(f"is_valid_utf8({payload_bytes})")
        fields_regex = payload_fields_regex(schema) if len(schema.fields) <= _EXTRACTED_FIELDS else None
        if fields_regex is not None:  # a small struct of numbers (a key): its fields cut by the regex, no parser
            return self._extracted(name, schema, parse_type, prefix, (text, empty, utf8), payload_text, fields_regex)
        # an option (the default mode) keeps Spark from splitting the parse into one pruned
        # from_json per field the checks read (it only prunes option-less from_json)
        payload = self._hoist(f"__parsed_{name}", F.from_json(payload_text, parse_type, {"mode": "PERMISSIVE"}))
        column, guard = _json_to_frame(payload, schema)
        serialized = F.to_json(payload, {"ignoreNullFields": "false"})
        same_json = ((serialized == payload_text) | (
            (serialized == F.get_json_object(text, "$.payload"))
            & (F.array_sort(F.json_object_keys(text)) == F.array(F.lit("payload"), F.lit("schema"))))) & (
            ~_negative_zero(serialized))
        regex = payload_regex(schema)
        if regex is not None:  # the cheap proof first: the text itself says the parse is exact
            same_json = F.coalesce(payload_text.rlike(regex), F.lit(False)) | same_json
        checks = [text.startswith(prefix), text.endswith("}"), payload.isNotNull(), same_json]
        if guard is not None:
            checks.append(guard)
        ok = utf8
        for check in checks:
            ok = ok & F.coalesce(check, F.lit(False))
        return (Part(F.when(empty, F.lit(None)).otherwise(column), schema, None, to_spark_type(schema)),
                empty | ok)

    def _extracted(self, name: str, schema: Schema, parse_type: Any, prefix: str,
                   text_checks: tuple["Column", "Column", "Column"], payload_text: "Column",
                   fields_regex: str) -> tuple[Part, "Column"]:
        """The fast form for a struct of at most :data:`_EXTRACTED_FIELDS` integer or boolean fields: each
        field's token cut by ``fields_regex`` (:func:`~connect_spark.columnar.exact_text.payload_fields_regex`)
        and cast, instead of a ``from_json`` (a JSON parser per row costs ~2 µs of JVM CPU for ``{"id":1}``,
        one regular expression per field ~0.2). Exact where the expression matches the payload: its tokens
        are integers short enough for their type and ``true``/``false``, which the casts read as the
        per-record converter does; other rows fall back."""
        from pyspark.sql import functions as F

        text, empty, utf8 = text_checks
        parsed = self._hoist(f"__parsed_{name}", F.struct(*[
            F.regexp_extract(payload_text, fields_regex, i + 1).try_cast(f.dataType).alias(f.name)
            for i, f in enumerate(parse_type.fields)]))
        column, guard = _json_to_frame(parsed, schema)
        checks = [text.startswith(prefix), text.endswith("}"), payload_text.rlike(fields_regex)]
        if guard is not None:
            checks.append(guard)
        ok = utf8
        for check in checks:
            ok = ok & F.coalesce(check, F.lit(False))
        return (Part(F.when(empty, F.lit(None)).otherwise(column), schema, None, to_spark_type(schema)),
                empty | ok)

    def _generic(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        text, empty, utf8 = _json_text(name)
        schema_text = F.get_json_object(text, "$.schema")
        tombstone = Part(F.lit(None).cast("string"), None, None, T.StringType())
        for candidate, _, _ in _dominant(raw, name, schema_text)[:1]:
            try:
                schema, parse_type = self._schema(json.loads(candidate))
            except Exception as e:
                log.info("JSON schema of this batch is not vectorizable (%s); using the per-record path", e)
                break
            envelope = self._hoist(f"__parsed_{name}", F.from_json(text, T.StructType([T.StructField("payload", parse_type)])))
            payload = envelope["payload"]
            column, guard = _json_to_frame(payload, schema)
            checks = [
                F.array_sort(F.json_object_keys(text)) == F.array(F.lit("payload"), F.lit("schema")),
                schema_text == F.lit(candidate),
                payload.isNotNull(),
                F.to_json(payload, {"ignoreNullFields": "false"}) == F.get_json_object(text, "$.payload"),
                ~_negative_zero(F.to_json(payload, {"ignoreNullFields": "false"})),
            ]
            if guard is not None:
                checks.append(guard)
            ok = utf8
            for check in checks:
                ok = ok & F.coalesce(check, F.lit(False))
            return (Part(F.when(empty, F.lit(None)).otherwise(column), schema, None, to_spark_type(schema)),
                    empty | ok)
        return tombstone, empty


def _negative_zero(serialized: "Column") -> "Column":
    """True when ``to_json`` text holds a negative zero (Java writes it ``-0.0``): Spark reads ``-0.0`` as
    itself, the per-record converter as 0.0 (Kafka reads JSON numbers as BigDecimal, which has no -0)."""
    return serialized.rlike(r"-0\.0(?![0-9E])")


def _json_parse_type(schema: Schema) -> Any:
    """The Spark type ``from_json`` reads a payload of ``schema`` with (logical types as their encoding)."""
    from pyspark.sql import types as T

    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        raise NotVectorizable("Decimal payloads are not vectorized")
    if name in (DATE_LOGICAL_NAME, TIME_LOGICAL_NAME):
        return T.IntegerType()
    if name == TIMESTAMP_LOGICAL_NAME:
        return T.LongType()
    t = schema.type
    if t is Type.BYTES:
        return T.StringType()
    if t is Type.ARRAY:
        return T.ArrayType(_json_parse_type(schema.value_schema), True)
    if t is Type.MAP:
        if schema.key_schema.type is not Type.STRING or schema.key_schema.name is not None:
            raise NotVectorizable("maps with non-string keys are not vectorized")
        return T.MapType(T.StringType(), _json_parse_type(schema.value_schema), True)
    if t is Type.STRUCT:
        return T.StructType([T.StructField(f.name, _json_parse_type(f.schema), True) for f in schema.fields])
    return to_spark_type(schema)


def _and(a: "Column | None", b: "Column | None") -> "Column | None":
    if a is None:
        return b
    return a if b is None else a & b


def _json_to_frame(c: "Column", schema: Schema) -> tuple["Column", "Column | None"]:
    """The frame column for a parsed JSON payload of ``schema``, and the rows' exactness guard (or None).

    The guard requires non-null values where the schema is required or has a default (the per-record
    converter raises or substitutes), range checks for Date/Time/Timestamp, canonical base64 for bytes.
    """
    from pyspark.sql import functions as F

    name = schema.name
    if name == DATE_LOGICAL_NAME:
        return F.date_from_unix_date(c), c.between(-719162, 2932896)
    if name == TIME_LOGICAL_NAME:
        return c, (c >= 0) & (c < 86_400_000)
    if name == TIMESTAMP_LOGICAL_NAME:
        return F.timestamp_millis(c), c.between(-62135596800000, 253402300799999)
    t = schema.type
    if t is Type.BYTES:
        decoded = F.try_to_binary(c, F.lit("base64"))  # null (a fallback row) for text that is not base64
        return decoded, F.base64(decoded) == c
    if t is Type.STRUCT:
        parts, guard, changed = [], None, False
        for f in schema.fields:
            fc = c[f.name]
            converted, child_guard = _json_to_frame(fc, f.schema)
            changed = changed or converted is not fc
            parts.append(converted.alias(f.name))
            if not f.schema.is_optional or f.schema.default_value is not None:
                guard = _and(guard, fc.isNotNull())
            if child_guard is not None:
                guard = _and(guard, fc.isNull() | child_guard)
        column = F.when(c.isNull(), F.lit(None)).otherwise(F.struct(*parts)) if changed else c
        return column, guard
    if t in (Type.ARRAY, Type.MAP):
        element = schema.value_schema
        probe = {}

        def convert(x: "Column") -> "Column":
            converted, g = _json_to_frame(x, element)
            probe["guard"], probe["changed"] = g, converted is not x
            return converted

        elements = c if t is Type.ARRAY else F.map_values(c)
        column = F.transform(c, convert) if t is Type.ARRAY else F.transform_values(c, lambda k, v: convert(v))
        element_guard = probe.get("guard")
        guard = None
        required = not element.is_optional or element.default_value is not None
        if required or element_guard is not None:
            def check(x: "Column") -> "Column":
                cond = x.isNotNull() if required else F.lit(True)
                g = _json_to_frame(x, element)[1]
                return cond & (x.isNull() | g) if g is not None else cond
            guard = c.isNull() | F.forall(elements, check)
        return (column if probe.get("changed") else c), guard
    return c, None


def _converter(converter: Any, which: str) -> ColumnConverter:
    kind = type(converter)
    if kind is ByteArrayConverter:
        return _ByteArray()
    if kind is StringConverter:
        if converter.encoding != "utf-8":
            raise NotVectorizable(f"{which} StringConverter encoding {converter.encoding} (only UTF-8 is vectorized)")
        return _Utf8String()
    if kind is JsonConverter:
        return _EnvelopeJson(converter) if converter.schemas_enabled else _SchemalessJson()
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

    @property
    def fallback(self) -> "DataFrame":
        """The raw rows (``RAW_COLUMNS``) the per-record path converts."""
        from pyspark.sql import functions as F

        return self.staged.where(~F.col(_OK) & (F.col(_BARRIER) >= 0)).select(*RAW_COLUMNS)

    def offset_ranges(self) -> "StagedCounts":
        """First and next offset per topic-partition of the raw batch, its rows, and how many fall back.

        One aggregation over ``staged`` (on a persisted output it is the pass that converts the batch).
        Rows a ``Filter`` dropped count too: the ranges include them, as :func:`batch_offset_ranges`.
        """
        from pyspark.sql import functions as F

        return _counted_ranges(self.staged, ~F.col(_OK))

    def split(self) -> "DataFrame":
        """Every staged row in one DataFrame, for a runtime that separates good from fallback rows itself
        (executor mode's Arrow tasks, :mod:`connect_spark.runtime.split_frames`).

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
        """The same output with ``staged`` persisted on the executors' local disks; call :meth:`unpersist` after.

        On disk, not in memory: a batch of a million rows would otherwise hold hundreds of megabytes of
        executor memory (the driver's, in a local session) for the time of one write, and the cached blocks
        are Spark's compressed columnar batches, cheap to write and read back.
        """
        from pyspark import StorageLevel

        return replace(self, staged=self.staged.persist(StorageLevel.DISK_ONLY))

    def unpersist(self) -> None:
        self.staged.unpersist()

    def to_records(self, table: "pa.Table") -> list[SinkRecord]:
        """``SinkRecord``s of an Arrow table of ``good`` rows (e.g. ``good.toArrow()`` or a mapInArrow batch)."""
        return frame_to_records(table, self.key_schema, self.value_schema, null_key_schema=self.null_key_schema,
                                null_value_schema=self.null_value_schema, header_converter=self.header_converter)


def _record_frame_columns() -> list["Column"]:
    """The record frame's columns over the staged projection (see :meth:`PlanOutput.good`)."""
    from pyspark.sql import functions as F

    return [
        F.col("__topic").alias("topic"), F.col("__partition").alias("partition"), F.col("offset"),
        F.col("__timestamp").alias("timestamp"), F.col("__timestamp_type").alias("timestamp_type"),
        F.col("__key").alias("key"), F.col("__value").alias("value"), F.col("__headers").alias("headers"),
        F.col("topic").alias("original_topic"), F.col("partition").alias("original_partition"),
        F.col("offset").alias("original_offset"),
    ]


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
        hoisted = [expression.alias(n) for n, expression in (*self.key.hoisted, *self.value.hoisted)]
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
                   hoisted: list["Column"]) -> list[list["Column"]]:
    """The staged projection: the raw columns (bytes only where ``ok`` is false), the converted record's
    columns and the row's flags; below it, in projections of their own, the converters' hoisted parses and the
    ok flag (every later reference reads the column: Spark does not share a subexpression sitting in
    conditional branches, so each reference would parse or check the row again)."""
    from pyspark.sql import functions as F

    stages = [[F.col("*"), *hoisted]] if hoisted else []
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
               stages: list[tuple[str, Any, dict[str, Any], Any, dict[str, Any], bool]]) -> ColumnarPlan:
    """A plan from configured instances.

    ``stages``: (alias, transform, transform props, predicate or None, predicate props, negate).

    Raises:
        NotVectorizable: naming the first piece with no vectorized form.
    """
    key = _converter(key_converter, "key.converter")
    value = _converter(value_converter, "value.converter")
    steps = [transform_step(*stage, header_converter=header_converter) for stage in stages]
    return ColumnarPlan(key, value, steps, header_converter)


def compile_plan(connector: "ConnectorConfig", worker: "WorkerConfig") -> ColumnarPlan | None:
    """The vectorized plan of a connector, or ``None`` (reason logged at INFO) when a piece has none.

    Converters, transforms and predicates are instantiated and configured as ``runtime/task_builder``
    does; the plan keeps them only to read their settings (and the header converter, for records).
    """
    try:
        converters = []
        for which in ("key.converter", "value.converter", "header.converter"):
            class_name, props = connector.converter_config(which, worker)
            kind = "header_converter" if which == "header.converter" else "converter"
            instance = plugins.instantiate(kind, class_name, key=which)
            if kind == "header_converter":
                instance.configure(props)
            else:
                instance.configure(props, which == "key.converter")
            converters.append(instance)
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
        return build_plan(converters[0], converters[1], converters[2], stages)
    except NotVectorizable as e:
        log.info("Connector %s uses the per-record conversion path: %s", connector.name, e)
        return None

