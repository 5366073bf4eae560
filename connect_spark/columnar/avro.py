"""The vectorized form of :class:`~connect_spark.converters.avro.AvroConverter`: Avro bytes to Spark columns.

Called by :func:`connect_spark.columnar.plan.build_plan` (through its converter table) for a key or value
converter that is an ``AvroConverter``; :meth:`AvroColumns.resolve` then runs once per micro-batch.

How a batch is read: the writer schema id of the first :data:`SAMPLE_ROWS` rows that carry one is
counted, and the most frequent ``(topic, id)`` wins; its writer schema comes from the converter (the
registry, once) together with the Connect schema ``AvroData`` gives it. Every row's 5-byte header is
stripped and the payload decoded with Spark's ``from_avro`` under a *Spark form* of the writer schema (the
logical types AvroData does not map, such as timestamp-micros, are removed, so Spark reads them as the
plain longs Connect sees), then cast to the Spark type of the Connect schema.

The proof, per row: the magic byte is 0, the id and topic are the chosen ones, ``from_avro`` decoded it,
``to_avro`` of the decoded value gives back exactly the payload (so no byte was skipped, truncated or read
otherwise than the per-record path would), and every string is valid UTF-8 (the per-record reader, as
Java's Avro, replaces malformed bytes; Spark would keep them). Any other row falls back to the per-record
converter, which sends bad records where ``errors.*`` says. Null values (tombstones) convert to null.

A writer schema this cannot express the same way as AvroData (a general union, an array of MapEntry
records, a decimal of precision over 38, a recursive record) makes the whole batch fall back.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import TYPE_CHECKING, Any

from connect_spark.api.data import Schema
from connect_spark.api.errors import ConnectException
from connect_spark.columnar.column_converter import ColumnConverter, Part
from connect_spark.columnar.types import encoded_spark_type
from connect_spark.converters.avro import AvroConverter

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["AvroColumns", "NotExpressible", "spark_form", "decode_witness", "SAMPLE_ROWS"]

log = logging.getLogger(__name__)

SAMPLE_ROWS = 1000
_SPARK_LOGICAL = {("bytes", "decimal"), ("fixed", "decimal"), ("int", "date"), ("long", "timestamp-millis")}


class NotExpressible(ConnectException):
    """The writer schema has no Spark form that reads as AvroData would."""


def spark_form(node: Any) -> Any:
    """The writer schema as ``from_avro`` should read it (see the module docstring); the encoding is unchanged.

    Raises:
        NotExpressible: a general union, a MapEntry array, a decimal over precision 38.
    """
    node = copy.deepcopy(node)
    return _strip(node)


def _strip(node: Any) -> Any:
    if isinstance(node, list):
        non_null = [m for m in node if m != "null" and not (isinstance(m, dict) and m.get("type") == "null")]
        if len(node) != 2 or len(non_null) != 1:
            raise NotExpressible("a union other than [null, T] (AvroData's union struct)")
        return [_strip(m) for m in node]
    if not isinstance(node, dict):
        return node
    avro_type = node.get("type")
    if isinstance(avro_type, (dict, list)):
        node["type"] = _strip(avro_type)
        return node
    logical = node.get("logicalType")
    if logical is not None:
        if (avro_type, str(logical).lower()) not in _SPARK_LOGICAL:
            del node["logicalType"]
        elif str(logical).lower() == "decimal" and int(node.get("precision", 0)) > 38:
            raise NotExpressible("a decimal of precision over 38")
    if avro_type in ("record", "error"):
        if node.get("name") == "MapEntry" or node.get("connect.internal.type") == "MapEntry":
            raise NotExpressible("an array of MapEntry records (a map with non-string keys)")
        for field in node.get("fields", []):
            field["type"] = _strip(field["type"])
    elif avro_type == "array":
        node["items"] = _strip(node["items"])
    elif avro_type == "map":
        node["values"] = _strip(node["values"])
    return node


def decode_witness(avro_schema: Any) -> str | None:
    """A required top-level field of a record schema (non-null in every decoded row), or None for a non-record.

    Raises:
        NotExpressible: a record whose fields are all optional (a failed decode looks like a valid record).
    """
    if not (isinstance(avro_schema, dict) and avro_schema.get("type") in ("record", "error")):
        return None
    for field in avro_schema.get("fields", []):
        if not isinstance(field["type"], list):
            return field["name"]
    raise NotExpressible("a record whose fields are all optional")


class AvroColumns(ColumnConverter):
    """An AvroConverter as column expressions over one binary column (``key`` or ``value``).

    :meth:`resolve` gives the converted part and the condition under which a row converts exactly,
    :meth:`forget` drops the schema learned from a sample; nothing is hoisted.
    """

    def __init__(self, converter: AvroConverter) -> None:
        self.converter = converter
        self.reused = False
        self._learned: tuple[str, int, Schema, str, str | None] | None = None

    def forget(self) -> None:
        self._learned = None

    def needs_sample(self) -> bool:
        """True when the next ``resolve`` reads a sample (no writer schema learned yet)."""
        return self._learned is None

    def _learn(self, raw: "DataFrame", name: str) -> tuple[str, int, Schema, str, str | None]:
        from pyspark.sql import functions as F

        from connect_spark.columnar.plan import NotVectorizable

        c = F.col(name)
        header = raw.limit(SAMPLE_ROWS).where(c.isNotNull() & (F.length(c) >= 5)).select(
            "topic", F.substring(c, 1, 1).alias("magic"), F.substring(c, 2, 4).alias("id"))
        counts: dict[tuple[str, int], int] = {}
        for row in header.collect():
            if bytes(row["magic"]) == b"\x00":
                key = (row["topic"], int.from_bytes(bytes(row["id"]), "big"))
                counts[key] = counts.get(key, 0) + 1
        if not counts:
            raise NotVectorizable(f"{name}: no record of the sample is in Confluent's wire format")
        topic, schema_id = max(counts, key=lambda k: counts[k])
        try:
            reader = self.converter.reader(topic, schema_id)
            form = json.dumps(spark_form(reader.avro_schema))
            witness = decode_witness(reader.avro_schema)
        except ConnectException as e:  # not expressible, a bad schema, or the registry unreachable
            raise NotVectorizable(f"{name}: writer schema id {schema_id}: {e}") from None
        return topic, schema_id, reader.schema, form, witness

    def resolve(self, raw: "DataFrame", name: str) -> tuple[Part, "Column"]:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro, to_avro

        self.reused = self._learned is not None
        if self._learned is None:
            self._learned = self._learn(raw, name)
        topic, schema_id, schema, form, witness = self._learned
        c = F.col(name)
        payload = F.expr(f"substring(`{name}`, 6)")
        decoded = from_avro(payload, form, {"mode": "PERMISSIVE"})
        spark_type = encoded_spark_type(schema)  # Debezium's semantic types are typed last (semantic_columns)
        # PERMISSIVE decoding makes every field nullable; the cast keeps that (required fields are non-null
        # in every row that converts: the round trip below proves the row decoded whole)
        value = F.when(c.isNull(), F.lit(None)).otherwise(decoded.cast(_nullable(spark_type)))
        header_ok = ((F.length(c) >= 5) & (F.substring(c, 1, 1) == F.lit(b"\x00"))
                     & (F.substring(c, 2, 4) == F.lit(schema_id.to_bytes(4, "big"))) & (F.col("topic") == topic))
        # PERMISSIVE gives a record of nulls for bytes that do not decode: a required field tells them apart
        decoded_ok = decoded.isNotNull() if witness is None else decoded[witness].isNotNull()
        round_trip = F.when(header_ok & decoded_ok, to_avro(decoded, form) == payload)
        # Spark keeps malformed UTF-8 as it is where the per-record reader (as Java's Avro) puts U+FFFD
        strings_ok = _valid_strings(decoded, _nullable(spark_type))
        exact = header_ok & decoded_ok & round_trip
        if strings_ok is not None:
            exact = exact & strings_ok
        ok = c.isNull() | F.coalesce(exact, F.lit(False))
        # a null value is SchemaAndValue(None, None) in the per-record path: no schema
        return Part(value, schema, None, spark_type), ok


def _nullable(data_type: Any) -> Any:
    """``data_type`` with every struct field, array element and map value nullable."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(data_type.keyType, _nullable(data_type.valueType), True)
    return data_type


def _valid_strings(c: "Column", data_type: Any) -> "Column | None":
    """True when every string inside ``c`` (of ``data_type``) is valid UTF-8; None when it holds no string."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def valid(x: "Column") -> "Column":
        return x.isNull() | F.call_function("is_valid_utf8", x)

    if isinstance(data_type, T.StringType):
        return valid(c)
    if isinstance(data_type, T.StructType):
        checks = [g for f in data_type.fields if (g := _valid_strings(c[f.name], f.dataType)) is not None]
        if not checks:
            return None
        combined = checks[0]
        for check in checks[1:]:
            combined = combined & check
        return c.isNull() | combined
    if isinstance(data_type, T.ArrayType):
        probe = _valid_strings(F.lit(None).cast(data_type.elementType), data_type.elementType)
        if probe is None:
            return None
        return c.isNull() | F.forall(c, lambda x: _valid_strings(x, data_type.elementType))
    if isinstance(data_type, T.MapType):
        keys = F.forall(F.map_keys(c), valid)
        values = _valid_strings(F.lit(None).cast(data_type.valueType), data_type.valueType)
        if values is not None:
            keys = keys & F.forall(F.map_values(c), lambda x: _valid_strings(x, data_type.valueType))
        return c.isNull() | keys
    return None
