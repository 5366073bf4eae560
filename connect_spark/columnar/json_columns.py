"""The JsonConverter as column expressions: the plan's column converters for JSON keys and values.

Picked by :func:`connect_spark.columnar.plan.compile_plan` for a ``JsonConverter``: :class:`SchemalessJson`
with ``schemas.enable=false``, :class:`EnvelopeJson` with ``schemas.enable=true``. Each learns the batch's
shape (or schema) from a sample and proves, row by row, that Spark reads the text into exactly the values the
per-record :class:`~connect_spark.converters.json.JsonConverter` builds; rows it cannot prove fall back to the
per-record path (the contract: :mod:`connect_spark.columnar.column_converter`).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Callable

from connect_spark.api.data import Decimal, Schema, Type
from connect_spark.api.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
)
from connect_spark.columnar import variant_schema
from connect_spark.columnar.column_converter import ColumnConverter, Part
from connect_spark.columnar.exact_text import (
    COLON,
    QUOTE,
    ValuePosition,
    payload_fields_regex,
    payload_regex,
    piece_count,
    shape_regex,
    value_positions,
)
from connect_spark.columnar.types import decimal_type, encoded_spark_type
from connect_spark.converters.json import JsonConverter

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["EnvelopeJson", "REPLACEMENT_CHARACTER", "SAMPLE_ROWS", "SchemalessJson", "TRAILING_ZEROS",
           "envelope_prefix", "ordered_like", "proof_delimiter", "written_compactly"]

log = logging.getLogger(__name__)

NotVectorizable = variant_schema.NotVectorizable


def _json_text(name: str, envelope: bool = False) -> tuple["Column", "Column", "Column"]:
    """(text, is-no-value, is-valid-utf8) for a JSON bytes column. No value is a null or empty bytes; in an
    ``envelope`` column only a null (empty bytes hold no envelope: an error on the per-record path, as in Kafka)."""
    from pyspark.sql import functions as F

    c = F.col(name)
    no_value = c.isNull() if envelope else c.isNull() | (F.length(c) == 0)
    return c.cast("string"), no_value, F.expr(f"is_valid_utf8(`{name}`)")


#: Rows a JSON converter samples (from the head of the batch) to pick the batch's shape or schema.
SAMPLE_ROWS = 1000


def _dominant(raw: "DataFrame", name: str, key: "Column",
              example: "Column | None" = None) -> list[tuple[str, int, list[Any]]]:
    """Distinct non-null values of ``key`` over the first :data:`SAMPLE_ROWS` rows of ``raw`` whose column
    ``name`` is valid UTF-8, with their counts (and the ``example`` values of the rows with that key, in
    sample order, when asked for), most frequent first.

    One small job that reads the head of the batch's first partition and collects the sample's keys
    (no aggregation, so no shuffle stage); the counting happens here.
    """
    from pyspark.sql import functions as F

    picked = raw.select(key.alias("k"), (example if example is not None else F.lit(None)).alias("e"),
                        F.expr(f"is_valid_utf8(`{name}`)").alias("u")).limit(SAMPLE_ROWS)
    counts: dict[str, int] = {}
    examples: dict[str, list[Any]] = {}
    for row in picked.collect():
        k = row["k"]
        if k is None or not row["u"]:
            continue
        counts[k] = counts.get(k, 0) + 1
        examples.setdefault(k, []).append(row["e"])
    return sorted(((k, n, examples[k]) for k, n in counts.items()), key=lambda kv: -kv[1])


def ordered_like(text: str, spark_type: Any) -> Any:
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
TRAILING_ZEROS = r"(\.[0-9]*?[0-9])0+(?=[,}\]])"


def _without_trailing_zeros(text: "Column") -> "Column":
    """JSON text with the fractions' trailing zeros removed, as Java prints doubles (``12.40`` → ``12.4``)."""
    from pyspark.sql import functions as F

    return F.regexp_replace(text, TRAILING_ZEROS, "$1")


def written_compactly(text: str) -> bool:
    """True when ``text`` looks as Spark's ``to_json`` would write it (no spaces between tokens, characters
    unescaped; trailing zeros of fractions aside), so the cheap exactness check can pass for such rows."""
    try:
        compact = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        return False
    return compact == re.sub(TRAILING_ZEROS, r"\1", text)


