"""Records → table rows: which columns a record gives (pk.mode, pk.fields, fields.whitelist) and their values.

Called by the task for each chunk of a ``put``. :func:`table_batches` groups the records by table and
returns, per table, the columns (the union of the records' schemas, primary key first), the rows to
write and the keys to delete, each with the record it came from (for the errant record reporter).

A record's layout is compiled once per key/value schema pair (:class:`RecordLayout`), so a batch of
records sharing a schema costs one tuple build per record. Connect schemas give the column types;
schemaless values (maps, e.g. JSON without schemas) need ``fields.whitelist`` as the explicit column list,
typed from the first value seen (or taken as the table has them). A schemaless record's layout depends on
the Python types of the entries it reads (they decide the column types), so it is cached by those types
(:func:`schemaless_shape`): records of the same shape share one layout, a record of another shape gets its own.

Debezium's semantic types (an ``io.debezium.time.MicroTimestamp``, a ``VariableScaleDecimal``, ...) are written
as what they mean (:func:`semantic_writer`), into the column types the dialect gives them.

Keys, as Confluent's sink reads them: ``kafka`` gives topic/partition/offset columns; ``record_key`` the
key's fields (``pk.fields`` picks some) or, for a primitive key, one column named by ``pk.fields``;
``record_value`` fields of the value (``pk.fields``, default all). In upsert and update mode (and for
deletes) the last change of each key in the batch wins; a tombstone (or a rewrite-mode ``__deleted``
value) deletes its key when ``delete.enabled`` is set, a tombstone is skipped otherwise
(:mod:`connect_spark.connectors.changes` holds these rules for every table sink).
"""

from __future__ import annotations

import datetime
import operator
import zoneinfo
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from connect_spark.api.data import Schema, Type
from connect_spark.api.data.schema import TIMESTAMP_LOGICAL_NAME
from connect_spark.api.data.semantic_types import (
    BITS,
    MICRO_TIME,
    MICROS_PER_DAY,
    NANO_TIME,
    TIME,
    SemanticType,
    SemanticValueError,
    bits_text,
    semantic_type,
    to_logical,
)
from connect_spark.api.errors import ConnectException
from connect_spark.api.records import SinkRecord
from connect_spark.connectors.changes import record_deletes, surviving
from connect_spark.connectors.jdbc.config import KAFKA_PK_DEFAULT_NAMES, JdbcSinkConfig
from connect_spark.connectors.jdbc.dialect import Column, TableId
from connect_spark.connectors.jdbc.target import table_for_topic

__all__ = ["TableBatch", "RecordLayout", "LayoutCache", "ColumnSource", "column_source",
           "table_batches", "record_label", "schemaless_shape"]

_FLATTEN = "add the Flatten transform (transforms.flatten.type=org.apache.kafka.connect.transforms.Flatten$Value)"


def record_label(record: SinkRecord) -> str:
    """``topic[partition]@offset`` of the record as read from Kafka."""
    return record.coordinates()


@dataclass
class TableBatch:
    """What one transaction writes to one table."""

    table: TableId
    columns: list[Column]
    rows: list[tuple] = field(default_factory=list)
    #: Every row value has the Python type of its column's Connect schema (read from structs, whose values
    #: were validated, or the Kafka coordinates), so the dialect may use a typed transfer.
    typed: bool = False
    row_records: list[SinkRecord] = field(default_factory=list)
    delete_keys: list[tuple] = field(default_factory=list)
    delete_records: list[SinkRecord] = field(default_factory=list)

    @property
    def key_columns(self) -> list[Column]:
        return [c for c in self.columns if c.primary]


Getter = Callable[[SinkRecord], Any]


@dataclass(frozen=True)
class RecordLayout:
    """The columns one key/value schema pair gives, and how to read each from a record.

    ``row`` and ``key`` read a record's column values and key values; when every column is a struct field
    (the common case) they take each struct's values in one call and pick the columns' positions
    (:func:`_tuple_reader`), otherwise they call each getter.
    """

    columns: tuple[Column, ...]
    getters: tuple[Getter, ...]
    key_getters: tuple[Getter, ...]
    typed: bool = field(init=False, compare=False)
    row: Callable[[SinkRecord], tuple] = field(init=False, repr=False, compare=False)
    key: Callable[[SinkRecord], tuple] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "typed", all(isinstance(g, _FieldGetter) or g in _KAFKA_GETTERS
                                              for g in self.getters))
        object.__setattr__(self, "row", _tuple_reader(self.getters))
        object.__setattr__(self, "key", _tuple_reader(self.key_getters))


