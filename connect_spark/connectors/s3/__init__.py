"""S3 sink: Confluent's S3 sink connector's keys, object names and contents, exactly once without renames.

Modules: ``config`` (the keys), ``partitioner`` (folders), ``avro_schema`` (Connect → Avro), ``formats``
(object bytes), ``store`` (the bucket, through boto3), ``task`` (rotation, offsets), ``connector``.
"""

from connect_spark.connectors.s3.connector import S3SinkConnector
from connect_spark.connectors.s3.task import S3SinkTask

__all__ = ["S3SinkConnector", "S3SinkTask"]