def _reordered(c: "Column", source: Any, target: Any) -> "Column":
    """A struct column of type ``source`` rebuilt with the field order of ``target`` (same fields)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not isinstance(target, T.StructType) or source == target:
        return c
    return F.struct(*[_reordered(c[f.name], source[f.name].dataType, f.dataType).alias(f.name) for f in target.fields])


def _read_in_place(pieces: "Column", struct: Any, positions: dict[tuple[str, ...], ValuePosition],
                   path: tuple[str, ...] = ()) -> "Column":
    """The struct ``struct`` read from ``pieces`` (a proved text split at quotes or colons): each value taken
    from its piece (:func:`~connect_spark.columnar.exact_text.value_positions`) and cast to its type.

    Only for rows the shape's expression proved: their tokens are ones Spark's cast reads as ``from_json``
    does (integers of at most 18 digits, plain fractions read to the nearest double by both, ``true`` and
    ``false``, strings without escapes), so the values are the same, without a JSON parser.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = []
    for f in struct.fields:
        at = path + (f.name,)
        where = positions.get(at)
        if where is None:  # a nested object
            value = _read_in_place(pieces, f.dataType, positions, at)
        elif where.null:
            value = F.lit(None).cast(f.dataType)
        else:
            piece = F.get(pieces, where.index)
            if where.lead or where.trail:  # cut as bytes (lead and trail are byte counts)
                piece = piece.cast("binary").substr(F.lit(where.lead + 1),
                                                    F.octet_length(piece) - (where.lead + where.trail)).cast("string")
            value = piece if isinstance(f.dataType, T.StringType) else piece.try_cast(f.dataType)
            if isinstance(f.dataType, T.DoubleType):
                value = value + F.lit(0.0)  # -0.0 reads as 0.0 per record; every other double stays itself
        fields.append(value.alias(f.name))
    return F.struct(*fields)


def proof_delimiter(examples: list[str], spark_type: Any, shape: tuple[str, Any]) -> str:
    """What the texts of ``shape`` are split at to read their values (see
    :func:`~connect_spark.columnar.exact_text.value_positions`): colons (fewer pieces, a cheaper split) when no
    sampled text of the shape (``examples``) holds a colon in a string, else quotes (a colon in a string moves
    the pieces: such a row would take the general check)."""
    keys_only = piece_count(spark_type, shape, COLON)
    if keys_only is None or any(text.count(COLON) + 1 != keys_only for text in examples):
        return QUOTE
    return COLON


#: what Java (and so Spark's string functions) reads every malformed UTF-8 sequence as
REPLACEMENT_CHARACTER = "\ufffd"


