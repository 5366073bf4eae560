"""Sink connector offsets in one local JSON file, for a standalone worker that keeps no state in Kafka.

Selected by ``offset.storage.file.filename``. Kafka Connect's standalone worker keeps its offsets file in
Java serialization, which Python cannot share; this file holds the same key and value shapes as the
``connect-offsets`` topic instead, as a JSON list with one entry per line::

    [
    {"key":["my-sink",{"kafka_topic":"orders","kafka_partition":0}],"value":{"kafka_offset":4711}},
    {"key":["my-sink",{"kafka_topic":"orders","kafka_partition":1}],"value":{"kafka_offset":42}}
    ]

The file is a snapshot, not a log: a reset removes the entry. On reading, an entry whose ``value`` is
``null`` counts as a reset, later entries win over earlier ones for the same key, offsets given as
strings (``"10"``) are accepted, and entries of other shapes are kept untouched but skipped with a WARN.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Mapping

from connect_spark.api.records import TopicPartition, offsets_text
from connect_spark.storage.offsets import (
    OffsetStore,
    OffsetStoreError,
    UnexpectedOffsetRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    normalize_offsets,
)

__all__ = ["FileOffsetStore"]

log = logging.getLogger(__name__)

_TEMP_SUFFIX = ".tmp"

_Contents = tuple[dict[str, dict[TopicPartition, int]], list[Any]]


class FileOffsetStore(OffsetStore):
    """Committed sink offsets in one JSON file, replaced atomically on every write.

    A write reads the file, applies the changes and writes the whole file to a temporary file in the
    same folder, ``fsync``-s it, renames it over the old one (``os.replace``) and ``fsync``-s the folder.
    A process killed at any point leaves either the old or the new file, never a mixture; a temporary
    file left behind by a kill is ignored by :meth:`read` and deleted by the next :meth:`start`.

    One process may write the file at a time (the standalone worker); threads of that process are
    serialized. :meth:`read` reads the file each time, so it sees what other store instances of the
    same process wrote.

    Args:
        path: the offsets file (``offset.storage.file.filename``); its folder is created if needed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the folder, delete temporary files a killed writer left behind, check the file parses.

        Raises:
            OffsetStoreError: the folder cannot be created or the file is not a JSON list.
        """
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise OffsetStoreError(f"Cannot create the folder of the offsets file {self.path}: {e}") from e
            for leftover in self.path.parent.glob(f".{self.path.name}.*{_TEMP_SUFFIX}"):
                log.info("Deleting %s, left behind by an interrupted write of the offsets file", leftover)
                try:
                    leftover.unlink()
                except OSError as e:
                    log.warning("Cannot delete %s: %s", leftover, e)
            self._load()
            self._started = True
            log.info("Offsets of sink connectors are kept in %s", self.path)

    def stop(self) -> None:
        """Nothing to release; later reads and writes are refused."""
        self._started = False

    # -- reading and writing ----------------------------------------------------------------------

    def read(self, connector: str) -> dict[TopicPartition, int]:
        """The committed offsets of ``connector`` as the file holds them now (see :class:`OffsetStore`)."""
        self._check_started()
        with self._lock:
            offsets, _ = self._load()
        return dict(sorted(offsets.get(connector, {}).items()))

    def write(
        self,
        connector: str,
        offsets: Mapping[TopicPartition, int | None],
        group_id: str | None = None,
    ) -> None:
        """Apply ``offsets`` to the file and replace it atomically (see :class:`OffsetStore`).

        ``group_id`` is accepted for the interface and ignored: a file store has no consumer group.
        """
        self._check_started()
        changes = normalize_offsets(connector, offsets)
        if not changes:
            return
        with self._lock:
            known, foreign = self._load()
            current = known.setdefault(connector, {})
            for tp, offset in changes.items():
                if offset is None:
                    current.pop(tp, None)
                else:
                    current[tp] = offset
            if not current:
                del known[connector]
            self._replace(self._render(known, foreign))
        log.debug("Committed offsets of %s to %s: %s", connector, self.path, offsets_text(changes))

    # -- internals ---------------------------------------------------------------------------------

    def _check_started(self) -> None:
        if not self._started:
            raise OffsetStoreError(f"The offset store {self.path} is not started")

    def _load(self) -> _Contents:
        """The file's offsets by connector, and the entries it could not interpret (kept as they are)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, []
        except OSError as e:
            raise OffsetStoreError(f"Cannot read the offsets file {self.path}: {e}") from e
        if not text.strip():
            return {}, []
        try:
            entries = json.loads(text)
        except ValueError as e:
            raise OffsetStoreError(f"The offsets file {self.path} is not valid JSON ({e}); "
                                   "fix or remove it (removing it forgets every committed offset)") from None
        if not isinstance(entries, list):
            raise OffsetStoreError(f"The offsets file {self.path} must hold a JSON list of "
                                   f"{{\"key\": ..., \"value\": ...}} entries, not a {type(entries).__name__}")
        known: dict[str, dict[TopicPartition, int]] = {}
        foreign: list[Any] = []
        for index, entry in enumerate(entries):
            try:
                if not isinstance(entry, dict) or "key" not in entry:
                    raise UnexpectedOffsetRecord("entry is not an object with a 'key'")
                connector, tp = decode_key(entry["key"])
                offset = decode_value(entry.get("value"))
            except UnexpectedOffsetRecord as e:
                log.warning("Skipping entry %d of the offsets file %s: %s", index, self.path, e)
                foreign.append(entry)
                continue
            if offset is None:
                known.get(connector, {}).pop(tp, None)
            else:
                known.setdefault(connector, {})[tp] = offset
        return known, foreign

    @staticmethod
    def _render(known: Mapping[str, Mapping[TopicPartition, int]], foreign: list[Any]) -> str:
        lines = []
        for connector in sorted(known):
            for tp, offset in sorted(known[connector].items()):
                key = encode_key(connector, tp).decode("utf-8")
                value = encode_value(offset)
                assert value is not None
                lines.append(f'{{"key":{key},"value":{value.decode("utf-8")}}}')
        lines.extend(json.dumps(entry, separators=(",", ":"), ensure_ascii=False) for entry in foreign)
        return "[\n" + ",\n".join(lines) + ("\n" if lines else "") + "]\n"

    def _replace(self, text: str) -> None:
        """Write ``text`` to a temporary file, fsync it, rename it over the file, fsync the folder."""
        folder = self.path.parent
        fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=_TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except OSError as e:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise OffsetStoreError(f"Cannot write the offsets file {self.path}: {e}") from e
        _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable; not possible on every platform (Windows), where it is skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
