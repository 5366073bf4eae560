"""Built-in sink connectors, resolved lazily by alias through ``connect_spark.plugins``.

* ``delta`` — ``DeltaSink``: exactly-once Delta Lake tables (a ``DataFrameSinkTask``).
* ``file`` — ``FileStreamSink``: Kafka's FileStreamSinkConnector, line for line.
* ``files`` — ``FilesSink``: Parquet or JSON-lines files, exactly once by offset-named files.
"""
