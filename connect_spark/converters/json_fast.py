"""The JsonConverter's fast paths: envelopes whose schema it has seen before, and JSON without schemas.

With ``schemas.enable=true`` every message carries its schema, and a topic's messages nearly always carry
the same one. :class:`JsonConverter <connect_spark.converters.json.JsonConverter>` reads the first
message of a schema the general way (parse everything, look the schema up, convert the payload), then
registers the message's raw opening ``{"schema":<schema bytes>,"payload":`` with an
:class:`EnvelopeCache`. A later message starting with the same bytes holds the same schema: only its
payload is parsed (``JSONDecoder.raw_decode`` from the end of the opening, the closing ``}`` checked
after it), and the payload goes through a converter compiled once for that schema
(:func:`compile_payload_converter`), which builds Structs from values it knows to be valid instead of
validating each ``put``.

Both steps give exactly what the general path gives, and whenever they meet something they do not
recognise (other bytes, a parse error, a value of an unexpected JSON type, a conversion error) they hand
the message back to the general path, which then produces the result or the error it always did.

With ``schemas.enable=false`` the message is the value: :func:`read_schemaless` parses it with ``orjson``
(when installed; ~8x faster than the standard library with ``decimal.Decimal`` fractions) and gives what the
general path gives — integers as they are (wrapped to 64 bits), fractions as floats without negative zero.
``orjson`` reads an integer beyond 64 bits as a float, which the general path would wrap instead: a float
that large (|x| ≥ 2^63) sends the message to the general path, as does anything ``orjson`` refuses (NaN, lone
surrogates, a byte order mark, out-of-range exponents), where the standard library decides as it always did.
"""

from __future__ import annotations

import decimal
import json
import re
from typing import Any, Callable

from connect_spark.api.converters import SchemaAndValue
from connect_spark.api.data import ConnectSchema, Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connect_spark.api.data.java_semantics import INT_BOUNDS, to_float32, wrap_int

try:  # optional, faster parsing of JSON without schemas
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

__all__ = ["EnvelopeCache", "GeneralConversion", "compile_payload_converter", "read_schemaless", "NOT_READ"]

#: The general conversion of a parsed JSON value to a Connect value for a schema: ``(schema, value) -> value``
#: (``JsonConverter``'s own per-value conversion, which the compiled converters must agree with).
GeneralConversion = Callable[[Schema, Any], Any]

# JSON's whitespace, as the standard library's decoder skips it.
_OPENING = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
_BETWEEN = re.compile(r'[ \t\n\r]*,[ \t\n\r]*"payload"[ \t\n\r]*:')
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_WHITESPACE_CHARS = (" ", "\t", "\n", "\r")
_CLOSING = re.compile(r"[ \t\n\r]*\}[ \t\n\r]*")

#: The Schema type each logical type is defined on; a logical name on another type is left to the general path.
_LOGICAL_BASE = {Decimal.LOGICAL_NAME: Type.BYTES, Date.LOGICAL_NAME: Type.INT32, Time.LOGICAL_NAME: Type.INT32,
                 Timestamp.LOGICAL_NAME: Type.INT64}


#: What :func:`read_schemaless` returns for a message the general path must read.
NOT_READ = object()

_LONG_LOW, _LONG_HIGH = INT_BOUNDS[64]
_FLOAT_FROM_BIG_INTEGER = float(2**63)  # orjson's floats from this size up may have been integers beyond 64 bits


class _ReadGenerally(Exception):
    """A parsed value the general path must read instead (a float that may have been a huge integer)."""


def _connect_value(node: Any) -> Any:
    """The Connect value of an ``orjson`` tree, as the general path makes it (containers changed in place)."""
    kind = type(node)
    if kind is dict:
        for key, item in node.items():
            item_kind = type(item)
            if item_kind is str or item is None or item_kind is bool:
                continue
            if item_kind is float:
                if not -_FLOAT_FROM_BIG_INTEGER < item < _FLOAT_FROM_BIG_INTEGER:
                    raise _ReadGenerally()
                if item == 0.0:
                    node[key] = 0.0  # no negative zero, as the general path
            elif item_kind is int:
                if not _LONG_LOW <= item <= _LONG_HIGH:
                    node[key] = wrap_int(item, 64)
            else:
                node[key] = _connect_value(item)
        return node
    if kind is float:
        if -_FLOAT_FROM_BIG_INTEGER < node < _FLOAT_FROM_BIG_INTEGER:
            return node + 0.0  # no negative zero, as the general path
        raise _ReadGenerally()
    if kind is int:
        return node if _LONG_LOW <= node <= _LONG_HIGH else wrap_int(node, 64)
    if kind is list:
        for index, item in enumerate(node):
            node[index] = _connect_value(item)
        return node
    return node  # str, bool, None


