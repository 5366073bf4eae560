"""Files sink: Parquet or JSON-lines files per Kafka partition, exactly once by offset-named files.

Modules: ``config`` (the keys), ``layout`` (names, listing, atomic publish), ``formats`` (what a file
holds), ``task`` (buffering, rotation, offsets), ``connector``.
"""

from connect_spark.connectors.files.connector import FilesSinkConnector
from connect_spark.connectors.files.task import FilesSinkTask

__all__ = ["FilesSinkConnector", "FilesSinkTask"]