class _FieldGetter:
    """Reads one field of the record's key or value struct, through ``convert`` when there is one."""

    __slots__ = ("on_key", "field", "index", "convert")

    def __init__(self, side: str, field_obj: Any, convert: Callable[[Any], Any] | None) -> None:
        self.on_key = side == "key"
        self.field = field_obj
        self.index = field_obj.index
        self.convert = convert

    def __call__(self, record: SinkRecord) -> Any:
        value = (record.key if self.on_key else record.value).get(self.field)
        return value if self.convert is None else self.convert(value)


class _WholeKeyGetter:
    """Reads a primitive key (``pk.mode=record_key`` with one ``pk.fields`` name), through ``convert``."""

    __slots__ = ("schema", "convert")

    def __init__(self, schema: Schema | None, convert: Callable[[Any], Any] | None) -> None:
        self.schema = schema
        self.convert = convert

    def __call__(self, record: SinkRecord) -> Any:
        return record.key if self.convert is None else self.convert(record.key)


@dataclass(frozen=True)
class ColumnSource:
    """Where a layout's column comes from in a record frame (for :mod:`.frame_rows`).

    Attributes:
        kind: ``"field"`` (a field of the key or value struct), ``"key"`` (the whole primitive key) or
            ``"kafka"`` (the frame's ``topic``, ``partition`` or ``offset`` column, named by ``name``).
        side: ``"key"`` or ``"value"`` for a field.
        name: the field's or the frame column's name.
        schema: the Connect schema of the values (``None`` for Kafka columns and schemaless keys).
        convert: applied to each value after it is read (a Timestamp's wall clock in ``db.timezone``).
    """

    kind: str
    side: str = ""
    name: str = ""
    schema: Schema | None = None
    convert: Callable[[Any], Any] | None = None


def column_source(getter: Getter) -> ColumnSource | None:
    """Where ``getter`` reads from, or ``None`` when it reads schemaless map entries (frames of such
    records take the record path)."""
    if isinstance(getter, _FieldGetter):
        return ColumnSource("field", "key" if getter.on_key else "value", getter.field.name, getter.field.schema,
                            getter.convert)
    if isinstance(getter, _WholeKeyGetter):
        return None if getter.schema is None else ColumnSource("key", "key", "key", getter.schema, getter.convert)
    if getter in _KAFKA_GETTERS:
        return ColumnSource("kafka", name=("topic", "partition", "offset")[_KAFKA_GETTERS.index(getter)])
    return None


def _positions_picker(indices: list[int]) -> Callable[[list[Any]], tuple]:
    """A function taking the values at ``indices`` of a list, as a tuple."""
    if len(indices) == 1:
        only = indices[0]
        return lambda values: (values[only],)
    return operator.itemgetter(*indices)


def _tuple_reader(getters: Sequence[Getter]) -> Callable[[SinkRecord], tuple]:
    """One function reading all of ``getters`` from a record, as a tuple (compiled once per layout)."""
    if getters and all(isinstance(g, _MapGetter) for g in getters):
        sides = {g.on_key for g in getters}  # type: ignore[union-attr]
        if len(sides) == 1:
            return _map_reader(sides.pop(), tuple(g.name for g in getters))  # type: ignore[union-attr]
    if not getters or not all(isinstance(g, _FieldGetter) for g in getters):
        return lambda record: tuple([get(record) for get in getters])
    runs: list[tuple[bool, list[int]]] = []  # consecutive fields of the same side
    for getter in getters:
        if runs and runs[-1][0] == getter.on_key:  # type: ignore[union-attr]
            runs[-1][1].append(getter.index)  # type: ignore[union-attr]
        else:
            runs.append((getter.on_key, [getter.index]))  # type: ignore[union-attr]
    pickers = [(on_key, _positions_picker(indices)) for on_key, indices in runs]
    converts = [(position, g.convert) for position, g in enumerate(getters) if g.convert is not None]  # type: ignore[union-attr]
    if len(pickers) == 1 and not pickers[0][0]:
        pick = pickers[0][1]
        if not converts:
            return lambda record: pick(record.value.field_values())

    def read(record: SinkRecord) -> tuple:
        row: tuple = ()
        for on_key, pick in pickers:
            row += pick((record.key if on_key else record.value).field_values())
        if converts:
            values = list(row)
            for position, convert in converts:
                values[position] = convert(values[position])
            return tuple(values)
        return row

    return read