def read_schemaless(data: bytes) -> Any:
    """The Connect value of JSON ``data`` read without a schema, or :data:`NOT_READ` (no ``orjson``, or a
    message the general path must read; see the module docstring)."""
    if orjson is None:
        return NOT_READ
    try:
        return _connect_value(orjson.loads(data))
    except (orjson.JSONDecodeError, _ReadGenerally):
        return NOT_READ


class _Envelope:
    """One registered opening: its bytes, the schema it declares and the payload converter for it."""

    __slots__ = ("prefix", "length", "schema", "to_value")

    def __init__(self, prefix: bytes, schema: Schema | None, to_value: Callable[[Any], Any]) -> None:
        self.prefix = prefix
        self.length = len(prefix)
        self.schema = schema
        self.to_value = to_value


class EnvelopeCache:
    """Openings of envelopes seen before, most recently used first (at most ``size`` of them).

    Used by one JsonConverter: :meth:`convert` first for every message, :meth:`register` after the
    general path read one. Thread-safe (the list is replaced, never changed in place).

    Args:
        size: how many openings to keep (0 keeps none: every message takes the general path).
        parse_constant: what the general path's parser does with ``NaN`` and ``Infinity`` (a module-level
            function, so the cache pickles); numbers with a fraction are read as ``decimal.Decimal``, as there.
    """

    def __init__(self, size: int, parse_constant: Callable[[str], Any]) -> None:
        self.size = max(size, 0)
        self.parse_constant = parse_constant
        self.decoder = json.JSONDecoder(parse_float=decimal.Decimal, parse_constant=parse_constant)
        self._entries: list[_Envelope] = []

    def convert(self, data: bytes) -> SchemaAndValue | None:
        """The message read through a registered opening, or ``None`` to take the general path."""
        entries = self._entries
        if not entries:
            return None
        entry = entries[0]
        if not data.startswith(entry.prefix):
            for entry in entries:
                if data.startswith(entry.prefix):
                    self._entries = [entry] + [e for e in entries if e is not entry]
                    break
            else:
                return None
        try:
            # A message starting with ASCII bytes is read as UTF-8 by json.loads too (json.detect_encoding).
            text = data[entry.length:].decode("utf-8", "surrogatepass")
            start = _WHITESPACE.match(text).end() if text[:1] in _WHITESPACE_CHARS else 0  # type: ignore[union-attr]
            payload, end = self.decoder.raw_decode(text, start)
            if end != len(text) - 1 or text[end] != "}":
                if _CLOSING.fullmatch(text, end) is None:
                    return None
            return SchemaAndValue(entry.schema, entry.to_value(payload))
        except Exception:
            return None  # the general path reports whatever is wrong, as it always has

    def register(self, data: bytes, schema: Schema | None,
                 make_to_value: Callable[[], Callable[[Any], Any]]) -> None:
        """Remember the opening of ``data``, an envelope the general path just read as ``schema``, with the
        payload converter ``make_to_value()`` builds (called only when a new opening is remembered).

        Nothing is registered unless ``data`` is UTF-8 JSON opening exactly with ``{"schema":`` and the
        schema followed by ``,"payload":`` (whitespace allowed): other spellings keep the general path.
        """
        if self.size == 0 or json.detect_encoding(data) != "utf-8":
            return
        try:
            text = data.decode("utf-8", "surrogatepass")
            opening = _OPENING.match(text)
            if opening is None:
                return
            _, end = self.decoder.raw_decode(text, opening.end())
            between = _BETWEEN.match(text, end)
            if between is None:
                return
            prefix = text[:between.end()].encode("utf-8", "surrogatepass")
        except (ValueError, RecursionError):
            return
        if not data.startswith(prefix):
            return
        known = next((e for e in self._entries if e.prefix == prefix), None)
        entry = known if known is not None else _Envelope(prefix, schema, make_to_value())
        self._entries = [entry] + [e for e in self._entries if e is not known][:self.size - 1]

    def __len__(self) -> int:
        return len(self._entries)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled empty (compiled converters are closures): a converter shipped to an executor registers anew.
        return (EnvelopeCache, (self.size, self.parse_constant))


