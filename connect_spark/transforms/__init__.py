"""The built-in single message transforms and predicates: Kafka Connect's, with the same names and keys.

Each ``X$Key`` / ``X$Value`` pair of Kafka is a ``XKey`` / ``XValue`` class here (``Cast$Value`` is
:class:`connect_spark.transforms.cast.CastValue`); every built-in class carries Kafka's class name in
``kafka_class_name``. :mod:`connect_spark.transforms.chain` applies a configured list of them.

Modules are imported on demand by :mod:`connect_spark.plugins`; this package imports none of them.
"""
