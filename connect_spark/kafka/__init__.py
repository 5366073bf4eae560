"""The Kafka client layer every part of the worker shares, on kafka-python.

* :mod:`~connect_spark.kafka.clients`: Kafka-style client settings (``security.protocol``, ``sasl.*``,
  ``ssl.*``) as kafka-python keyword arguments, and closing clients quietly.
* :mod:`~connect_spark.kafka.tls` (reading stores with :mod:`~connect_spark.kafka.tls_stores`) and
  :mod:`~connect_spark.kafka.oauth`: the ``ssl.*`` keys as one SSL context, and OAUTHBEARER tokens.
* :mod:`~connect_spark.kafka.authentication`: a fast, clear failure when the cluster refuses the credentials.
* :mod:`~connect_spark.kafka.topics`: creating a storage topic when missing, checking an existing one.
* :mod:`~connect_spark.kafka.tail_reader` and :mod:`~connect_spark.kafka.compacted_log`: reading a topic to its
  end, and the compacted-topic log the offset, status and config stores are built on.
* :mod:`~connect_spark.kafka.errors`: the errors all of these raise.

Used by the stores (:mod:`connect_spark.storage`, :mod:`connect_spark.status`), the runtime's consumers and the
dead letter queue's producer. Nothing here makes a client at import time.
"""
