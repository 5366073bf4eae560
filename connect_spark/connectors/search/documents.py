"""Record frames → bulk actions: document ids, external versions, deletes, as Confluent's sink makes them.

Called by :class:`~connect_spark.connectors.search.task.SearchSinkTask` (in an executor's Python worker, or
on the driver) once per ``put_arrow``. Values are read column by column from the frame's Arrow data: no
``SinkRecord`` is built on this path (the task builds one only for a row that goes to the errant record
reporter).

* Ids: ``topic+partition+offset`` when the key is ignored (``key.ignore``, ``topic.key.ignore``); otherwise the
  record key, which must be a string or an integer.
* Versions: keyed documents carry ``version_type=external`` with the record's offset (or the integer in the
  ``external.version.header`` header), so the cluster refuses an older record over a newer document; upserts
  carry none (the cluster cannot version partial updates).
* Tombstones: ignored, deleted (a versioned delete of the id), or invalid, per ``behavior.on.null.values``.
* At most one action per document id: within a frame only a document's newest record is sent. Parallel bulk
  requests therefore never race on one document.

Values become JSON as Kafka's JsonConverter writes them without schemas (what Confluent's sink sends):
Timestamp → epoch milliseconds, Date → days since the epoch, Time → milliseconds of the day, bytes →
base64; Decimal → a JSON number; maps per ``compact.map.entries``. Fields of schemaless values (whose
struct type was inferred over the batch) that the record did not carry are left out, not written as null.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import pyarrow.types as pt

from connect_spark.connectors.search.config import SearchSinkConfig

__all__ = ["ActionBatch", "build_actions", "json_reader"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)


@dataclass
class ActionBatch:
    """The bulk actions of one frame.

    Attributes:
        actions: what the client's bulk helper sends, in frame order (per document id, only the newest).
        rows: per action, the frame row it came from.
        invalid: ``(row, reason)`` for rows that cannot become an action (a null or structured key as id, a
            tombstone under ``behavior.on.null.values=fail``, a bad version header).
        skipped: rows deliberately not sent (tombstones ignored, records superseded in the same frame).
    """

    actions: list[dict[str, Any]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    invalid: list[tuple[int, str]] = field(default_factory=list)
    skipped: int = 0


def json_reader(arrow_type: pa.DataType, compact_maps: bool, drop_nulls: bool) -> Callable[[Any], Any] | None:
    """A function turning one ``to_pylist`` value of ``arrow_type`` into its JSON form, or ``None`` when the
    value is already in that form (no timestamps, dates, bytes, decimals, maps, or schemaless structs)."""
    if pt.is_struct(arrow_type):
        fields = [(arrow_type.field(i).name, json_reader(arrow_type.field(i).type, compact_maps, drop_nulls))
                  for i in range(arrow_type.num_fields)]
        if not drop_nulls and all(reader is None for _, reader in fields):
            return None

        def read_struct(value: dict[str, Any]) -> dict[str, Any]:
            out = {}
            for name, reader in fields:
                v = value.get(name)
                if v is None:
                    if not drop_nulls:
                        out[name] = None
                    continue
                out[name] = v if reader is None else reader(v)
            return out
        return read_struct
    if pt.is_map(arrow_type):
        read_key = json_reader(arrow_type.key_type, compact_maps, drop_nulls)
        read_item = json_reader(arrow_type.item_type, compact_maps, drop_nulls)
        compact = compact_maps and (pt.is_string(arrow_type.key_type) or pt.is_large_string(arrow_type.key_type))

        def item(v: Any) -> Any:
            return v if v is None or read_item is None else read_item(v)

        if compact:
            return lambda pairs: {k: item(v) for k, v in pairs}
        return lambda pairs: [{"key": k if k is None or read_key is None else read_key(k), "value": item(v)}
                              for k, v in pairs]
    if pt.is_list(arrow_type) or pt.is_large_list(arrow_type):
        read_element = json_reader(arrow_type.value_type, compact_maps, drop_nulls)
        if read_element is None:
            return None
        return lambda values: [v if v is None else read_element(v) for v in values]
    if pt.is_timestamp(arrow_type):
        return _epoch_millis
    if pt.is_date(arrow_type):
        return lambda d: (d - _EPOCH_DATE).days
    if pt.is_time(arrow_type):
        return lambda t: ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    if pt.is_binary(arrow_type) or pt.is_large_binary(arrow_type) or pt.is_fixed_size_binary(arrow_type):
        return lambda b: base64.b64encode(b).decode("ascii")
    if pt.is_decimal(arrow_type):
        return lambda d: int(d) if d == d.to_integral_value() and d.as_tuple().exponent >= 0 else float(d)
    return None


def _epoch_millis(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _document_id(key: Any) -> tuple[str | None, str | None]:
    """``(id, None)`` for a usable key, ``(None, reason)`` otherwise (Confluent's rule: strings and integers)."""
    if key is None:
        return None, "Key is used as document id and can not be null"
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        kind = "STRUCT" if isinstance(key, dict) else type(key).__name__
        if isinstance(key, (decimal.Decimal, float)):
            kind = "a number with a fraction"
        return None, f"Key is used as document id and can not be of type {kind}"
    return str(key), None


def _header_versions(headers: list[Any], name: str) -> list[tuple[int | None, str | None]]:
    """Per row: the external version read from header ``name`` (the last one wins), or why it cannot be."""
    out: list[tuple[int | None, str | None]] = []
    for row in headers:
        raw = None
        for h in row or ():
            if h["key"] == name:
                raw = h["value"]
        if raw is None:
            out.append((None, f"Header {name} (external.version.header) is missing"))
            continue
        text = bytes(raw).decode("utf-8", errors="replace").strip().strip('"')
        if not text.lstrip("-").isdigit():
            out.append((None, f"Header {name} (external.version.header) is not an integer: {text[:40]!r}"))
        else:
            out.append((int(text), None))
    return out


def build_actions(frame: pa.Table, config: SearchSinkConfig, schemaless_value: bool) -> ActionBatch:
    """The bulk actions for a record frame's rows (see the module docstring)."""
    batch = ActionBatch()
    if frame.num_rows == 0:
        return batch
    col = frame.column
    topics, partitions, offsets = col("topic").to_pylist(), col("partition").to_pylist(), col("offset").to_pylist()
    values = col("value").to_pylist()
    read_value = json_reader(frame.schema.field("value").type, config.compact_map_entries, schemaless_value)
    keyed_topics = {t for t in set(topics) if not config.ignores_key(t)}
    keys = col("key").to_pylist() if keyed_topics else None
    versions = None
    if keyed_topics and config.external_version_header:
        versions = _header_versions(col("headers").to_pylist(), config.external_version_header)
    timestamps = None
    streaming = config.data_stream_type != "none"
    if streaming:
        timestamps = col("timestamp").to_pylist()
    upsert = config.write_method == "upsert"
    by_id: dict[tuple[str, str], int] = {}  # (index, id) → position in batch.actions
    for row in range(frame.num_rows):
        topic = topics[row]
        index = config.index_name(topic)
        value = values[row]
        version = None
        if topic in keyed_topics:
            assert keys is not None
            doc_id, reason = _document_id(keys[row])
            if reason is None and not upsert and not streaming:
                version, reason = versions[row] if versions is not None else (offsets[row], None)
        else:
            doc_id, reason = f"{topic}+{partitions[row]}+{offsets[row]}", None
        if reason is not None:
            batch.invalid.append((row, reason))
            continue
        assert doc_id is not None
        if value is None:
            if config.behavior_on_null_values == "ignore":
                batch.skipped += 1
                continue
            if config.behavior_on_null_values == "fail":
                batch.invalid.append((row, "The record's value is null (behavior.on.null.values=fail)"))
                continue
            action: dict[str, Any] = {"_op_type": "delete", "_index": index, "_id": doc_id}
        else:
            document = value if read_value is None else read_value(value)
            if not isinstance(document, dict):
                batch.invalid.append((row, f"The record's value is not a struct or map but {type(value).__name__}"))
                continue
            if streaming:
                assert timestamps is not None
                document = dict(document)
                stamp = next((document[f] for f in config.data_stream_timestamp_fields if document.get(f) is not None),
                             None)
                if stamp is None and timestamps[row] is not None:
                    stamp = _epoch_millis(timestamps[row])
                document["@timestamp"] = stamp
                action = {"_op_type": "create", "_index": index, "_id": doc_id, "_source": document}
            elif upsert:
                action = {"_op_type": "update", "_index": index, "_id": doc_id, "doc": document,
                          "doc_as_upsert": True}
            else:
                action = {"_op_type": "index", "_index": index, "_id": doc_id, "_source": document}
        if version is not None:
            action["version"] = version
            action["version_type"] = "external"
        slot = (index, doc_id)
        earlier = by_id.get(slot)
        if earlier is not None:  # the newer record of the same document replaces the older one
            if version is not None and batch.actions[earlier].get("version", -1) > version:
                batch.skipped += 1  # an external version header may go backwards: the higher version stays
                continue
            batch.actions[earlier] = action
            batch.rows[earlier] = row
            batch.skipped += 1
            continue
        by_id[slot] = len(batch.actions)
        batch.actions.append(action)
        batch.rows.append(row)
    return batch