def _timestamp_writer(zone: str) -> Callable[[Any], Any]:
    """Connect Timestamps (aware UTC datetimes) as wall-clock time in ``db.timezone`` for a timestamp column."""
    tz = zoneinfo.ZoneInfo(zone)
    utc = datetime.timezone.utc
    if zone == "UTC":
        return lambda v: v if v is None or v.tzinfo is None else v.astimezone(utc).replace(tzinfo=None)
    return lambda v: v if v is None else (v.replace(tzinfo=utc) if v.tzinfo is None else v).astimezone(tz).replace(
        tzinfo=None)


def semantic_writer(schema: Schema) -> Callable[[Any], Any] | None:
    """The database value of a Debezium semantic type's Connect value (an array's elements too), or ``None``
    when the value is written as it is (a Year, a Uuid's text, ...).

    The column types are the dialect's (``date``, ``time``, ``timestamp``, ``timestamptz``, ``numeric``, bit
    strings); values become the Python objects the driver writes into them
    (:func:`~connect_spark.api.data.semantic_types.to_logical`): a local date-time is written as its wall clock,
    never moved to ``db.timezone``. A value Python cannot hold is written as SQL text the database parses
    itself (a date beyond 9999 or before year 1, ``24:00:00``, a ZonedTimestamp such as ``infinity``), so the
    database, not this sink, decides: a value it refuses is that row's error (the errant record reporter).
    """
    if schema.type is Type.ARRAY:
        element = semantic_writer(schema.value_schema)
        return None if element is None else (lambda v: None if v is None else [element(x) for x in v])
    found = semantic_type(schema)
    if found is None:
        return None
    if found.name == BITS:
        length = (schema.parameters or {}).get("length")
        width = int(length) if length and length.isdigit() and 0 < int(length) < 2**31 - 1 else None
        return lambda v: None if v is None else bits_text(v, width)
    if found.column in ("date", "timestamp_ntz", "timestamp", "decimal") or found.name in (TIME, MICRO_TIME, NANO_TIME):
        def write(v: Any) -> Any:
            if v is None:
                return None
            try:
                return to_logical(found, v)
            except SemanticValueError:
                return _sql_text(found, v)
        return write
    return None


def _sql_text(semantic: SemanticType, value: Any) -> Any:
    """A value :func:`~connect_spark.api.data.semantic_types.to_logical` refused, as SQL text (see
    :func:`semantic_writer`): dates and timestamps of any year (``BC`` before year 1), times of day beyond
    23:59:59.999999; anything else (a ZonedTimestamp that does not parse) as it is."""
    if semantic.column == "date":
        return _date_text(value)
    if semantic.column == "timestamp_ntz":
        unit = semantic.unit
        micros = value * -unit if unit < 0 else value // unit
        days, rest = divmod(micros, MICROS_PER_DAY)
        return _date_text(days, f" {_clock_text(rest)}")
    if semantic.name in (TIME, MICRO_TIME, NANO_TIME):
        unit = semantic.unit
        micros = value * -unit if unit < 0 else value // unit
        return _clock_text(micros) if micros >= 0 else str(value)
    return value


def _clock_text(micros: int) -> str:
    """``HH:MM:SS.ffffff`` of a count of microseconds (hours beyond 23 as they are)."""
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{micro:06d}"


def _date_text(days: int, clock: str = "") -> str:
    """The proleptic Gregorian date ``days`` after 1970-01-01 as SQL text, ``BC`` for years before 1 (any year)."""
    # days → (year, month, day), after Howard Hinnant's civil_from_days
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    if year <= 0:
        return f"{1 - year:04d}-{month:02d}-{day:02d}{clock} BC"
    return f"{year:04d}-{month:02d}-{day:02d}{clock}"


#: pk.mode=kafka's columns: topic, partition, offset.
_KAFKA_GETTERS: tuple[Getter, ...] = (lambda r: r.topic, lambda r: r.kafka_partition, lambda r: r.kafka_offset)


