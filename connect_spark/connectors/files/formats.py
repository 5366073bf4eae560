"""File formats of the files sink: what a record frame's rows become in a file.

Both formats store the record value: Parquet as columns (a struct value's fields, or one ``value``
column for a primitive value), JSON lines as one JSON document per line. Called by the task when it
publishes a file.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["FORMATS", "value_table", "write_file"]

#: files.format value → file extension.
FORMATS = {"parquet": "parquet", "json": "jsonl"}


def value_table(records: pa.Table) -> pa.Table:
    """The values of ``records`` (record-frame columns) as the columns stored in a Parquet file."""
    value = records.column("value").combine_chunks()
    if pa.types.is_struct(value.type):
        fields = value.flatten()
        return pa.Table.from_arrays(fields, names=[f.name for f in value.type])
    return pa.Table.from_arrays([value], names=["value"])


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def write_file(fs: pafs.FileSystem, path: str, records: pa.Table, file_format: str) -> None:
    """Write ``records`` to ``path`` in ``file_format`` (a key of :data:`FORMATS`)."""
    if file_format == "parquet":
        pq.write_table(value_table(records), path, filesystem=fs)
        return
    lines = [json.dumps(v, default=_json_default, separators=(",", ":"), ensure_ascii=False)
             for v in records.column("value").to_pylist()]
    with fs.open_output_stream(path) as out:
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
