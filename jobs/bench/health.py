"""Output health of an arm's run: every produced record is there exactly once.

Called by :mod:`jobs.bench.runner` after an arm has drained (never while it is measured). Records are
identified by their unique ``id`` field (:data:`jobs.bench.records.ID_FIELD`): ``rows`` is what the
output holds, ``duplicates`` the rows beyond the first per id, ``missing`` the expected ids not found.
Delta tables are read from their ``_delta_log`` (live files = added minus removed) with pyarrow, so the
check needs no Spark; line files (FileStreamSink, the per-record task) are scanned with a regex; a
PostgreSQL table (the JDBC sink) is read with psycopg.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable

import numpy as np

from jobs.bench.records import ID_FIELD

__all__ = ["Health", "delta_health", "lines_health", "table_health", "offsets_health", "JSON_ID", "CSV_ID"]

#: the id of a JSON line (FileStreamSink writes the record value, our JSON)
JSON_ID = re.compile(rb'"' + ID_FIELD.encode() + rb'":(\d+)')
#: the id of a CSV line whose first column is the id (the per-record task's output)
CSV_ID = re.compile(rb"^(\d+),", re.MULTILINE)


@dataclass
class Health:
    expected: int
    rows: int
    duplicates: int
    missing: int
    files: int
    table_commits: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rows == self.expected and self.duplicates == 0 and self.missing == 0

    def as_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def _count(ids: np.ndarray, expected_ids: range, files: int, table_commits: int | None = None,
           notes: Iterable[str] = (), absent_ids: Iterable[int] = ()) -> Health:
    """``absent_ids``: ids of ``expected_ids`` that must not be in the output (records sent to the dead
    letter queue); one found counts as a duplicate (it is in two places)."""
    unique = np.unique(ids)
    absent = np.unique(np.fromiter(absent_ids, dtype=np.int64))
    lo, hi = expected_ids.start, expected_ids.stop
    in_range = unique[(unique >= lo) & (unique < hi)]
    misplaced = int(np.isin(in_range, absent).sum())
    expected = len(expected_ids) - absent.size
    notes = list(notes) + ([f"{misplaced} dead-lettered ids in the output"] if misplaced else [])
    return Health(expected=expected, rows=int(ids.size), duplicates=int(ids.size - unique.size) + misplaced,
                  missing=expected - (in_range.size - misplaced), files=files, table_commits=table_commits,
                  notes=notes)


def lines_health(folder: str | Path, expected_ids: range, pattern: re.Pattern[bytes] = JSON_ID) -> Health:
    """Health of line files under ``folder`` (recursively), one record per line."""
    files = [p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith(".")]
    chunks = []
    notes = []
    for path in files:
        data = path.read_bytes()
        ids = [int(m) for m in pattern.findall(data)]
        lines = data.count(b"\n")
        if len(ids) != lines:
            notes.append(f"{path.name}: {lines} lines but {len(ids)} ids")
        chunks.append(np.asarray(ids, dtype=np.int64))
    ids = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.int64)
    return _count(ids, expected_ids, len(files), notes=notes)


def delta_live_files(table: str | Path) -> tuple[list[str], int]:
    """The data files of a Delta table's latest version, and how many commits its log holds."""
    log_dir = Path(table) / "_delta_log"
    versions = sorted(log_dir.glob("[0-9]*.json"))
    live: dict[str, None] = {}
    for version in versions:
        for line in version.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = None
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return list(live), len(versions)


def delta_health(table: str | Path, expected_ids: range, absent_ids: Iterable[int] = ()) -> Health:
    """Health of a Delta table whose rows carry the ``id`` column (``absent_ids``: see :func:`_count`)."""
    import pyarrow.parquet as pq
    from urllib.parse import unquote

    if not (Path(table) / "_delta_log").is_dir():
        return _count(np.empty(0, dtype=np.int64), expected_ids, 0, 0, ["no Delta table"], absent_ids)
    paths, commits = delta_live_files(table)
    chunks = []
    notes = []
    for rel in paths:
        parquet = pq.ParquetFile(Path(table) / unquote(rel))
        if ID_FIELD not in parquet.schema_arrow.names:
            notes.append(f"no '{ID_FIELD}' column in {rel}: counted rows only")
            # Placeholder ids below any real one, all distinct: rows are counted, ids show as missing.
            start = -1 - sum(c.size for c in chunks) - parquet.metadata.num_rows
            chunks.append(np.arange(start, start + parquet.metadata.num_rows, dtype=np.int64))
            continue
        chunks.append(parquet.read(columns=[ID_FIELD]).column(0).to_numpy(zero_copy_only=False).astype(np.int64))
    ids = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.int64)
    return _count(ids, expected_ids, len(paths), commits, notes=sorted(set(notes))[:3], absent_ids=absent_ids)


def with_dead_letters(found: Health, bootstrap_servers: str, topic: str, expected_ids: Iterable[int]) -> Health:
    """``found`` (the table's health) with the dead letter queue ``topic`` read as well: each id of
    ``expected_ids`` must be there exactly once (a letter twice counts as a duplicate, one absent as missing)."""
    from connect_spark.testing.kafka import read_topic

    letters = [int(m.group(1)) for r in read_topic(bootstrap_servers, topic) if (m := JSON_ID.search(r.value or b""))]
    expected = set(expected_ids)
    twice = len(letters) - len(set(letters))
    absent = len(expected - set(letters))
    note = f"dead letters {len(letters)} of {len(expected)}"
    return replace(found, duplicates=found.duplicates + twice, missing=found.missing + absent,
                   notes=[*found.notes, note])


def table_health(conninfo: str, table: str, expected_ids: range) -> Health:
    """Health of a PostgreSQL table whose rows carry the ``id`` column; ``conninfo`` is a libpq connection
    string (:meth:`connect_spark.testing.postgres.LocalPostgres.conninfo`). ``files`` is 1 when the table exists."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (f'"{table}"',)).fetchone()[0] is None:
            return _count(np.empty(0, dtype=np.int64), expected_ids, 0, notes=[f"no table {table}"])
        rows = conn.execute(f'SELECT "{ID_FIELD}" FROM "{table}"').fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    return _count(ids, expected_ids, 1)


def offsets_health(committed: dict[int, int], expected_ids: range) -> Health:
    """Health of an arm that writes nothing (the ceiling, arm s): ``rows`` are the records its committed
    offsets cover (the pre-filled topic starts at offset 0 in every partition)."""
    rows = sum(committed.values())
    return Health(expected=len(expected_ids), rows=rows, duplicates=0, missing=max(len(expected_ids) - rows, 0),
                  files=0, notes=["no output: rows are the records the committed offsets cover"])
