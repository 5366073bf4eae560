"""Which table a record goes to: ``table.name.format`` with ``${topic}`` replaced by the record's topic.

Called by ``rows.py`` for each record's topic (after transformations, so a ``RegexRouter`` chooses the
table). The format is split into ``[schema.]table`` before the topic is put in, so a topic with dots
stays one table name.
"""

from __future__ import annotations

from functools import lru_cache

from connect_spark.connectors.jdbc.config import TOPIC_PLACEHOLDER
from connect_spark.connectors.jdbc.dialect import TableId

__all__ = ["table_for_topic"]


@lru_cache(maxsize=1024)
def table_for_topic(table_name_format: str, topic: str) -> TableId:
    """The table of ``topic``'s records under ``table_name_format``."""
    schema, dot, name = table_name_format.rpartition(".")
    return TableId(schema.replace(TOPIC_PLACEHOLDER, topic) if dot else None,
                   name.replace(TOPIC_PLACEHOLDER, topic))
