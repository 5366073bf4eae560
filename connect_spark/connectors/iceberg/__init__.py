"""Apache Iceberg sink: exactly-once appends or upserts of Kafka records into Iceberg tables through Spark.

Modules: ``config`` (Iceberg's sink keys), ``catalog`` (the Spark catalog), ``target`` (routing to
tables), ``rows`` (record frame → table rows), ``ledger`` (Kafka offsets in snapshot summaries),
``writer`` (one commit), ``task``, ``connector``.
"""

from connect_spark.connectors.iceberg.connector import IcebergSinkConnector
from connect_spark.connectors.iceberg.task import IcebergSinkTask

__all__ = ["IcebergSinkConnector", "IcebergSinkTask"]
