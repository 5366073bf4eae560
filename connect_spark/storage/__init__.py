"""The worker's own state in Kafka topics or local files: committed offsets (status and configs later).

Each kind of state sits behind one small interface with a Kafka-topic implementation, for clusters, and
a file implementation, for a standalone worker:

* offsets: :class:`~connect_spark.storage.offsets.OffsetStore`,
  :class:`~connect_spark.storage.kafka_offsets.KafkaOffsetStore`,
  :class:`~connect_spark.storage.file_offsets.FileOffsetStore`.

Every worker process writes offsets through one :class:`~connect_spark.storage.owner.OffsetOwner`
(:func:`~connect_spark.storage.owner.build_offset_store`), which claims a connector's offsets before
writing them; on Kafka a claim is a transactional producer the broker fences
(:mod:`connect_spark.storage.transactional_offsets`).
:mod:`connect_spark.kafka` holds what the Kafka-backed stores share;
:class:`~connect_spark.storage.committer.OffsetCommitter` writes a running connector's commits to its
store in order, on a background thread. Implementations are
imported on first use, so that a file-only worker never imports a Kafka client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connect_spark.storage.offsets import OffsetStore, OffsetStoreError

if TYPE_CHECKING:
    from connect_spark.storage.file_offsets import FileOffsetStore
    from connect_spark.storage.kafka_offsets import KafkaOffsetStore

__all__ = ["OffsetStore", "OffsetStoreError", "KafkaOffsetStore", "FileOffsetStore"]


def __getattr__(name: str) -> Any:
    # Imported on first use (PEP 562), so a file-only worker never imports a Kafka client.
    if name == "KafkaOffsetStore":
        from connect_spark.storage.kafka_offsets import KafkaOffsetStore

        return KafkaOffsetStore
    if name == "FileOffsetStore":
        from connect_spark.storage.file_offsets import FileOffsetStore

        return FileOffsetStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
