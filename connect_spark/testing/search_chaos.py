"""The search sink's crash test, shared by ``tests/integration/test_search_sink.py`` (small) and
``jobs/chaos_search.py`` (the full 100,000 records): keyed records flow while the CLI running the connector is
killed with SIGKILL again and again; then one clean drain, and the index must hold exactly each key's newest
record, at the version of that record's offset.

Called from the test process (or the job's): it starts each CLI run as a child process and kills it.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from connect_spark.testing.harness import start_cli
from connect_spark.testing.kafka import produce

__all__ = ["keyed_records", "start_feeding", "kill_runs", "expected_documents", "indexed_documents"]


def keyed_records(count: int, keys: int, partitions: int) -> list[tuple]:
    """``(partition, key, value, headers)`` for ``count`` records over ``keys`` keys, each key in one partition;
    the value's ``seq`` is the record's position."""
    return [((i % keys) % partitions, str(i % keys).encode(),
             json.dumps({"id": i % keys, "seq": i, "when": "2024-01-02"}).encode(), []) for i in range(count)]


def start_feeding(bootstrap_servers: str, topic: str, records: list[tuple]) -> threading.Thread:
    """Produce ``records`` from a background thread (the records flow while the runs are killed)."""
    feeding = threading.Thread(target=produce, args=(bootstrap_servers, topic, iter(records)),
                               kwargs={"linger_ms": 50}, daemon=True)
    feeding.start()
    return feeding


def newest_indexed(client: Any, index: str) -> int:
    """The highest ``seq`` indexed so far, -1 before the first document."""
    try:
        client.indices.refresh(index=index)
        found = client.search(index=index, body={"size": 0, "aggs": {"top": {"max": {"field": "seq"}}}})
        return int(found["aggregations"]["top"]["value"] or -1)
    except Exception:  # no index yet
        return -1


def kill_runs(worker: Mapping[str, str], connector: Mapping[str, str], work: Path, client: Any, index: str,
              kills: int, last_seq: int, seed: int = 34) -> list[str]:
    """Start the CLI ``kills`` times; kill each run with SIGKILL at a random moment after it indexed something
    new (or at once when everything is indexed). Returns one line per run for the caller's log.

    Raises:
        AssertionError: a run died by itself or indexed nothing in 300 s.
    """
    rng = random.Random(seed)
    lines = []
    for run in range(kills):
        log = work / f"cli-{run}.log"
        proc = start_cli(worker, connector, work, log_name=log.name)
        try:
            before, deadline = newest_indexed(client, index), time.monotonic() + 300
            while newest_indexed(client, index) <= before < last_seq and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
                time.sleep(0.3)
            assert newest_indexed(client, index) > before or before == last_seq, f"run {run} wrote nothing in 300 s"
            time.sleep(rng.uniform(0.0, 1.5))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        lines.append(f"kill {run}: newest indexed seq {newest_indexed(client, index)}")
    return lines


def expected_documents(records: list[tuple], partitions: int) -> dict[str, tuple[int, int]]:
    """Per key: the ``seq`` of its newest record and that record's offset (its external version)."""
    expected, next_offset = {}, [0] * partitions
    for partition, key, value, _ in records:
        expected[key.decode()] = (json.loads(value)["seq"], next_offset[partition])
        next_offset[partition] += 1
    return expected


def indexed_documents(client: Any, index: str) -> dict[str, tuple[int, int]]:
    """Per document id: its ``seq`` and its version, read back with a scroll."""
    from opensearchpy import helpers

    client.indices.refresh(index=index)
    return {hit["_id"]: (hit["_source"]["seq"], hit["_version"])
            for hit in helpers.scan(client, index=index, query={"query": {"match_all": {}}, "version": True},
                                    size=5000)}
