"""connect_spark's plugin contract: the Kafka Connect sink API in Python.

Connector authors import from here only. Nothing in this package imports pyspark.
"""

from connect_spark.api.bulk import ArrowSinkTask, DataFrameSinkTask
from connect_spark.api.connector import ConnectorContext, SinkConnector
from connect_spark.api.converters import Converter, HeaderConverter, SchemaAndValue
from connect_spark.api.errors import (
    ConfigException,
    ConnectException,
    DataException,
    IllegalWorkerStateException,
    NonRestartableException,
    RetriableException,
    UnavailableException,
)
from connect_spark.api.records import Header, Headers, SinkRecord, TimestampType, TopicPartition
from connect_spark.api.replay import DeadLetterBatch, ReplayAwareTask
from connect_spark.api.task import ErrantRecordReporter, SinkTask, SinkTaskContext
from connect_spark.api.transforms import Predicate, Transformation

__all__ = [
    "ArrowSinkTask",
    "ConfigException",
    "ConnectException",
    "ConnectorContext",
    "Converter",
    "DataException",
    "DataFrameSinkTask",
    "DeadLetterBatch",
    "ErrantRecordReporter",
    "Header",
    "HeaderConverter",
    "Headers",
    "IllegalWorkerStateException",
    "NonRestartableException",
    "Predicate",
    "ReplayAwareTask",
    "RetriableException",
    "UnavailableException",
    "SchemaAndValue",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "TimestampType",
    "Transformation",
    "TopicPartition",
]
