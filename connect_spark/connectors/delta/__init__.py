"""Delta Lake sink: exactly-once appends or upserts of Kafka records into Delta tables.

Modules: ``config`` (the keys), ``target`` (which table), ``rows`` (record frame → table rows),
``ledger`` (Kafka offsets stored in Delta commits), ``writer`` (one commit), ``task``, ``connector``.
"""

from connect_spark.connectors.delta.connector import DeltaSinkConnector
from connect_spark.connectors.delta.task import DeltaSinkTask

__all__ = ["DeltaSinkConnector", "DeltaSinkTask"]