class _MapGetter:
    """Reads one entry of a schemaless key or value map (``None`` when the entry, or the map, is absent)."""

    __slots__ = ("on_key", "name")

    def __init__(self, side: str, name: str) -> None:
        self.on_key = side == "key"
        self.name = name

    def __call__(self, record: SinkRecord) -> Any:
        data = record.key if self.on_key else record.value
        return data.get(self.name) if isinstance(data, dict) else None


def _map_reader(on_key: bool, names: tuple[str, ...]) -> Callable[[SinkRecord], tuple]:
    """One function reading the entries ``names`` of a record's key or value map, as a tuple."""
    absent = (None,) * len(names)

    def read(record: SinkRecord) -> tuple:
        data = record.key if on_key else record.value
        return tuple(map(data.get, names)) if isinstance(data, dict) else absent

    return read


_INFERRED = {bool: Schema.OPTIONAL_BOOLEAN_SCHEMA, int: Schema.OPTIONAL_INT64_SCHEMA,
             float: Schema.OPTIONAL_FLOAT64_SCHEMA, str: Schema.OPTIONAL_STRING_SCHEMA,
             bytes: Schema.OPTIONAL_BYTES_SCHEMA}


def _inferred_schema(value: Any, name: str) -> Schema:
    """The column schema of a schemaless value (used only to create or evolve a table)."""
    if value is None:
        return Schema.OPTIONAL_STRING_SCHEMA
    schema = _INFERRED.get(type(value))
    if schema is None:
        raise ConnectException(f"Schemaless field {name!r} holds a {type(value).__name__}, which no column type "
                               "matches (strings, numbers, booleans only; use JSON with schemas for more)")
    return schema


#: A task keeps at most this many layouts (schemas, and shapes of schemaless records); beyond, it starts afresh.
MAX_LAYOUTS = 1024


def schemaless_shape(data: Any, names: Sequence[str]) -> tuple:
    """What a schemaless key's or value's columns depend on: the Python type of each entry ``names`` reads
    (a missing entry is ``NoneType``), or, for data that is not a map, its type."""
    if isinstance(data, dict):
        get = data.get
        return (dict, *[type(get(n)) for n in names])
    return (type(data),)


