"""The ``offsets`` of a ``POST /connectors`` body (KIP-995): the sink offsets a new connector starts at.

Called by the REST route that creates connectors and by the standalone CLI's ``--offsets`` file reader.
"""

from __future__ import annotations

from typing import Any

from connect_spark.api.records import TopicPartition
from connect_spark.herder.errors import BadRequestError
from connect_spark.rest.entities import parse_connector_offsets

__all__ = ["initial_offsets"]


def initial_offsets(raw: Any, key: str = "offsets") -> dict[TopicPartition, int]:
    """``[{"partition": {"kafka_topic", "kafka_partition"}, "offset": {"kafka_offset"}}, ...]`` as offsets.

    Raises:
        BadRequestError: the list is malformed or an offset is null (a new connector has nothing to reset).
    """
    if raw is None:
        return {}
    try:
        parsed = parse_connector_offsets({"offsets": raw})
    except ValueError as e:
        raise BadRequestError(f"Invalid {key}: {e}") from None
    missing = sorted(f"{tp.topic}-{tp.partition}" for tp, off in parsed.items() if off is None)
    if missing:
        raise BadRequestError(f"Invalid {key}: a new connector's offsets cannot be null ({', '.join(missing)})")
    return {tp: off for tp, off in parsed.items() if off is not None}
