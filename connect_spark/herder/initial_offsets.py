"""Creating a connector that starts at given offsets (KIP-995's ``offsets`` of ``POST /connectors``).

Called by :meth:`connect_spark.herder.herder.Herder.create_connector` (under its request lock, before the
supervisor can see the connector) and by ``connect-spark standalone --offsets``: the offsets are written to
the offset store first, then the creation; if the creation fails they are removed again, so a connector
either exists and starts exactly there, or does not exist and left nothing behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from connect_spark.api.errors import ConfigException
from connect_spark.api.records import TopicPartition

if TYPE_CHECKING:
    from connect_spark.storage.offsets import OffsetStore

__all__ = ["write_initial_offsets", "read_offsets_file"]


def write_initial_offsets(store: "OffsetStore", name: str, offsets: Mapping[TopicPartition, int] | None,
                          create: Callable[[], None]) -> None:
    """Write ``offsets`` for ``name``, then ``create()``; undo the offsets when ``create`` raises."""
    if not offsets:
        create()
        return
    previous = store.read(name)
    store.write(name, dict(offsets))
    try:
        create()
    except BaseException:
        store.write(name, {tp: previous.get(tp) for tp in offsets})
        raise


def read_offsets_file(path: str) -> dict[TopicPartition, int]:
    """The offsets of a JSON file in the shape ``GET /connectors/{name}/offsets`` answers (KIP-875/995)."""
    from connect_spark.rest.initial_offsets import initial_offsets

    try:
        body = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ConfigException(f"cannot read a JSON offsets file: {e}", "--offsets", path) from None
    return initial_offsets(body.get("offsets") if isinstance(body, dict) else body, key="--offsets")


def seed_standalone_offsets(worker_props: object, connector_props: object, path: str) -> dict[TopicPartition, int]:
    """``connect-spark standalone --offsets FILE``: write the file's offsets for the (single) connector before it
    starts, unless the offset store already holds offsets for it (the connector then resumes where it was)."""
    from connect_spark.config.validation import validate_configs
    from connect_spark.storage.owner import build_offset_store

    worker, (connector,) = validate_configs(worker_props, [connector_props])  # type: ignore[arg-type]
    offsets = read_offsets_file(path)
    store = build_offset_store(worker)
    store.start()
    try:
        if store.read(connector.name):
            return {}
        store.write(connector.name, offsets)
        return offsets
    finally:
        store.stop()