def _decoded_cleanly(pieces: "Column", struct: Any, positions: dict[tuple[str, ...], ValuePosition]) -> "Column":
    """True for a row of a proved text (split at quotes or colons, ``pieces``) whose bytes are valid UTF-8.

    ``pieces`` are the pieces of the text decoded by Java, which reads every malformed sequence as U+FFFD. Outside
    its strings' characters a proved text has nothing but the shape's keys (which hold no U+FFFD, see
    :func:`~connect_spark.columnar.exact_text.shape_regex`) and ASCII tokens, so a malformed sequence anywhere
    shows as U+FFFD in a string value's piece; rows with a (valid) U+FFFD there are refused too and take the
    general check. Cheaper than ``is_valid_utf8`` over the row's bytes: a byte search in the few string pieces.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    clean = F.lit(True)

    def walk(t: Any, path: tuple[str, ...]) -> None:
        nonlocal clean
        for f in t.fields:
            at = path + (f.name,)
            where = positions.get(at)
            if where is None:
                walk(f.dataType, at)
            elif not where.null and isinstance(f.dataType, T.StringType):
                clean = clean & ~F.get(pieces, where.index).contains(REPLACEMENT_CHARACTER)

    walk(struct, ())
    return clean


class SchemalessJson(ColumnConverter):
    """``schemas.enable=false``: the most frequent JSON shape (``schema_of_variant``) of a sample wins.

    The shape is chosen on the first :data:`SAMPLE_ROWS` rows (one small job); every row is then
    checked against it. A row converts exactly when its own shape is that shape: same keys, no nulls
    where the shape has a type, integers where it has BIGINT, fractions where it has DECIMAL/DOUBLE
    (both FLOAT64, as the per-record converter reads them). With ``fitted_to_frame`` (a DataFrame task
    without transforms, see :func:`~connect_spark.columnar.plan.build_plan`), short integers pass there too,
    and so do objects that leave out some of the shape's fields or hold nulls in them
    (:func:`~connect_spark.columnar.variant_schema.fewer_fields_regex`). Shapes whose values cannot be told apart
    after parsing (arrays mixing integers and fractions, arrays of objects, integers beyond 64 bits)
    are never chosen.

    Two checks prove a row exact. The cheap one, for objects written compactly: the row's text matches the
    shape's regular expression (:func:`~connect_spark.columnar.exact_text.shape_regex`: the keys in the
    order the sample's first row of that shape writes them, each value a token both readers read alike),
    and its values are read without a parser, each token cut as bytes from its place in the text split at
    colons, or at quotes when the sample's strings hold colons (:func:`_read_in_place`; split at colons, a
    row whose strings hold a colon splits into more pieces and takes the general check), and cast; its bytes
    are valid UTF-8 when its string values hold no U+FFFD (:func:`_decoded_cleanly`). For shapes the
    expression does not cover (arrays, keys with escapes),
    the row is parsed with ``from_json`` and must re-serialize (``to_json``) to exactly its own text instead.
    ``NaN`` and single quotes never pass either, nor ``-0.0`` where the row is parsed (the expression reads it
    as 0.0, as the per-record converter does). Rows that fail it (other spacing or key order, escapes, exponents)
    take the general check: the row's variant shape equals the chosen one (or has fewer fields, as above), and
    its value is the variant cast to the shape's types (a field the object lacks is null). Spark evaluates
    the general check only for those rows.
    """

    def __init__(self, fitted_to_frame: bool = False) -> None:
        # (shape, its Spark type, an example text, the delimiter its proved texts are split at)
        self._learned: tuple[str, Any, str, str] | None = None
        #: whether every row converted per record is fitted to the frame's types (see ``build_plan``): the text
        #: proof then takes integers where the shape has DOUBLE, and the general check objects with fewer fields
        self.fitted_to_frame = fitted_to_frame

    def forget(self) -> None:
        self._learned = None

    def needs_sample(self) -> bool:
        return self._learned is None

    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        self.hoisted = self.hoisted_derived = ()
        text, empty, utf8 = _json_text(name)
        parsed = F.expr(f"try_parse_json(cast(`{name}` as string))")
        shape = variant_schema.normalized(F.expr(f"schema_of_variant(try_parse_json(cast(`{name}` as string)))"))
        usable = self._learned
        self.reused = usable is not None
        if usable is None:
            for candidate, _, examples in _dominant(raw, name, shape, text):
                if candidate == "VOID":
                    continue
                try:
                    spark_type = variant_schema.to_spark(variant_schema.parse(candidate))
                    # columns in the order the records write their fields, not the shape's (sorted) order
                    usable = (candidate, ordered_like(examples[0], spark_type) or spark_type, examples[0],
                              proof_delimiter(examples, spark_type, variant_schema.parse(candidate)))
                    break
                except NotVectorizable as e:
                    log.debug("JSON shape %s is not vectorizable: %s", candidate, e)
            self._learned = usable
        if usable is None:
            null_part = Part(F.lit(None).cast("string"), None, None, T.StringType())
            return null_part, empty | (utf8 & (shape == F.lit("VOID")))
        candidate, spark_type, example, delimiter = usable
        # each check names ``shape`` once: Spark computes an expression named twice in one projection for
        # every row, up front (its common subexpressions), where once it is computed only for the rows that
        # reach it (those the cheap proof below refuses)
        fewer = variant_schema.fewer_fields_regex(candidate) if self.fitted_to_frame else None
        if fewer is None:
            general_ok = shape.isin(candidate, "VOID")
            same_shape = shape == F.lit(candidate)
        else:  # a missing or null field is a null column either way; the expression takes the candidate too
            general_ok = F.coalesce(shape.rlike(f"{fewer}|\\AVOID\\z"), F.lit(False))
            same_shape = F.coalesce(shape.rlike(fewer), F.lit(False))
        general = F.when(empty | ~same_shape, F.lit(None).cast(spark_type)).otherwise(parsed.cast(spark_type))
        text_order = (ordered_like(example, spark_type)
                      if isinstance(spark_type, T.StructType) and written_compactly(example) else None)
        if text_order is None:  # e.g. JSON written with spaces: the cheap check would never pass
            return Part(general, None, None, spark_type), empty | (utf8 & general_ok)
        parsed_shape = variant_schema.parse(candidate)
        regex = shape_regex(text_order, parsed_shape, self.fitted_to_frame)
        if regex is not None:  # the cheap proof: the text itself says how to read it exactly
            # the match and the text split (at colons where the sample's strings hold none: fewer pieces) in
            # columns of their own: the ok flag and the value both read the match, every field reads the pieces
            # (Spark would otherwise match and split the row once per reference); reading the values from the
            # pieces is cheaper than parsing the text
            pieces = self._hoist(f"__pieces_{name}", F.split(text, delimiter, -1))
            exact = F.coalesce(text.rlike(regex), F.lit(False))
            if delimiter == COLON:  # the pieces hold the values where no string holds a colon
                exact = exact & (F.size(pieces) == F.lit(piece_count(text_order, parsed_shape, COLON)))
            fast_ok = self._hoist(f"__exact_{name}", exact)
            positions = value_positions(text_order, parsed_shape, delimiter)
            assert positions is not None
            fast = _read_in_place(pieces, text_order, positions)
            # the UTF-8 proof too (see _decoded_cleanly): such a row needs no is_valid_utf8 scan of its bytes
            ok = empty | (fast_ok & _decoded_cleanly(pieces, text_order, positions)) | (utf8 & general_ok)
        else:  # arrays, keys with escapes: the parsed row must print back as its own text
            # options keep Spark from splitting the parse into pruned per-field parses, and refuse NaN and
            # single quotes, which Spark would otherwise read and the per-record converter does not
            fast = F.from_json(text, text_order, {"mode": "PERMISSIVE", "allowNonNumericNumbers": "false",
                                                  "allowSingleQuotes": "false"})
            # -0.0 prints back as itself but reads as 0.0 per record (Kafka reads numbers as BigDecimal)
            # Java writes a double without trailing zeros, so a text written with them (12.40) matches once
            # they are dropped; the regular expression runs only for rows that do not match as they are
            written = F.to_json(fast, {"ignoreNullFields": "false"})
            same_text = (written == text) | (written == _without_trailing_zeros(text))
            fast_ok = F.coalesce(same_text & ~text.contains("-0.0"), F.lit(False))
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


class EnvelopeJson(ColumnConverter):
    """``schemas.enable=true``: one JSON schema per batch, the most frequent of a sample.

    Fast form (envelopes written schema first, as Kafka's JsonConverter does): the sample's most
    frequent *prefix* ``{"schema":<schema>,"payload":`` is found on the driver, and a row converts
    exactly when it starts with that prefix (same schema, compared as bytes), ends with ``}``, its
    payload text (between the two) is parsed to the Spark type exactly, and required fields are non-null.
    The parse is proved exact by the parsed payload re-serializing to the payload text byte for byte (so no
    lenient coercion went unnoticed), or, for rows written otherwise, by the text matching the schema's
    regular expression (:func:`~connect_spark.columnar.exact_text.payload_regex`: fields in the schema's
    order, tokens both readers read alike, any JSON spacing), or, for those it refuses and schemas it does
    not cover (arrays, maps, FLOAT32), by the re-serialized payload equalling ``get_json_object``'s reading
    of the text, the envelope's keys checked. Other layouts use the generic form: the batch's most frequent
    ``schema`` part, the envelope parsed per row. Only STRUCT schemas are vectorized; maps with non-string
    keys are not.
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
        self.hoisted = self.hoisted_derived = ()
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
        text, empty, _ = _json_text(name, envelope=True)
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
        derived = self._derived_columns(name)
        fields, guard, changed = _struct_fields(payload, schema, derived)
        # the proofs, cheapest first (each alone says the parse is exact): the parsed payload written back is the
        # text byte for byte (so its UTF-8 is valid too: Spark's parser reads malformed bytes as U+FFFD, which
        # it writes as other bytes); the text matches the schema's regular expression (a text spaced otherwise,
        # ``12.50`` for 12.5, an escaped ``/``; 20 µs for Debezium's 800-byte payload, where writing the parsed
        # payload back costs ~4); the payload written back equals Spark's own reading of the text spaced otherwise
        serialized = derived(F.to_json(payload, {"ignoreNullFields": "false"}))
        exact = F.coalesce((serialized == payload_text) & ~_negative_zero(serialized), F.lit(False))
        regex = payload_regex(schema)
        if regex is not None:
            exact = exact | F.coalesce(payload_text.rlike(regex), F.lit(False))
        spaced = ((serialized == F.get_json_object(text, "$.payload"))
                  & (F.array_sort(F.json_object_keys(text)) == F.array(F.lit("payload"), F.lit("schema"))))
        exact = exact | (utf8 & F.coalesce(spaced & ~_negative_zero(serialized), F.lit(False)))
        checks = [text.startswith(prefix), text.endswith("}"), exact, payload.isNotNull()]
        if guard is not None:
            checks.append(guard)
        ok = F.lit(True)
        for check in checks:
            ok = ok & F.coalesce(check, F.lit(False))
        # the payload's fields as well as the whole: a transform reading some fields (ExtractNewRecordState reads
        # ``after`` and ``before``) computes those alone, not the whole payload (a Decimal in each) for each field
        null = empty | payload.isNull()
        spark_type = encoded_spark_type(schema)
        whole = F.struct(*[f.alias(n) for n, f in fields]) if changed else payload
        return (Part(F.when(null, F.lit(None)).otherwise(whole), schema, None, spark_type,
                     fields=tuple((n, F.when(null, F.lit(None)).otherwise(f), t.dataType)
                                  for (n, f), t in zip(fields, spark_type.fields)),
                     null=null),
                empty | ok)

    def _derived_columns(self, name: str) -> Callable[["Column"], "Column"]:
        """Hoists an expression over the parsed payload into a derived column of its own, named after ``name``."""
        numbers = itertools.count()
        return lambda expression: self._hoist_derived(f"__derived_{name}_{next(numbers)}", expression)

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
        return (Part(F.when(empty, F.lit(None)).otherwise(column), schema, None, encoded_spark_type(schema)),
                empty | ok)

    def _generic(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        text, empty, utf8 = _json_text(name, envelope=True)
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
            column, guard = _json_to_frame(payload, schema, self._derived_columns(name))
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
            return (Part(F.when(empty, F.lit(None)).otherwise(column), schema, None, encoded_spark_type(schema)),
                    empty | ok)
        return tombstone, empty


def _negative_zero(serialized: "Column") -> "Column":
    """True when ``to_json`` text holds a negative zero (Java writes it ``-0.0``): Spark reads ``-0.0`` as
    itself, the per-record converter as 0.0 (Kafka reads JSON numbers as BigDecimal, which has no -0)."""
    return serialized.contains("-0.0") & serialized.rlike(r"-0\.0(?![0-9E])")  # a byte search first: cheap


def _json_parse_type(schema: Schema) -> Any:
    """The Spark type ``from_json`` reads a payload of ``schema`` with (logical types as their encoding; Debezium's
    semantic types stay encodings through the plan's transforms and are typed last, by
    :mod:`~connect_spark.columnar.semantic_columns`)."""
    from pyspark.sql import types as T

    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        return T.StringType()  # base64 text (a JSON number read as text fails the exactness checks)
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
    return encoded_spark_type(schema)


#: 2 ** (8 * n) for n = 0 .. 8: a byte string's weight, exact (a double's cast to decimal is not).
_BYTE_POWERS = tuple(2 ** (8 * n) for n in range(9))


def _decimal_from_base64(c: "Column", exponent: int, precision: int, scale: int,
                         hoist: Callable[["Column"], "Column"] | None = None) -> tuple["Column", "Column"]:
    """A Decimal's base64 text (the two's complement bytes of its unscaled value, big-endian, as Kafka's JsonConverter
    writes it in its default ``BASE64`` format) times ``10 ** -exponent`` (the schema's scale) as a
    ``decimal(precision, scale)`` column, and the rows it converts exactly: canonical base64 of 1 to 16 bytes
    (8 for a column of at most 18 digits) whose value the column holds. Others fall back (the per-record
    converter reads them, or reports a value no column of the table holds). ``hoist``: see
    :func:`_json_to_frame`."""
    import decimal

    from pyspark.sql import functions as F

    decoded = F.try_to_binary(c, F.lit("base64"))
    if hoist is not None:
        decoded = hoist(decoded)
    digits = F.hex(decoded)
    size = F.octet_length(decoded)
    low_size = F.least(size, F.lit(8))
    high_size = F.least(size - low_size, F.lit(8))  # more than 16 bytes: no decimal(38) holds it (checked below)
    weight = F.array(*[F.lit(decimal.Decimal(p)).cast("decimal(38,0)") for p in _BYTE_POWERS])

    def unsigned(hex_digits: "Column") -> "Column":
        return F.conv(hex_digits, 16, 10).cast("decimal(38,0)")

    negative = F.substring(digits, 1, 1).isin(*"89ABCDEF")
    # up to 8 bytes (an unscaled value of up to 18 digits): sign-extended to 64 bits and read as a signed long by
    # one conv; longer: the high bytes (signed) times 2^64 plus the low 8 bytes (unsigned), in decimal(38,0)
    short = F.conv(F.lpad(digits, 16, F.when(negative, F.lit("F")).otherwise(F.lit("0"))), 16, -10)
    low = unsigned(F.substring(digits, -16, 16))
    high = unsigned(F.substring(digits, 1, high_size * 2))
    long = F.try_add(F.try_multiply(F.when(negative, F.try_subtract(high, F.get(weight, high_size))).otherwise(high),
                                    F.get(weight, F.lit(8))), low).cast("string")
    # a column of at most 18 digits holds no unscaled value beyond a long's 8 bytes (10^18 < 2^63): longer texts
    # (a value too large, or bytes not written minimally) fall back, and the expression keeps the short form only
    # (half its generated code, which Spark compiles into one method per projection)
    longest = 8 if exponent == scale and precision <= 18 else 16
    unscaled = short if longest == 8 else F.when(size <= 8, short).otherwise(long)
    value = F.concat(unscaled, F.lit(f"E{-exponent}")).try_cast(f"decimal({precision},{scale})")
    # a value of at most ``sure`` bytes is below 2^(8 * sure - 1) <= 10^precision: it fits without converting it
    # again here (the guard is computed apart from the column); longer ones are converted to be sure
    sure = max((n for n in range(1, 17) if 2 ** (8 * n - 1) <= 10 ** precision), default=0) if exponent == scale else 0
    fits = F.when(size <= sure, F.lit(True)).otherwise(value.isNotNull())
    ok = (F.base64(decoded) == c) & size.between(1, longest) & fits
    return value, ok


def _and(a: "Column | None", b: "Column | None") -> "Column | None":
    if a is None:
        return b
    return a if b is None else a & b


def _struct_fields(c: "Column", schema: Schema, hoist: Callable[["Column"], "Column"] | None
                   ) -> tuple[list[tuple[str, "Column"]], "Column | None", bool]:
    """A parsed STRUCT payload's frame columns, field by field (``(name, column)``), the rows' exactness guard
    (or None), and whether any field's column differs from the parsed field (see :func:`_json_to_frame`)."""
    fields, guard, changed = [], None, False
    for f in schema.fields:
        fc = c[f.name]
        converted, child_guard = _json_to_frame(fc, f.schema, hoist)
        changed = changed or converted is not fc
        fields.append((f.name, converted))
        if not f.schema.is_optional or f.schema.default_value is not None:
            guard = _and(guard, fc.isNotNull())
        if child_guard is not None:
            guard = _and(guard, fc.isNull() | child_guard)
    return fields, guard, changed


def _json_to_frame(c: "Column", schema: Schema,
                   hoist: Callable[["Column"], "Column"] | None = None) -> tuple["Column", "Column | None"]:
    """The frame column for a parsed JSON payload of ``schema``, and the rows' exactness guard (or None).

    The guard requires non-null values where the schema is required or has a default (the per-record
    converter raises or substitutes), range checks for Date/Time/Timestamp, canonical base64 for bytes.
    ``hoist`` computes an expression in a column of its own (outside arrays and maps): a Decimal's value and
    check read its decoded bytes many times, each time again where they sit in conditional branches (every
    field of a nullable struct does), which Spark does not share.
    """
    from pyspark.sql import functions as F

    name = schema.name
    if name == DATE_LOGICAL_NAME:
        return F.date_from_unix_date(c), c.between(-719162, 2932896)
    if name == TIME_LOGICAL_NAME:
        return c, (c >= 0) & (c < 86_400_000)
    if name == TIMESTAMP_LOGICAL_NAME:
        return F.timestamp_millis(c), c.between(-62135596800000, 253402300799999)
    if name == DECIMAL_LOGICAL_NAME:
        return _decimal_from_base64(c, Decimal.scale(schema), *decimal_type(schema), hoist)
    t = schema.type
    if t is Type.BYTES:
        decoded = F.try_to_binary(c, F.lit("base64"))  # null (a fallback row) for text that is not base64
        if hoist is not None:
            decoded = hoist(decoded)
        return decoded, F.base64(decoded) == c
    if t is Type.STRUCT:
        fields, guard, changed = _struct_fields(c, schema, hoist)
        column = F.when(c.isNull(), F.lit(None)).otherwise(
            F.struct(*[f.alias(n) for n, f in fields])) if changed else c
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
