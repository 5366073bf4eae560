"""JDBC sink (Confluent's ``JdbcSinkConnector`` keys): exactly-once bulk writes into PostgreSQL.

Modules: ``config`` (the keys), ``dialect`` (what a database must offer) and ``postgres`` (PostgreSQL),
``target`` (which table), ``rows`` (records → rows), ``writer`` (one transaction), ``task``, ``connector``.
"""

from connect_spark.connectors.jdbc.connector import JdbcSinkConnector
from connect_spark.connectors.jdbc.task import JdbcSinkTask

__all__ = ["JdbcSinkConnector", "JdbcSinkTask"]