class LayoutCache:
    """Record layouts, compiled at first sight. One per task.

    Keyed by the record's (key schema, value schema) and, for a schemaless side the columns are read from,
    by :func:`schemaless_shape` of the entries read: the value's ``fields.whitelist`` entries (and ``pk.fields``
    in ``pk.mode=record_value``), the key's ``pk.fields`` entries (or the key's own type) in
    ``pk.mode=record_key``. Those types decide the columns' types (:func:`_inferred_schema`), and nothing else
    of the values goes into a layout."""

    def __init__(self, config: JdbcSinkConfig) -> None:
        self.config = config
        self._layouts: dict[tuple, tuple[Any, Any, RecordLayout]] = {}
        self._timestamp = _timestamp_writer(config.db_timezone)
        self._key_names = config.pk_fields if config.pk_mode == "record_key" else None
        value_names = config.pk_fields if config.pk_mode == "record_value" else ()
        self._value_names = tuple(dict.fromkeys((*value_names, *config.fields_whitelist)))

    def layout(self, record: SinkRecord) -> RecordLayout:
        """The layout of a non-tombstone record (or of a tombstone's key, for deletes)."""
        ks, vs = record.key_schema, record.value_schema
        key_shape = schemaless_shape(record.key, self._key_names) if ks is None and self._key_names is not None else ()
        value_shape = schemaless_shape(record.value, self._value_names) if vs is None else ()
        cache_key = (id(ks), id(vs), key_shape, value_shape)
        found = self._layouts.get(cache_key)
        if found is not None and found[0] is ks and found[1] is vs:
            return found[2]
        layout = self._compile(record)
        if len(self._layouts) >= MAX_LAYOUTS:
            self._layouts.clear()
        self._layouts[cache_key] = (ks, vs, layout)  # the schemas kept alive: their ids stay theirs
        return layout

    # -- compilation ---------------------------------------------------------------------------

    def _convert_for(self, schema: Schema) -> Callable[[Any], Any] | None:
        if schema.name == TIMESTAMP_LOGICAL_NAME:
            return self._timestamp
        return semantic_writer(schema)

    def _compile(self, record: SinkRecord) -> RecordLayout:
        config = self.config
        key_columns, key_getters = self._key_columns(record)
        columns, getters = list(key_columns), list(key_getters)
        taken = {c.name for c in columns}
        if record.value is not None:
            for column, getter in self._value_columns(record):
                if column.name not in taken:
                    columns.append(column)
                    getters.append(getter)
                    taken.add(column.name)
        if config.pk_mode != "none" and not key_columns:
            raise ConnectException(f"Record {record_label(record)}: pk.mode={config.pk_mode} found no key columns")
        return RecordLayout(tuple(columns), tuple(getters), tuple(key_getters))

    def _key_columns(self, record: SinkRecord) -> tuple[list[Column], list[Getter]]:
        config = self.config
        mode = config.pk_mode
        if mode == "none":
            return [], []
        if mode == "kafka":
            names = config.pk_fields or KAFKA_PK_DEFAULT_NAMES
            return ([Column(names[0], Schema.STRING_SCHEMA, True), Column(names[1], Schema.INT32_SCHEMA, True),
                     Column(names[2], Schema.INT64_SCHEMA, True)],
                    list(_KAFKA_GETTERS))
        if mode == "record_key":
            return self._side_columns(record, "key", config.pk_fields, primary=True)
        if record.value is None:
            raise ConnectException(f"Record {record_label(record)}: a tombstone has no value to take "
                                   "pk.mode=record_value key fields from")
        return self._side_columns(record, "value", config.pk_fields, primary=True)

    def _value_columns(self, record: SinkRecord) -> list[tuple[Column, Getter]]:
        columns, getters = self._side_columns(record, "value", self.config.fields_whitelist, primary=False)
        consumed = self.config.change_rules.consumed_fields([c.name for c in columns])
        return [(c, g) for c, g in zip(columns, getters) if c.name not in consumed]

    def _side_columns(self, record: SinkRecord, side: str, wanted: Sequence[str],
                      primary: bool) -> tuple[list[Column], list[Getter]]:
        """Columns read from the key or the value: struct fields, map entries, or a primitive key."""
        schema = record.key_schema if side == "key" else record.value_schema
        data = record.key if side == "key" else record.value
        label = record_label(record)
        if data is None and schema is None:
            raise ConnectException(f"Record {label}: pk.mode=record_key needs a key, and this record has none")
        if schema is None:
            if not isinstance(data, dict):
                if side == "key":
                    if len(wanted) != 1:
                        raise ConnectException(
                            f"Record {label}: a primitive key needs pk.fields to name its one column "
                            f"(got pk.fields={','.join(wanted)!r})")
                    return [Column(wanted[0], _inferred_schema(data, wanted[0]), primary)], [_WholeKeyGetter(None, None)]
                raise ConnectException(
                    f"Record {label}: the value is a schemaless {type(data).__name__}; this sink writes structs "
                    "(JSON with schemas: value.converter.schemas.enable=true) or maps with an explicit column "
                    "list in fields.whitelist")
            names = list(wanted)
            if not names:
                key_name = "pk.fields" if primary else "fields.whitelist"
                raise ConnectException(
                    f"Record {label}: the {side} is schemaless (no Connect schema), so this sink cannot know its "
                    f"columns: use a converter with schemas (value.converter.schemas.enable=true) or list the "
                    f"columns in {key_name}")
            return ([Column(n, _inferred_schema(data.get(n), n), primary) for n in names],
                    [_MapGetter(side, n) for n in names])
        if schema.type is not Type.STRUCT:
            if side == "key":
                if len(wanted) != 1:
                    raise ConnectException(
                        f"Record {label}: a primitive key ({schema.type.name}) needs pk.fields to name its one "
                        f"column (got pk.fields={','.join(wanted)!r})")
                return [Column(wanted[0], schema, primary)], [_WholeKeyGetter(schema, self._convert_for(schema))]
            raise ConnectException(
                f"Record {label}: the value is a {schema.type.name}, not a struct; this sink writes a struct's "
                "fields as columns (HoistField$Value wraps a primitive value in a struct)")
        fields = schema.fields
        if wanted:
            by_name = {f.name: f for f in fields}
            missing = [n for n in wanted if n not in by_name]
            if missing and primary:
                raise ConnectException(f"Record {label}: pk.fields {missing} are not fields of the {side} "
                                       f"(fields: {[f.name for f in fields]})")
            fields = tuple(by_name[n] for n in wanted if n in by_name)
        columns, getters = [], []
        for f in fields:
            # (a VariableScaleDecimal is a struct that is a number)
            if f.schema.type in (Type.STRUCT, Type.MAP) and semantic_type(f.schema) is None:
                kind = "a struct" if f.schema.type is Type.STRUCT else "a map"
                raise ConnectException(f"Record {label}: {side} field {f.name!r} is {kind}, which a column cannot "
                                       f"hold: {_FLATTEN} to write its fields as columns")
            columns.append(Column(f.name, f.schema, primary))
            getters.append(_FieldGetter(side, f, self._convert_for(f.schema)))
        return columns, getters