def compile_payload_converter(schema: Schema, general: GeneralConversion,
                              replace_null_with_default: bool) -> Callable[[Any], Any]:
    """A function of a parsed JSON value equal to ``general(schema, value)``: same value, same exception.

    Called once per schema (when an envelope is registered). The common JSON types of each schema type
    are converted inline; anything else, including every error, goes through ``general``. Struct fields
    are validated as ``Struct.put`` validates them only where the converted value can be invalid (a
    required string or bytes field given another JSON type, a logical name on an unusual type): elsewhere
    the conversion only produces valid values, so the struct is built from them directly.
    """
    if schema.default_value is not None and replace_null_with_default:
        nullable, null_value = True, schema.default_value
    else:
        nullable, null_value = schema.is_optional, None

    def on_null_or_other(value: Any) -> Any:
        if value is None and nullable:
            return null_value
        return general(schema, value)

    name = schema.name
    schema_type = schema.type
    if name in _LOGICAL_BASE:
        if _LOGICAL_BASE[name] is not schema_type or name == Decimal.LOGICAL_NAME:
            return on_null_or_other
        low, high = INT_BOUNDS[64 if schema_type is Type.INT64 else 32]
        to_logical = {Date.LOGICAL_NAME: Date.to_logical, Time.LOGICAL_NAME: Time.to_logical,
                      Timestamp.LOGICAL_NAME: Timestamp.to_logical}[name]

        def logical(value: Any) -> Any:
            if type(value) is int and low <= value <= high:
                return to_logical(schema, value)
            return on_null_or_other(value)

        return logical
    if schema_type in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        low, high = INT_BOUNDS[{Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}[schema_type]]

        def integer(value: Any) -> Any:
            if type(value) is int and low <= value <= high:
                return value
            return on_null_or_other(value)

        return integer
    if schema_type is Type.FLOAT64:
        def float64(value: Any) -> Any:
            kind = type(value)
            if kind is decimal.Decimal or kind is int or kind is float:  # the decoder reads fractions as Decimal
                return float(value) + 0.0  # + 0.0: no negative zero, as the general path
            return on_null_or_other(value)

        return float64
    if schema_type is Type.FLOAT32:
        def float32(value: Any) -> Any:
            kind = type(value)
            if kind is decimal.Decimal or kind is int or kind is float:
                return to_float32(float(value) + 0.0)
            return on_null_or_other(value)

        return float32
    if schema_type is Type.STRING or schema_type is Type.BOOLEAN:
        expected = str if schema_type is Type.STRING else bool

        def as_parsed(value: Any) -> Any:  # a JSON string or boolean is already the Connect value
            if type(value) is expected:
                return value
            return on_null_or_other(value)

        return as_parsed
    if schema_type is Type.STRUCT:
        fields = [(f.name, _field_converter(f.name, f.schema, general, replace_null_with_default))
                  for f in schema.fields]
        build = Struct.from_valid_values

        def struct(value: Any) -> Any:
            if type(value) is dict:
                get = value.get
                return build(schema, [convert(get(field_name)) for field_name, convert in fields])
            return on_null_or_other(value)

        return struct
    if schema_type is Type.ARRAY:
        element = compile_payload_converter(schema.value_schema, general,  # type: ignore[arg-type]
                                            replace_null_with_default)

        def array(value: Any) -> Any:
            if type(value) is list:
                return [element(item) for item in value]
            return on_null_or_other(value)

        return array
    if schema_type is Type.MAP and schema.key_schema is not None and schema.key_schema.type is Type.STRING:
        entry = compile_payload_converter(schema.value_schema, general,  # type: ignore[arg-type]
                                          replace_null_with_default)

        def string_map(value: Any) -> Any:
            if type(value) is dict:
                return {key: entry(item) for key, item in value.items()}
            return on_null_or_other(value)

        return string_map
    return on_null_or_other  # BYTES, maps with other keys: the general path


def _field_converter(name: str, schema: Schema, general: GeneralConversion,
                     replace_null_with_default: bool) -> Callable[[Any], Any]:
    """The converter of one struct field, validating its result as ``Struct.put`` would where that can fail."""
    convert = compile_payload_converter(schema, general, replace_null_with_default)
    if not _may_convert_to_invalid(schema):
        return convert
    validate = ConnectSchema.validate_value

    def validated(value: Any) -> Any:
        result = convert(value)
        validate(schema, result, name)
        return result

    return validated


def _may_convert_to_invalid(schema: Schema) -> bool:
    """Whether the general conversion can produce a value ``ConnectSchema.validate_value`` refuses.

    It cannot, except: a required string or bytes field given another JSON type becomes ``None``; a logical
    name on a type it is not defined on; a default value (a struct default's schema is not the field's own,
    which has the default); and arrays or maps of those.
    """
    if schema.default_value is not None:
        return True
    base = _LOGICAL_BASE.get(schema.name)  # type: ignore[arg-type]
    if base is not None:
        return base is not schema.type
    if schema.type in (Type.STRING, Type.BYTES):
        return not schema.is_optional
    if schema.type is Type.ARRAY:
        return _may_convert_to_invalid(schema.value_schema)  # type: ignore[arg-type]
    if schema.type is Type.MAP:
        return (_may_convert_to_invalid(schema.key_schema)  # type: ignore[arg-type]
                or _may_convert_to_invalid(schema.value_schema))  # type: ignore[arg-type]
    return False
