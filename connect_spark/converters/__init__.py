"""The built-in converters: Kafka Connect's, with the same names and configuration keys.

=====================================  =====================================================
Kafka class                            connect_spark class
=====================================  =====================================================
``...storage.StringConverter``         :class:`connect_spark.converters.string.StringConverter`
``...converters.ByteArrayConverter``   :class:`connect_spark.converters.bytearray.ByteArrayConverter`
``...json.JsonConverter``              :class:`connect_spark.converters.json.JsonConverter`
``...converters.IntegerConverter``...  :mod:`connect_spark.converters.numeric`
``...storage.SimpleHeaderConverter``   :class:`connect_spark.converters.header.SimpleHeaderConverter`
=====================================  =====================================================

Modules are imported on demand by :mod:`connect_spark.plugins`; this package imports none of them.
"""