def table_batches(records: Sequence[SinkRecord], config: JdbcSinkConfig, layouts: LayoutCache) -> list[TableBatch]:
    """Group ``records`` (offset order per partition) into one :class:`TableBatch` per table."""
    per_table: dict[TableId, list[SinkRecord]] = {}
    for record in records:
        if record.value is None and not config.delete_enabled:
            continue  # a tombstone without delete.enabled: skipped, its offset covered by the batch
        per_table.setdefault(table_for_topic(config.table_name_format, record.topic), []).append(record)
    return [_table_batch(table, recs, config, layouts) for table, recs in sorted(per_table.items())]


def _with_layouts(records: list[SinkRecord], layouts: LayoutCache) -> list[tuple[SinkRecord, RecordLayout]]:
    """Each record with its layout. A record with the same key and value schemas as the record before it,
    both set, takes that record's layout without a lookup (a schemaless one is looked up by its shape)."""
    entries: list[tuple[SinkRecord, RecordLayout]] = []
    last_key_schema = last_value_schema = last_layout = None
    for record in records:
        key_schema, value_schema = record.key_schema, record.value_schema
        if last_layout is not None and key_schema is last_key_schema and value_schema is last_value_schema:
            entries.append((record, last_layout))
            continue
        layout = layouts.layout(record)
        entries.append((record, layout))
        if key_schema is not None and value_schema is not None:
            last_key_schema, last_value_schema, last_layout = key_schema, value_schema, layout
        else:
            last_layout = None
    return entries


def _table_batch(table: TableId, records: list[SinkRecord], config: JdbcSinkConfig,
                 layouts: LayoutCache) -> TableBatch:
    last_by_key = config.insert_mode in ("upsert", "update")
    keyed = config.pk_mode != "none" and (last_by_key or config.delete_enabled)
    entries = _with_layouts(records, layouts)
    deleted: dict[tuple, SinkRecord] = {}
    kept = entries
    if keyed:
        rules = config.change_rules
        keep, deleted_at = surviving([layout.key(record) for record, layout in entries],
                                     [record_deletes(rules, record) for record, _ in entries], last_by_key)
        deleted = {key: entries[i][0] for key, i in deleted_at.items()}
        kept = [entry for entry, kept in zip(entries, keep) if kept]
    distinct = {id(layout): layout for _, layout in kept}  # in the order first seen
    columns: list[Column] = []
    index: dict[str, int] = {}
    for layout in distinct.values():
        for column in layout.columns:
            if column.name not in index:
                index[column.name] = len(columns)
                columns.append(column)
    batch = TableBatch(table, columns, typed=all(layout.typed for layout in distinct.values()))
    if len(distinct) == 1:  # one layout: it has every column, in order
        read = next(iter(distinct.values())).row
        batch.rows = [read(record) for record, _ in kept]
        batch.row_records = [record for record, _ in kept]
        kept = []
    placements: dict[int, list[int] | None] = {}  # per layout: where its values go when it lacks columns
    for record, layout in kept:
        place = placements.get(id(layout), False)
        if place is False:
            same = [c.name for c in layout.columns] == [c.name for c in columns]
            place = placements[id(layout)] = None if same else [index[c.name] for c in layout.columns]
        row = layout.row(record)
        if place is not None:
            full: list[Any] = [None] * len(columns)
            for position, value in zip(place, row):
                full[position] = value
            row = tuple(full)
        batch.rows.append(row)
        batch.row_records.append(record)
    if deleted:
        if not batch.columns:
            key_layout = layouts.layout(next(iter(deleted.values())))
            batch.columns = [c for c in key_layout.columns if c.primary]
        for key, record in deleted.items():
            batch.delete_keys.append(key)
            batch.delete_records.append(record)
    return batch
